#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// A program and its arguments, turned into C strings once, so that a timed loop pays for
/// posix_spawn and the program only, not for building argv in Swift.
final class PreparedCommand {
  /// How tables name it, e.g. `vpnstat status --json`.
  let label: String
  let path: String
  let arguments: [String]
  private let argv: [UnsafeMutablePointer<CChar>?]

  init(label: String, path: String, arguments: [String]) {
    self.label = label
    self.path = path
    self.arguments = arguments
    argv = ([path] + arguments).map { strdup($0) } + [nil]
  }

  deinit {
    for pointer in argv { free(pointer) }
  }

  /// Starts the program with stdin, stdout and stderr as given (-1 leaves one inherited).
  /// Spawned with posix_spawn: FoundationEssentials has no Process, and glibc's posix_spawn
  /// uses CLONE_VFORK, the cheapest way to start a child.
  func spawn(stdin: Int32 = -1, stdout: Int32 = -1, stderr: Int32 = -1) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    for (source, target) in [(stdin, Int32(0)), (stdout, 1), (stderr, 2)] where source >= 0 {
      posix_spawn_file_actions_adddup2(&actions, source, target)
    }
    var pid: pid_t = 0
    let result = argv.withUnsafeBufferPointer { arguments in
      posix_spawn(&pid, path, &actions, nil, arguments.baseAddress!, environ)
    }
    guard result == 0 else {
      throw BenchError("cannot start \(path): \(String(cString: strerror(result)))")
    }
    return pid
  }
}

/// How a child ended, from waitpid's status.
struct ExitReport: Sendable, CustomStringConvertible {
  let status: Int32
  var succeeded: Bool { status & 0x7f == 0 && (status >> 8) & 0xff == 0 }
  var description: String {
    let signal = status & 0x7f
    return signal == 0 ? "exit status \((status >> 8) & 0xff)" : "killed by signal \(signal)"
  }
}

/// Waits for `pid`, retrying when a signal interrupts the wait. When `interruptible`, a pending
/// SIGINT/SIGTERM makes it end the child with SIGTERM first and then throw, so the caller's
/// cleanup runs while no child is left behind.
func waitForExit(_ pid: pid_t, interruptible: Bool = false) throws -> ExitReport {
  var status: Int32 = 0
  func endChild(_ signal: Int32) -> Interruption {
    kill(pid, SIGTERM)
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    return Interruption(signal: signal)
  }
  // A signal that came before the wait (it cut a read of the child's output short) ends the
  // child now: waiting for it first left an interrupted run running to its end.
  if interruptible, let signal = Interruption.pending { throw endChild(signal) }
  while waitpid(pid, &status, 0) == -1 {
    guard errno == EINTR else { throw BenchError("waitpid: \(String(cString: strerror(errno)))") }
    if interruptible, let signal = Interruption.pending { throw endChild(signal) }
  }
  // The child may have died of the same Ctrl-C first: report the interruption, not its death.
  if interruptible, let signal = Interruption.pending { throw Interruption(signal: signal) }
  return ExitReport(status: status)
}

/// The result of a program run to completion with its output kept.
struct CapturedRun: Sendable {
  let exit: ExitReport
  let output: [UInt8]
}

/// Runs a program to completion, feeding it `input` on stdin (when given) and keeping its stdout.
/// Interruptible: SIGINT/SIGTERM end the child and throw `Interruption`.
func runCapturing(_ command: PreparedCommand, input: [UInt8]? = nil, stderr: Int32 = -1) throws
  -> CapturedRun
{
  let outputPipe = try closeOnExecPipe()
  let inputPipe = input != nil ? try closeOnExecPipe() : [-1, -1]
  let pid: pid_t
  do {
    pid = try command.spawn(stdin: inputPipe[0], stdout: outputPipe[1], stderr: stderr)
  } catch {
    for fd in outputPipe + inputPipe where fd >= 0 { close(fd) }
    throw error
  }
  close(outputPipe[1])
  if let input {
    close(inputPipe[0])
    // Written whole before reading: callers that feed input (ip -batch) print next to nothing,
    // so the child never blocks on a full stdout pipe while we block on its full stdin pipe.
    var offset = 0
    input.withUnsafeBytes { raw in
      while offset < raw.count {
        let written = write(inputPipe[1], raw.baseAddress! + offset, raw.count - offset)
        if written < 0 {
          if errno == EINTR && Interruption.pending == nil { continue }
          break
        }
        offset += written
      }
    }
    close(inputPipe[1])
  }
  var output: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65_536)
  while true {
    let count = chunk.withUnsafeMutableBytes { read(outputPipe[0], $0.baseAddress, $0.count) }
    if count > 0 {
      output += chunk[0..<count]
    } else if count == 0 || errno != EINTR {
      break
    } else if Interruption.pending != nil {
      break  // waitForExit below ends the child and throws
    }
  }
  close(outputPipe[0])
  return CapturedRun(exit: try waitForExit(pid, interruptible: true), output: output)
}

/// A pipe whose ends are not inherited by children (dup2 onto 0/1/2 clears the flag on the copy):
/// a stray write end in a grandchild would keep us waiting for an end of file forever.
/// (pipe2 is not imported by Swift's Glibc: it needs _GNU_SOURCE.)
func closeOnExecPipe() throws -> [Int32] {
  var ends: [Int32] = [-1, -1]
  guard pipe(&ends) == 0 else { throw BenchError("pipe: \(String(cString: strerror(errno)))") }
  for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
  return ends
}

/// The absolute path of `name` on PATH (or the usual sbin places, where root's tools live).
func findExecutable(_ name: String) -> String? {
  let path = getenv("PATH").map { String(cString: $0) } ?? ""
  let directories =
    path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
  for directory in directories where !directory.isEmpty {
    let candidate = directory + "/" + name
    if access(candidate, X_OK) == 0 { return candidate }
  }
  return nil
}

/// This executable's own path, from /proc/self/exe.
func ownExecutablePath() -> String {
  var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
  let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
  guard length > 0 else { return CommandLine.arguments[0] }
  return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// `netlink-floor`, the package's C floors, built beside this program.
func netlinkFloorPath() -> String { besideThisProgram("netlink-floor") }

/// `sqlite-floor`, the C floor of a read through SQLite, built beside this program.
func sqliteFloorPath() -> String { besideThisProgram("sqlite-floor") }

private func besideThisProgram(_ name: String) -> String {
  ownExecutablePath().split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    + "/" + name
}

/// A failure the bench reports and stops on.
struct BenchError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}
