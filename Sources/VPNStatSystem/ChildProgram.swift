import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A program run as a child process from an argv — never through a shell, so arguments holding
/// spaces, quotes or `$(…)` reach it exactly, as bytes (they need not be UTF-8) — with a timeout
/// after which it is killed.
package struct ChildProgram: Sendable {
  package var arguments: [[UInt8]]
  /// Set in the child's environment, over what it inherits.
  package var environment: [String: String]
  package var timeout: Duration

  package enum Outcome: Hashable, Sendable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)
    case timedOut
    case failedToStart(Errno)

    package var description: String {
      switch self {
      case .exited(let code): "exited with status \(code)"
      case .signaled(let signal): "killed by signal \(signal)"
      case .timedOut: "timed out and was killed"
      case .failedToStart(let error): "could not be started: \(error)"
      }
    }
  }

  package init(_ arguments: [[UInt8]], environment: [String: String] = [:], timeout: Duration) {
    self.arguments = arguments
    self.environment = environment
    self.timeout = timeout
  }

  /// How a program ended and what it printed (when asked to keep it).
  package struct Finished: Hashable, Sendable {
    package var outcome: Outcome
    /// Its standard output, at most the limit asked for.
    package var output: [UInt8]
    /// Its standard error, at most the limit asked for.
    package var errors: [UInt8]

    init(notStarted error: Errno) {
      self.init(outcome: .failedToStart(error), output: [], errors: [])
    }

    init(outcome: Outcome, output: [UInt8], errors: [UInt8]) {
      self.outcome = outcome
      self.output = output
      self.errors = errors
    }
  }

  /// Runs the program to completion (or the timeout), with stdin from /dev/null and stdout and
  /// stderr inherited, and returns how it ended.
  package func run() -> Outcome { run(keeping: nil).outcome }

  /// Runs the program as `run()` does, but keeps what it writes to stdout and stderr (up to
  /// `limit` bytes of each; the rest is read and dropped, so the child never blocks on a full
  /// pipe). What a daemon it started still writes after it exited is not waited for.
  package func runKeepingOutput(limit: Int = 1 << 20) -> Finished { run(keeping: limit) }

  private func run(keeping limit: Int?) -> Finished {
    guard let program = arguments.first else { return Finished(notStarted: .invalidArgument) }
    let pipes: OutputPipes
    do {
      pipes = try OutputPipes(keeping: limit != nil)
    } catch {
      return Finished(notStarted: error)
    }
    defer { pipes.closeReadEnds() }
    let started = spawn(program, into: pipes)
    // The child has its ends of the pipes (or never will): ours are closed, so EOF comes when it
    // (and whatever it started) closes them.
    pipes.closeWriteEnds()
    let pid: pid_t
    switch started {
    case .success(let child): pid = child
    case .failure(let error): return Finished(notStarted: error)
    }
    var output = OutputReader(pipes, limit: limit)
    guard waitForExit(of: pid, reading: &output) else {
      kill(-pid, SIGKILL)
      kill(pid, SIGKILL)
      _ = Self.reap(pid)
      return output.finished(.timedOut)
    }
    // What it wrote before exiting is in the pipes now; a daemon it left behind may hold them
    // open for ever, so take what is there without waiting for EOF.
    output.takeWhatIsThere()
    return output.finished(Self.reap(pid))
  }

  /// Starts the program: stdin from /dev/null, stdout and stderr into `pipes` when they are kept,
  /// the environment inherited with this one's variables over it.
  private func spawn(_ program: [UInt8], into pipes: OutputPipes) -> Result<pid_t, Errno> {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    for (target, ends) in zip([Int32(1), 2], pipes.ends) { posix_spawn_file_actions_adddup2(&actions, ends[1], target) }
    // Nothing else: vpnstat's own descriptors are close-on-exec, but what its parent left it
    // open (a user's shell, a service manager's) is no business of a manager's tool or a hook.
    clinux_spawn_closefrom(&actions, 3)
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    Self.configure(&attributes)
    let argv = arguments.map(copyCString) + [nil]
    let owned = environment.map { copyCString(Array("\($0.key)=\($0.value)".utf8)) }
    defer {
      for pointer in argv { free(pointer) }
      for pointer in owned { free(pointer) }
    }
    let envp = inheritedEnvironment() + owned + [nil]
    var pid: pid_t = 0
    let rc = SystemPath(bytes: program).withCString { posix_spawnp(&pid, $0, &actions, &attributes, argv, envp) }
    return rc == 0 ? .success(pid) : .failure(Errno(rawValue: rc))
  }

  /// No signal blocked or ignored in the child: vpnstat blocks SIGTERM/SIGINT for its signalfd,
  /// and the child must not inherit that. A process group of its own, so a timeout kills whatever
  /// it started too.
  private static func configure(_ attributes: inout posix_spawnattr_t) {
    var empty = sigset_t()
    sigemptyset(&empty)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
  }

  /// The inherited environment as it is (its values need not be UTF-8 either), less the
  /// variables set here.
  private func inheritedEnvironment() -> [UnsafeMutablePointer<CChar>?] {
    let overridden = Set(environment.keys.map { Array("\($0)=".utf8) })
    var inherited: [UnsafeMutablePointer<CChar>?] = []
    var entry = environ
    while let pointer = entry.pointee {
      let prefix = UnsafeBufferPointer(start: pointer, count: strcspn(pointer, "=") + 1)
      if !overridden.contains(prefix.map { UInt8(bitPattern: $0) }) { inherited.append(pointer) }
      entry += 1
    }
    return inherited
  }

  /// Waits for the child to exit — on a pidfd, with the timeout as poll's: no polling loop —
  /// reading what it writes meanwhile. False when the timeout passed first (or no pidfd could be
  /// had).
  private func waitForExit(of pid: pid_t, reading output: inout OutputReader) -> Bool {
    do {
      let process = FileDescriptor(rawValue: try retryingInterrupts { clinux_pidfd_open(pid) })
      defer { process.close() }
      let deadline = SystemClock.monotonic + timeout.nanoseconds
      while SystemClock.monotonic < deadline {
        let readable = try waitForReadable(
          [process] + output.open, timeout: .nanoseconds(deadline - SystemClock.monotonic))
        output.drain(readable.filter { $0 != process })
        if readable.contains(process) { return true }
      }
      return false
    } catch {
      return false
    }
  }

  /// Collects the child, which exited or was killed, and says how it ended.
  private static func reap(_ pid: pid_t) -> Outcome {
    var status: Int32 = 0
    // Only a pid that is not our child fails (ECHILD), and then there is nothing to say but 0.
    _ = try? Errno.retrying { waitpid(pid, &status, 0) }
    let signal = status & 0x7F
    return signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
  }
}

/// The pipes a child's stdout and stderr go into when they are kept: a read end for us
/// (close-on-exec, so no other child inherits it) and a write end for the child, each.
private struct OutputPipes {
  /// `[read, write]` for stdout, then stderr; none when nothing is kept.
  let ends: [[Int32]]

  init(keeping: Bool) throws(Errno) {
    var ends: [[Int32]] = []
    for _ in 0..<(keeping ? 2 : 0) {
      var pair: [Int32] = [-1, -1]
      guard clinux_pipe2(&pair, O_CLOEXEC) == 0 else {
        let error = Errno.current
        for end in ends.joined() { FileDescriptor(rawValue: end).close() }
        throw error
      }
      ends.append(pair)
    }
    self.ends = ends
  }

  func closeWriteEnds() { for pipe in ends { FileDescriptor(rawValue: pipe[1]).close() } }
  func closeReadEnds() { for pipe in ends { FileDescriptor(rawValue: pipe[0]).close() } }
}

/// What a child writes into its `OutputPipes`, read as it comes so it never blocks on a full
/// pipe: up to `limit` bytes of each, the rest read and dropped.
private struct OutputReader {
  let pipes: OutputPipes
  let limit: Int?
  var kept: [[UInt8]]
  /// The read ends not at EOF yet.
  var open: [FileDescriptor]

  init(_ pipes: OutputPipes, limit: Int?) {
    self.pipes = pipes
    self.limit = limit
    kept = [[UInt8]](repeating: [], count: pipes.ends.count)
    open = pipes.ends.map { FileDescriptor(rawValue: $0[0]) }
  }

  /// Reads what is there on the readable pipes; a pipe at EOF is no longer waited on.
  mutating func drain(_ ready: [FileDescriptor]) {
    var chunk = [UInt8](repeating: 0, count: 16384)
    for descriptor in ready {
      guard let index = pipes.ends.firstIndex(where: { $0[0] == descriptor.rawValue }) else { continue }
      let count = (try? chunk.withUnsafeMutableBytes { try descriptor.read(into: $0) }) ?? 0
      if count <= 0 {
        open.removeAll { $0 == descriptor }
      } else if let limit {
        kept[index] += chunk[0..<min(count, max(0, limit - kept[index].count))]
      }
    }
  }

  /// Takes what the pipes hold now, without waiting for more.
  mutating func takeWhatIsThere() {
    while !open.isEmpty, let readable = try? waitForReadable(open, timeout: .zero), !readable.isEmpty {
      drain(readable)
    }
  }

  func finished(_ outcome: ChildProgram.Outcome) -> ChildProgram.Finished {
    ChildProgram.Finished(outcome: outcome, output: kept.first ?? [], errors: kept.last ?? [])
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
