#if canImport(Glibc)
  import Glibc
#endif

/// This process as the C library sees it: who it runs as, its arguments and environment, and
/// how it ends.
package enum CurrentProcess {
  package static var isRoot: Bool { geteuid() == 0 }
  package static var userID: UInt32 { getuid() }

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
}
