import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A command run as an argv — never through a shell, so arguments holding spaces, quotes or
/// `$(…)` reach it exactly, as bytes (they need not be UTF-8) — with a timeout after which it is
/// killed.
public struct ChildCommand: Sendable {
  public var arguments: [[UInt8]]
  /// Set in the child's environment, over what it inherits.
  public var environment: [String: String]
  public var timeout: Duration

  public enum Outcome: Hashable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)
    case timedOut
    case failedToStart(Errno)

    public var description: String {
      switch self {
      case .exited(let code): "exited with status \(code)"
      case .signaled(let signal): "killed by signal \(signal)"
      case .timedOut: "timed out and was killed"
      case .failedToStart(let error): "could not be started: \(error)"
      }
    }
  }

  public init(_ arguments: [[UInt8]], environment: [String: String] = [:], timeout: Duration) {
    self.arguments = arguments
    self.environment = environment
    self.timeout = timeout
  }

  /// Runs the command to completion (or the timeout), with stdin from /dev/null and stdout and
  /// stderr inherited, and returns how it ended.
  public func run() -> Outcome {
    guard let program = arguments.first else { return .failedToStart(.invalidArgument) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    // vpnstat blocks SIGTERM/SIGINT for its signalfd; the child must not inherit that.
    var empty = sigset_t()
    sigemptyset(&empty)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &all)
    // Its own process group, so a timeout kills whatever it started too.
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
    // The inherited environment passes as it is (its values need not be UTF-8 either), less the
    // variables set here.
    let added = environment.map { Array("\($0.key)=\($0.value)".utf8) }
    let overridden = Set(environment.keys.map { Array("\($0)=".utf8) })
    var inherited: [UnsafeMutablePointer<CChar>?] = []
    var entry = environ
    while let pointer = entry.pointee {
      let prefix = UnsafeBufferPointer(start: pointer, count: strcspn(pointer, "=") + 1)
      if !overridden.contains(prefix.map { UInt8(bitPattern: $0) }) { inherited.append(pointer) }
      entry += 1
    }
    let argv = arguments.map(copyCString) + [nil]
    let owned = added.map(copyCString)
    defer {
      for pointer in argv { free(pointer) }
      for pointer in owned { free(pointer) }
    }
    let envp = inherited + owned + [nil]
    var pid: pid_t = 0
    let rc = SystemPath(bytes: program).withCString { posix_spawnp(&pid, $0, &actions, &attributes, argv, envp) }
    guard rc == 0 else { return .failedToStart(Errno(rawValue: rc)) }
    var status: Int32 = 0
    // Wait for the exit on a pidfd, with the timeout as poll's: no polling loop.
    let exited: Bool
    do {
      let pidfd = try retryingInterrupts { clinux_pidfd_open(pid) }
      defer { Glibc.close(pidfd) }
      let deadline = SystemClock.monotonic + timeout.nanoseconds
      var ready = false
      while !ready, SystemClock.monotonic < deadline {
        ready =
          !(try waitForReadable(
            [FileDescriptor(rawValue: pidfd)], timeout: .nanoseconds(deadline - SystemClock.monotonic))).isEmpty
      }
      exited = ready
    } catch {
      exited = false
    }
    if !exited {
      kill(-pid, SIGKILL)
      kill(pid, SIGKILL)
      while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
      return .timedOut
    }
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let signal = status & 0x7F
    return signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
  }
}

/// A malloc'd, NUL-terminated copy of `bytes` (for an argv or envp), freed by the caller.
private func copyCString(_ bytes: [UInt8]) -> UnsafeMutablePointer<CChar>? {
  guard let copy = malloc(bytes.count + 1)?.assumingMemoryBound(to: CChar.self) else { return nil }
  bytes.withUnsafeBytes { raw in
    if let base = raw.baseAddress { UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: raw.count) }
  }
  copy[bytes.count] = 0
  return copy
}
