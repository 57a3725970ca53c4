import Foundation
import VPNStatStore

/// A directory for one test, removed with everything in it when the value goes away.
/// Mode 0755 so that tests running commands as `nobody` can reach what is inside. Under $TMPDIR
/// when set (scripts/mutation-check gives each run its own, to remove what a killed run left).
final class TemporaryDirectory: @unchecked Sendable {
  let url: URL
  init(_ label: String = "t") throws {
    let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    url = URL(fileURLWithPath: base).appendingPathComponent("vpnstat-\(label)-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    chmod(url.path, 0o755)
  }
  var path: String { url.path }
  func file(_ name: String) -> String { url.appendingPathComponent(name).path }
  deinit { try? FileManager.default.removeItem(at: url) }

  /// A directory for the whole test process (a `static let`'s fixture): kept until the process
  /// exits, then removed (a static is never deinitialised, so `deinit` would not).
  static func forProcess(_ label: String) throws -> TemporaryDirectory {
    let directory = try TemporaryDirectory(label)
    AtExit.keep(directory)
    return directory
  }
}

/// The directories of a test process's `static let` fixtures, removed when it exits.
private enum AtExit {
  static let lock = NSLock()
  nonisolated(unsafe) static var kept: [TemporaryDirectory] = []

  static func keep(_ directory: TemporaryDirectory) {
    lock.lock()
    defer { lock.unlock() }
    if kept.isEmpty { atexit { AtExit.removeAll() } }
    kept.append(directory)
  }

  static func removeAll() {
    lock.lock()
    defer { lock.unlock() }
    for directory in kept { try? FileManager.default.removeItem(at: directory.url) }
  }
}

/// The bytes of a file, to show it was left untouched.
func contents(_ path: String) -> Data? { FileManager.default.contents(atPath: path) }

/// Runs Debian's python3 (not a pyenv shim) with a script.
func python(_ script: String, _ arguments: [String] = [], input: Data? = nil, timeout: TimeInterval = 60) throws
  -> CommandResult
{
  try Tool.require("/usr/bin/python3")
  return try run("/usr/bin/python3", ["-c", script] + arguments, input: input, timeout: timeout)
}

/// A writer of the database at `path` that died in the middle of a transaction (SIGKILL) with the
/// file in rollback mode (another program's, an older vpnstat's): its journal stays beside the
/// file, and until the next writer rolls it back no reader can read the file as of one commit.
/// The database must hold a vpnstat schema and no process may have it open; the rows the dead
/// writer added are undone.
func leaveHotJournal(_ path: String) throws {
  try dieMidWrite(path, rollbackMode: true)
  let journal = try? FileManager.default.attributesOfItem(atPath: path + "-journal")[.size] as? Int
  guard (journal ?? 0) > 0 else {
    throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path + "-journal"])
  }
}

/// A writer of the database at `path` (in WAL mode, as vpnstat keeps it) that died in the middle
/// of a transaction (SIGKILL) after its uncommitted pages spilled into the log: the log ends in
/// frames no commit ends. Its rows are no commit.
func dieMidWrite(_ path: String) throws {
  try dieMidWrite(path, rollbackMode: false)
  let log = try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int
  guard (log ?? 0) > 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path + "-wal"]) }
}

private func dieMidWrite(_ path: String, rollbackMode: Bool) throws {
  let killed = try python(
    """
    import os, signal, sqlite3, sys
    c = sqlite3.connect('file:' + sys.argv[1] + '?vfs=unix-none', uri=True, isolation_level=None)
    # Exclusive locking mode: the log's index in this process's memory, as vpnstat keeps it.
    c.execute('PRAGMA locking_mode=EXCLUSIVE')
    if sys.argv[2] == 'rollback':
        c.execute('PRAGMA journal_mode=DELETE')
    c.execute('PRAGMA cache_size=1')
    c.execute('BEGIN IMMEDIATE')
    for i in range(3000):
        c.execute("INSERT INTO stops (at, reason) VALUES (?, 'user')", (i,))
    os.kill(os.getpid(), signal.SIGKILL)
    """, [path, rollbackMode ? "rollback" : "wal"])
  guard killed.status != 0 else { throw TestSetupError("the writer was not killed: \(killed.errors)") }
}

/// A copy of the built vpnstat that an unprivileged user can execute (the build directory may
/// sit under /root, which `nobody` cannot enter).
func vpnstatForOtherUsers(in directory: TemporaryDirectory) throws -> String {
  try builtForOtherUsers(Built.vpnstat, in: directory)
}

/// A copy of a program the package built (`Built.testPeer`, `Built.vpnstat`) that an
/// unprivileged user can execute, under the same file name in `directory`.
func builtForOtherUsers(_ program: String, in directory: TemporaryDirectory) throws -> String {
  let copy = directory.file((program as NSString).lastPathComponent)
  if !FileManager.default.fileExists(atPath: copy) {
    // Copied by cp, not by this process: a child another test forks while this process holds
    // the copy open for writing keeps it open until that child's exec, and running the copy
    // then fails with ETXTBSY ("Text file busy", seen under load even with O_CLOEXEC). cp's
    // descriptor is in cp alone, which forks nothing.
    let copied = try run("/bin/cp", [program, copy])
    guard copied.status == 0 else { throw TestSetupError("cp \(program) \(copy): \(copied.errors)") }
    chmod(copy, 0o755)
  }
  return copy
}

/// Writes a program (a script) that anyone may run, mode 0755: the bytes into a side file, then
/// copied into place by cp (see `builtForOtherUsers`: this process never holds the program
/// itself open for writing, so no child forked meanwhile can make running it fail with ETXTBSY).
func writeExecutable(_ data: Data, to path: String) throws {
  let side = path + ".written"
  try data.write(to: URL(fileURLWithPath: side))
  defer { try? FileManager.default.removeItem(atPath: side) }
  let copied = try run("/bin/cp", [side, path])
  guard copied.status == 0 else { throw TestSetupError("cp \(side) \(path): \(copied.errors)") }
  chmod(path, 0o755)
}

/// Changes a file's POSIX ACL with setfacl (package acl), e.g. `setfacl("-m", "u:nobody:rw", path)`:
/// entries that give write access the mode bits do not show (`ls -l` shows only the mask).
func setfacl(_ arguments: String...) throws { try setfacl(arguments) }

func setfacl(_ arguments: [String]) throws {
  try Tool.require("/usr/bin/setfacl")
  let result = try run("/usr/bin/setfacl", arguments)
  guard result.status == 0 else { throw TestSetupError("setfacl \(arguments): \(result.errors)") }
}

/// Runs a command as `nobody` (setpriv from util-linux, present on every Debian).
func runAsNobody(_ executable: String, _ arguments: [String]) throws -> CommandResult {
  try Tool.require("/usr/bin/setpriv")
  var result: CommandResult
  var attempts = 0
  repeat {
    result = try run(
      "/usr/bin/setpriv",
      ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", executable] + arguments,
      environment: ["HOME": "/nonexistent", "XDG_STATE_HOME": "/nonexistent/state"])
    attempts += 1
    // 126: "text file busy" while a child spawned by a parallel test still holds the copy's
    // descriptor between its fork and its exec; it passes in a moment.
    if result.status == 126 { usleep(50_000) }
  } while result.status == 126 && attempts < 10
  return result
}

/// Another writer of the database in the middle of a transaction: it holds the database's writer
/// lock (the private file every writer of one user takes around each operation) until `release`.
final class HeldWriterLock {
  private var descriptor: Int32
  init(_ location: StoreLocation) throws {
    descriptor = open(location.lockPath("write"), O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0, flock(descriptor, LOCK_EX) == 0 else {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: location.lockPath("write")])
    }
  }
  func release() {
    guard descriptor >= 0 else { return }
    close(descriptor)
    descriptor = -1
  }
  deinit { release() }
}
