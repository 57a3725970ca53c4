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

  /// How a command ended and what it printed (when asked to keep it).
  public struct Finished: Hashable, Sendable {
    public var outcome: Outcome
    /// Its standard output, at most the limit asked for.
    public var output: [UInt8]
    /// Its standard error, at most the limit asked for.
    public var errors: [UInt8]
  }

  /// Runs the command to completion (or the timeout), with stdin from /dev/null and stdout and
  /// stderr inherited, and returns how it ended.
  public func run() -> Outcome { run(keeping: nil).outcome }

  /// Runs the command as `run()` does, but keeps what it writes to stdout and stderr (up to
  /// `limit` bytes of each; the rest is read and dropped, so the child never blocks on a full
  /// pipe). What a daemon it started still writes after it exited is not waited for.
  public func runKeepingOutput(limit: Int = 1 << 20) -> Finished { run(keeping: limit) }

  private func run(keeping limit: Int?) -> Finished {
    guard let program = arguments.first else {
      return Finished(outcome: .failedToStart(.invalidArgument), output: [], errors: [])
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    // Pipes for stdout and stderr, close-on-exec on our side, so no other child inherits them.
    var pipes: [[Int32]] = []
    if limit != nil {
      for target in [Int32(1), 2] {
        var ends: [Int32] = [-1, -1]
        guard clinux_pipe2(&ends, O_CLOEXEC) == 0 else {
          for end in pipes.joined() { _ = Glibc.close(end) }
          return Finished(outcome: .failedToStart(.current), output: [], errors: [])
        }
        posix_spawn_file_actions_adddup2(&actions, ends[1], target)
        pipes.append(ends)
      }
    }
    defer { for pipe in pipes { _ = Glibc.close(pipe[0]) } }
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
    // The child has its ends of the pipes (or never will): ours are closed, so EOF comes when it
    // (and whatever it started) closes them.
    for pipe in pipes { _ = Glibc.close(pipe[1]) }
    guard rc == 0 else { return Finished(outcome: .failedToStart(Errno(rawValue: rc)), output: [], errors: []) }
    var kept = [[UInt8]](repeating: [], count: pipes.count)
    var open = pipes.map { FileDescriptor(rawValue: $0[0]) }
    /// Reads what is there on the readable pipes; a pipe at EOF is no longer waited on.
    func drain(_ ready: [FileDescriptor]) {
      var chunk = [UInt8](repeating: 0, count: 16384)
      for descriptor in ready {
        guard let index = pipes.firstIndex(where: { $0[0] == descriptor.rawValue }) else { continue }
        let count = (try? chunk.withUnsafeMutableBytes { try descriptor.read(into: $0) }) ?? 0
        if count <= 0 {
          open.removeAll { $0 == descriptor }
        } else if let limit {
          kept[index] += chunk[0..<min(count, max(0, limit - kept[index].count))]
        }
      }
    }
    var status: Int32 = 0
    // Wait for the exit on a pidfd, with the timeout as poll's: no polling loop.
    let exited: Bool
    do {
      let pidfd = try retryingInterrupts { clinux_pidfd_open(pid) }
      defer { Glibc.close(pidfd) }
      let process = FileDescriptor(rawValue: pidfd)
      let deadline = SystemClock.monotonic + timeout.nanoseconds
      var ready = false
      while !ready, SystemClock.monotonic < deadline {
        let readable = try waitForReadable([process] + open, timeout: .nanoseconds(deadline - SystemClock.monotonic))
        ready = readable.contains(process)
        drain(readable.filter { $0 != process })
      }
      exited = ready
    } catch {
      exited = false
    }
    if !exited {
      kill(-pid, SIGKILL)
      kill(pid, SIGKILL)
      while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
      return Finished(outcome: .timedOut, output: kept.first ?? [], errors: kept.last ?? [])
    }
    // What it wrote before exiting is in the pipes now; a daemon it left behind may hold them
    // open for ever, so take what is there without waiting for EOF.
    while !open.isEmpty, let readable = try? waitForReadable(open, timeout: .zero), !readable.isEmpty {
      drain(readable)
    }
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let signal = status & 0x7F
    let outcome: Outcome = signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
    return Finished(outcome: outcome, output: kept.first ?? [], errors: kept.last ?? [])
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
