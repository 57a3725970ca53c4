import CLinux
import Foundation
import Testing

/// The result of a finished command.
struct CommandResult {
  var status: Int32
  var stdout: Data
  var stderr: Data
  var output: String { String(decoding: stdout, as: UTF8.self) }
  var errors: String { String(decoding: stderr, as: UTF8.self) }
}

/// Paths to what the package built, found next to the test bundle (one build, reused).
enum Built {
  static let directory: URL = {
    let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    // …/debug/vpnstatPackageTests.xctest (a file on Linux)
    return exe.deletingLastPathComponent()
  }()
  static var vpnstat: String { directory.appendingPathComponent("vpnstat").path }
  static var testPeer: String { directory.appendingPathComponent("vpnstat-testpeer").path }
  static var packageRoot: URL {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
      url.deleteLastPathComponent()
      if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
        return url
      }
    }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
  }
}

/// A child process started with posix_spawn. Every pipe is close-on-exec, so a child started by
/// one test never holds another test's pipe open (Foundation's Process leaks them between
/// parallel tests, and a reader then waits for the wrong child to exit). It leads a process group
/// of its own, so a timeout kills what it started too; and it carries the test process's mark
/// (`TestProcessReaper`), so it dies with the test process, whatever it started included.
final class ChildProcess: @unchecked Sendable {
  let pid: pid_t
  /// What it runs, for messages (a timeout names the command, not only a pid).
  let commandLine: String
  private let stdoutFD: Int32
  private let stderrFD: Int32
  private let stdinFD: Int32
  private let lock = NSLock()
  private var out = Data()
  private var err = Data()
  private var exitStatus: Int32?
  private var readers: [Thread] = []
  private var openStreams = 2

  init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
    var (executable, arguments) = (executable, arguments)
    // Never in the host's namespace: a command that may change a link gets a namespace of its
    // own (without root it cannot change one, and runs as it is).
    if executable == Built.vpnstat, Privilege.isRoot, LinkChanging.mayChangeLinks(arguments) {
      (executable, arguments) = LinkChanging.isolated(executable, arguments)
    }
    var outPipe: [Int32] = [0, 0]
    var errPipe: [Int32] = [0, 0]
    var inPipe: [Int32] = [0, 0]
    guard clinux_pipe2(&outPipe, O_CLOEXEC) == 0, clinux_pipe2(&errPipe, O_CLOEXEC) == 0,
      clinux_pipe2(&inPipe, O_CLOEXEC) == 0
    else { throw TestSetupError("pipe2: \(errno)") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
    posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
    // Only 0-2: a descriptor the test runner holds without close-on-exec (a fresh machine's
    // left vpnstat ~25) would change what the child can open and keep things open after it.
    clinux_spawn_closefrom(&actions, 3)
    var env = ProcessInfo.processInfo.environment
    // Never the machine's own database: commands that only read one find none unless a test
    // gives one with --db or VPNSTAT_DB.
    env["VPNSTAT_DB"] = "/nonexistent/vpnstat-tests/none.db"
    // What marks it, and whatever it starts, as this test process's: killed when it ends.
    env[TestProcessReaper.mark] = String(getpid())
    env["NO_COLOR"] = nil
    // A UTF-8 locale, whatever the machine's: what vpnstat prints depends on it (ASCII
    // otherwise), and a test that is about the locale sets it.
    env["LANG"] = "C.UTF-8"
    env["LC_ALL"] = nil
    env["LC_CTYPE"] = nil
    for (key, value) in environment ?? [:] { env[key] = value }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv { free(pointer) }
      for pointer in envp { free(pointer) }
    }
    // The test runner blocks some signals; a child must start with none blocked and default
    // dispositions, or SIGTERM would never reach it.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &empty)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
    var child: pid_t = 0
    let rc = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
    close(outPipe[1])
    close(errPipe[1])
    close(inPipe[0])
    guard rc == 0 else {
      close(outPipe[0])
      close(errPipe[0])
      close(inPipe[1])
      if rc == ENOENT { throw Tool.missing(executable) }
      throw TestSetupError("posix_spawn \(executable): \(String(cString: strerror(rc)))")
    }
    pid = child
    commandLine = String(([executable] + arguments).joined(separator: " ").prefix(300))
    stdoutFD = outPipe[0]
    stderrFD = errPipe[0]
    stdinFD = inPipe[1]
    startReader(stdoutFD, isError: false)
    startReader(stderrFD, isError: true)
  }

  private func startReader(_ fd: Int32, isError: Bool) {
    let thread = Thread { [self] in
      var buffer = [UInt8](repeating: 0, count: 65536)
      while true {
        let n = read(fd, &buffer, buffer.count)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        lock.lock()
        if isError { err.append(contentsOf: buffer[0..<n]) } else { out.append(contentsOf: buffer[0..<n]) }
        lock.unlock()
      }
      close(fd)
      lock.lock()
      openStreams -= 1
      lock.unlock()
    }
    thread.start()
  }

  func writeInput(_ data: Data) {
    data.withUnsafeBytes { raw in
      var offset = 0
      while offset < raw.count {
        let n = write(stdinFD, raw.baseAddress! + offset, raw.count - offset)
        if n <= 0 { break }
        offset += n
      }
    }
  }

  private var inputClosed = false

  /// Closes the child's stdin once. A second close could hit a descriptor number another test's
  /// pipe has reused meanwhile.
  func closeInput() {
    lock.lock()
    defer { lock.unlock() }
    guard !inputClosed else { return }
    inputClosed = true
    close(stdinFD)
  }

  var output: String {
    lock.lock()
    defer { lock.unlock() }
    return String(decoding: out, as: UTF8.self)
  }
  var stdoutData: Data {
    lock.lock()
    defer { lock.unlock() }
    return out
  }
  var stderrData: Data {
    lock.lock()
    defer { lock.unlock() }
    return err
  }

  /// Non-blocking: has the child exited (reaping it if so)?
  var isRunning: Bool {
    lock.lock()
    defer { lock.unlock() }
    if exitStatus != nil { return false }
    var status: Int32 = 0
    let r = waitpid(pid, &status, WNOHANG)
    if r == pid {
      exitStatus = decode(status)
      return false
    }
    return true
  }

  private func decode(_ status: Int32) -> Int32 {
    // WIFEXITED / WEXITSTATUS / WTERMSIG by hand: the macros are not imported.
    let signal = status & 0x7F
    return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
  }

  /// Waits for the child to exit and its output to be read. Returns the exit status
  /// (128 + signal when killed by one). One still running after `timeout` is killed, with what
  /// it started, and the test fails naming it.
  @discardableResult
  func wait(timeout: TimeInterval = 60) -> Int32 {
    let (status, timedOut) = finish(within: timeout)
    if timedOut { Issue.record("still running after \(timeout) s, killed: \(commandLine) (pid \(pid))") }
    return status
  }

  /// Waits up to `timeout` for the child to exit, then kills its process group (SIGKILL); then
  /// waits, a few seconds at most, for what it wrote to be read. Never blocks for longer: a child
  /// that even SIGKILL does not end (stuck in the kernel) gives status -1.
  func finish(within timeout: TimeInterval) -> (status: Int32, timedOut: Bool) {
    var timedOut = false
    if waitUntil(timeout: timeout, every: 0.002, { !isRunning }) == nil {
      timedOut = true
      // Before it is reaped: until then its pid, and so its group's, cannot be anyone else's.
      kill(-pid, SIGKILL)
      kill(pid, SIGKILL)
      _ = waitUntil(timeout: 10) { !isRunning }
    }
    // A grandchild that holds the pipes open (a daemon it started) keeps them from ending.
    _ = waitUntil(timeout: 5, every: 0.001) {
      lock.lock()
      defer { lock.unlock() }
      return openStreams == 0
    }
    lock.lock()
    defer { lock.unlock() }
    return (exitStatus ?? -1, timedOut)
  }

  /// The exit status once the child has exited and all it wrote has been read; nil while it
  /// runs. Reaping comes first, the readers' last bytes after: output read as soon as
  /// `isRunning` turns false may lack the lines the child printed last.
  var ended: Int32? { isRunning ? nil : wait(timeout: 5) }

  var terminationStatus: Int32 {
    lock.lock()
    defer { lock.unlock() }
    return exitStatus ?? -1
  }

  deinit {
    if isRunning {
      kill(-pid, SIGKILL)
      kill(pid, SIGKILL)
      // Bounded: a child blocked in the kernel (on a lock a namespace's teardown holds) ends
      // only when it gets it; the test goes on, and a zombie costs nothing.
      _ = waitUntil(timeout: 10, every: 0.002) { !isRunning }
    }
    closeInput()
  }
}

/// Runs a program to completion.
@discardableResult
func run(
  _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
  input: Data? = nil, timeout: TimeInterval = 60
) throws -> CommandResult {
  let child = try ChildProcess(executable, arguments, environment: environment)
  if let input { child.writeInput(input) }
  child.closeInput()
  let status = child.wait(timeout: timeout)
  return CommandResult(status: status, stdout: child.stdoutData, stderr: child.stderrData)
}

/// Runs `ip` with the arguments; a failure fails the calling test with ip's message.
@discardableResult
func ip(_ arguments: String...) throws -> CommandResult {
  try ip(arguments)
}

@discardableResult
func ip(_ arguments: [String]) throws -> CommandResult {
  let result = try run("/usr/sbin/ip", arguments)
  if result.status != 0 {
    throw TestSetupError("ip \(arguments.joined(separator: " ")) failed: \(result.errors)")
  }
  return result
}

struct TestSetupError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// A process left running in the background (a tun owner, a traffic sink, a recorder).
final class BackgroundProcess: @unchecked Sendable {
  let child: ChildProcess

  init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
    child = try ChildProcess(executable, arguments, environment: environment)
  }

  var output: String { child.output }
  var errors: String { String(decoding: child.stderrData, as: UTF8.self) }
  var isRunning: Bool { child.isRunning }
  var pid: pid_t { child.pid }
  /// The exit status once the process has exited and all it wrote has been read (then `output`
  /// and `errors` are complete); nil while it runs.
  var ended: Int32? { child.ended }

  /// Waits until the output contains `text`.
  func waitFor(_ text: String, timeout: TimeInterval = 20) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while !output.contains(text) {
      if !child.isRunning {
        child.wait(timeout: 5)
        if output.contains(text) { return }
        throw TestSetupError(
          "process exited (\(child.terminationStatus)) before printing '\(text)'; output: \(output) \(errors)")
      }
      if Date() > deadline { throw TestSetupError("timed out waiting for '\(text)'; output: \(output) \(errors)") }
      usleep(5_000)
    }
  }

  /// Waits for the first whole line of the output that starts with `prefix`, and returns it
  /// without its newline. Whole: a reader can see a line half-written, and a figure cut short
  /// parses as another number or none.
  func waitForLine(startingWith prefix: String, timeout: TimeInterval = 20) throws -> String {
    func found() -> String? {
      var lines = output.split(separator: "\n", omittingEmptySubsequences: false)
      lines.removeLast()  // what follows the last newline is not a whole line yet
      return lines.first { $0.hasPrefix(prefix) }.map(String.init)
    }
    let deadline = Date().addingTimeInterval(timeout)
    while true {
      if let line = found() { return line }
      if !child.isRunning {
        child.wait(timeout: 5)
        if let line = found() { return line }
        throw TestSetupError(
          "process exited (\(child.terminationStatus)) before a whole line starting '\(prefix)'; output: \(output) \(errors)"
        )
      }
      if Date() > deadline {
        throw TestSetupError("timed out waiting for a line starting '\(prefix)'; output: \(output) \(errors)")
      }
      usleep(5_000)
    }
  }

  /// Waits until stderr contains `text`.
  func waitForError(_ text: String, timeout: TimeInterval = 20) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while !errors.contains(text) {
      if !isRunning {
        child.wait(timeout: 5)
        if errors.contains(text) { return }
        throw TestSetupError("process exited before printing '\(text)': \(output) \(errors)")
      }
      if Date() > deadline { throw TestSetupError("timed out waiting for '\(text)': \(errors)") }
      usleep(5_000)
    }
  }

  /// Sends `signal` and waits for the process to end; returns its exit status.
  @discardableResult
  func stop(_ signal: Int32 = SIGTERM, timeout: TimeInterval = 10) -> Int32 {
    if child.isRunning { kill(child.pid, signal) }
    return child.wait(timeout: timeout)
  }
}

/// A descriptor held the way a parent's leftovers are: without close-on-exec, and numbered 300
/// or higher, so no descriptor a child opens itself can take its number. Closed when it goes.
final class LeftoverDescriptor {
  let number: Int32

  init() throws {
    let opened = open("/dev/null", O_RDONLY)
    guard opened >= 0 else { throw TestSetupError("open /dev/null: \(errno)") }
    number = fcntl(opened, F_DUPFD, 300)
    close(opened)
    guard number >= 300 else { throw TestSetupError("F_DUPFD: \(errno)") }
  }

  deinit { close(number) }

  /// The shell command that prints the descriptors it holds, and what it printed, read back.
  /// Its own look at the directory adds one descriptor above 2.
  static let listing = "cd /proc/self/fd && echo *"
  static func listed(_ output: String) -> [Int] {
    output.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
  }
}
