#if canImport(Glibc)
  import Glibc
#endif

/// This process as the C library sees it: who it runs as, its arguments and environment, and
/// how it ends.
package enum CurrentProcess {
  package static var isRoot: Bool { geteuid() == 0 }
  package static var userID: UInt32 { getuid() }
  /// Whom the files this process makes belong to.
  package static var effectiveUserID: UInt32 { geteuid() }
  package static var id: Int32 { getpid() }

  /// The arguments as the kernel passed them (without the program name), as bytes: they need
  /// not be UTF-8 (an interface name or an `--exec` argument may hold any byte).
  package static var arguments: [[UInt8]] {
    (1..<Int(CommandLine.argc)).map { i in
      Array(UnsafeRawBufferPointer(start: CommandLine.unsafeArgv[i], count: strlen(CommandLine.unsafeArgv[i]!)))
    }
  }

  /// One variable of the environment, as text (replacement characters where it is not UTF-8).
  package static func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
  }

  /// SIGPIPE ignored: a write to a closed pipe fails with EPIPE, which the command handles.
  package static func ignoreBrokenPipe() { signal(SIGPIPE, SIG_IGN) }

  package static func exit(_ status: Int32) -> Never { Glibc.exit(status) }

  /// Keeps `value` until the process exits instead of freeing it: a one-shot command's tables
  /// (a thousand interfaces' samples, reports and ledger entries) take longer to free one by
  /// one than the exit takes to drop them whole. Only for a process that is about to exit.
  package static func leaveToExit(_ value: Any) { _ = Unmanaged.passRetained(KeptUntilExit(value)) }

  private final class KeptUntilExit {
    let value: Any
    init(_ value: Any) { self.value = value }
  }

  /// How many files this process may hold open, once raised as far as the hard limit allows.
  /// The soft limit stays at 1024 by default only for programs that use select(2), which cannot
  /// see higher descriptors; vpnstat never does (poll), and a sysfs reader keeping 5 files per
  /// interface needs more than 1024 from ~200 interfaces on. Raised once, on first use.
  package static var openFileLimit: Int { raisedOpenFileLimit }

  /// How many more files this process may open now: `openFileLimit` less the descriptors it
  /// holds (a parent may have left it many), counted in /proc/self/fd.
  package static var openFilesLeft: Int {
    var held = 0
    if let directory = try? OpenDirectory(SystemPath("/proc/self/fd")) {
      try? directory.forEachEntry { _ in
        held += 1
        return true
      }
    }
    return max(0, openFileLimit - held)
  }
}

private let raisedOpenFileLimit: Int = {
  var limit = rlimit()
  guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
  if limit.rlim_cur < limit.rlim_max {
    var raised = limit
    raised.rlim_cur = limit.rlim_max
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
  }
  return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
}()
