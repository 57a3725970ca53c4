#if canImport(Glibc)
  import Glibc
#endif

/// A command run as an argv — never through a shell, so arguments holding spaces, quotes or
/// `$(…)` reach it exactly — with a timeout after which it is killed.
public struct ChildCommand: Sendable {
  public var arguments: [String]
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

  public init(_ arguments: [String], environment: [String: String] = [:], timeout: Duration) {
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
    var merged: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
      let text = String(cString: pointer)
      if let equals = text.firstIndex(of: "=") {
        merged[String(text[..<equals])] = String(text[text.index(after: equals)...])
      }
      entry += 1
    }
    for (key, value) in environment { merged[key] = value }
    let argv = arguments.map { strdup($0) } + [nil]
    let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv { free(pointer) }
      for pointer in envp { free(pointer) }
    }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
    guard rc == 0 else { return .failedToStart(Errno(rawValue: rc)) }
    let deadline = SystemTimeSource.read(CLOCK_MONOTONIC) + timeout.nanoseconds
    var status: Int32 = 0
    while true {
      let reaped = waitpid(pid, &status, WNOHANG)
      if reaped == pid { break }
      if reaped < 0 && errno != EINTR { return .failedToStart(Errno.current) }
      if SystemTimeSource.read(CLOCK_MONOTONIC) >= deadline {
        kill(-pid, SIGKILL)
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return .timedOut
      }
      usleep(5_000)
    }
    let signal = status & 0x7F
    return signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
  }
}
