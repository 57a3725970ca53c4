import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// A process run as `nobody`, kept running (an attacker holding a lock).
func backgroundAsNobody(_ executable: String, _ arguments: [String]) throws -> BackgroundProcess {
  try BackgroundProcess(
    "/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", executable] + arguments,
    environment: ["HOME": "/nonexistent"])
}

/// Python that opens FILE read-only, takes a shared lock on all of it (fcntl or flock), prints
/// "locked" and holds it — what any user who may read the database can do.
let holdSharedLock = """
  import fcntl, os, sys, time
  fd = os.open(sys.argv[1], os.O_RDONLY)
  if sys.argv[2] == 'posix':
      fcntl.lockf(fd, fcntl.LOCK_SH, 0, 0, 0)
  else:
      fcntl.flock(fd, fcntl.LOCK_SH)
  print('locked', flush=True)
  time.sleep(120)
  """

/// Python run as the attacker: every file in DIRECTORY whose name starts with PREFIX — the
/// database, its journal while one exists, what is published beside it, the spool — opened as
/// far as the attacker may (for writing, else for reading) and locked whole, every byte, with a
/// POSIX lock and a flock (exclusive where it may write, shared otherwise), and taken again
/// whenever a new file appears under such a name (a journal comes and goes with each write).
/// Prints "locked" once the database itself is held.
let lockEverything = """
  import fcntl, os, sys, time
  directory, prefix = sys.argv[1], sys.argv[2]
  held, announced = {}, False
  while True:
      for name in os.listdir(directory):
          if not name.startswith(prefix):
              continue
          path = os.path.join(directory, name)
          try:
              info = os.stat(path)
          except OSError:
              continue
          if (info.st_dev, info.st_ino) in held:
              continue
          for flags, exclusive in ((os.O_RDWR, True), (os.O_RDONLY, False)):
              try:
                  fd = os.open(path, flags | os.O_NONBLOCK)
                  break
              except OSError:
                  fd = None
          if fd is None:
              continue
          try:
              fcntl.lockf(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB, 0, 0, 0)
          except OSError:
              pass
          try:
              fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
          except OSError:
              pass
          held[(info.st_dev, info.st_ino)] = fd
          if name == prefix and not announced:
              print('locked', flush=True)
              announced = True
      if len(held) > 500:
          for key, fd in list(held.items()):
              os.close(fd)
          held.clear()
      time.sleep(0.002)
  """

/// The attacker: nobody, holding every file of `db` it can open (`lockEverything`).
func lockEverythingAsNobody(_ db: String) throws -> BackgroundProcess {
  let url = URL(fileURLWithPath: db)
  let locker = try backgroundAsNobody(
    "/usr/bin/python3", ["-c", lockEverything, url.deletingLastPathComponent().path, url.lastPathComponent])
  try locker.waitFor("locked")
  return locker
}

/// The stops recorded in `db`, newest first.
func stops(_ db: String, limit: Int = 10) throws -> [StopRecord] {
  try #require(try Store.open(StoreLocation(path: db), intent: .read)).stops(limit: limit)
}

/// Other users against root's enforcer and recorder: the limit holds, nothing of root's is touched.
@Suite(.enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
struct OtherUserAttackTests {
  @Test(
    "nobody's locks on every byte of every file of the database it can open stop no write of root's: record saves, plan and session reset write, the gate decides, each at once"
  )
  func locksStopNoWrite() throws {
    let t = try EnforcedTunnel("lockall")
    #expect(try t.ns.vpnstat("record", "--count", "1", "--db", t.db).status == 0)
    let locker = try lockEverythingAsNobody(t.db)
    defer { locker.stop(SIGKILL) }
    let saved = try #require(try Store.open(StoreLocation(path: t.db), intent: .read)?.lastSaved())
    for step in [
      ["record", "--count", "3", "--interval", "200ms"], ["plan", "premium"], ["plan", "free"], ["plan", "free"],
      ["session", "reset"],
    ] {
      let started = Date()
      let result = try t.ns.vpnstat(step + ["--db", t.db])
      #expect(result.status == 0, "\(step): \(result.status) \(result.errors)")
      // A wait for a lock would cost its busy timeout (2 s or more).
      #expect(Date().timeIntervalSince(started) < 1.9, "\(step) took \(Date().timeIntervalSince(started)) s")
    }
    // What record saved is in the file: its checkpoint's trusted clock moved on.
    let later = try #require(try Store.open(StoreLocation(path: t.db), intent: .read)?.lastSaved())
    #expect(later > saved)
    let asked = Date()
    let gate = try t.ns.vpnstat("session", "check", "--db", t.db, "--timeout", "1s")
    #expect(gate.status == 0, "\(gate.status): \(gate.errors)")
    #expect(Date().timeIntervalSince(asked) < 0.9)
    #expect(locker.isRunning, "the attacker gave up: \(locker.errors)")
  }

  @Test(
    "under nobody's locks a restarted enforcer holds the pause: enforcer B's window and stop are written, the gate refuses, and enforcer C takes an up in B's pause down at once, opening no window"
  )
  func restartHoldsPause() throws {
    let t = try EnforcedTunnel("lockbc")
    #expect(try t.ns.vpnstat("record", "--count", "1", "--db", t.db).status == 0)
    let locker = try lockEverythingAsNobody(t.db)
    defer { locker.stop(SIGKILL) }
    try t.up()
    let b = try t.startEnforcer(session: "2s", pause: "3m")
    let window = try t.openedWindow()
    let ends = try #require(instant(window["session_ends_at"]))
    let down = try #require(try waitUntil(timeout: 6) { try !t.isUp() }, "never taken down: \(b.errors)")
    #expect(down.timeIntervalSince(ends) < 1.0, "deadline → down took \(down.timeIntervalSince(ends)) s")
    // Written, not kept: the stop is in the database at once.
    #expect(try waitUntil(timeout: 3) { (try? stops(t.db).first?.reason) == .freeLimit } != nil, "\(b.errors)")
    let gate = try t.ns.vpnstat("session", "check", "--db", t.db, "--timeout", "1s")
    #expect(gate.status == 75, "\(gate.status): \(gate.errors)")
    #expect(b.stop() == 0, "\(b.errors)")
    #expect(!b.errors.contains("spool"), "\(b.errors)")
    // C starts in B's pause, still under the locks: it reads the pause and holds it.
    let c = try t.startEnforcer(session: "2s", pause: "3m")
    try t.up()
    let raised = Date()
    let undone = try #require(try waitUntil(timeout: 2) { try !t.isUp() }, "an up in B's pause stayed up: \(c.errors)")
    #expect(undone.timeIntervalSince(raised) < 1.0)
    let session = try t.session()
    #expect(session["state"] as? String == "paused", "\(session)")
    #expect(session["session_ends_at"] as? String == window["session_ends_at"] as? String, "a new window opened")
    #expect(!c.errors.contains("opened a window"), "\(c.errors)")
    #expect(try waitUntil(timeout: 3) { (try? stops(t.db).first?.reason) == .pause } != nil, "\(c.errors)")
    #expect(c.stop() == 0, "\(c.errors)")
    #expect(locker.isRunning, "the attacker gave up: \(locker.errors)")
  }

  @Test(
    "lock files are private: a squatter holding an old world-readable lock file does not keep root's enforcer or recorder from starting"
  )
  func lockSquatting() throws {
    let t = try EnforcedTunnel("squat")
    #expect(try t.ns.vpnstat("record", "--count", "1", "--db", t.db).status == 0)
    // The files an older vpnstat left: 0644, which anyone could open and flock.
    var squatters: [BackgroundProcess] = []
    defer { for squatter in squatters { squatter.stop(SIGKILL) } }
    for name in ["enforce-\(t.tunnel)", "record"] {
      let lock = t.db + ".\(name).lock"
      #expect(FileManager.default.createFile(atPath: lock, contents: nil))
      chmod(lock, 0o644)
      let squatter = try backgroundAsNobody("/usr/bin/python3", ["-c", holdSharedLock, lock, "flock"])
      try squatter.waitFor("locked")
      squatters.append(squatter)
    }
    let enforcer = try t.startEnforcer(session: "60s", pause: "60s")
    let recorder = try t.ns.vpnstat("record", "--count", "1", "--db", t.db)
    #expect(recorder.status == 0, "\(recorder.errors)")
    // The lock files now are root's alone: nobody cannot even open them.
    let lock = t.db + ".enforce-\(t.tunnel).lock"
    var info = stat()
    #expect(lstat(lock, &info) == 0 && info.st_mode & 0o077 == 0 && info.st_uid == 0)
    let open = try runAsNobody("/usr/bin/python3", ["-c", "import os,sys; os.open(sys.argv[1], os.O_RDONLY)", lock])
    #expect(open.status != 0 && open.errors.contains("Permission denied"), "\(open.errors)")
    #expect(enforcer.stop() == 0)
  }
}

/// Symlinks, shared directories and two names for one database.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct FileSafetyTests {
  @Test("the textfile replaces a planted symlink instead of writing through it; planted temp names are not followed")
  func textfileSymlinks() throws {
    let directory = try TemporaryDirectory("tfsym")
    let textfiles = directory.file("textfiles")
    try FileManager.default.createDirectory(atPath: textfiles, withIntermediateDirectories: true)
    let victim = directory.file("victim")
    try Data("root's file\n".utf8).write(to: URL(fileURLWithPath: victim))
    try FileManager.default.createSymbolicLink(atPath: textfiles + "/vpnstat.prom", withDestinationPath: victim)
    // The names the old code wrote through, for the next few hundred pids.
    let next = Int(getpid())
    for pid in next..<(next + 300) {
      try? FileManager.default.createSymbolicLink(
        atPath: textfiles + "/.vpnstat.prom.\(pid).tmp", withDestinationPath: victim)
    }
    // And a leftover of a killed recorder (a regular file of root's): cleaned up.
    #expect(FileManager.default.createFile(atPath: textfiles + "/.vpnstat.prom.99999999.tmp", contents: Data("x".utf8)))
    let result = try run(
      Built.vpnstat, ["record", "--count", "1", "--db", directory.file("v.db"), "--textfile", textfiles])
    #expect(result.status == 0, "\(result.errors)")
    #expect(String(decoding: contents(victim) ?? Data(), as: UTF8.self) == "root's file\n")
    var info = stat()
    #expect(lstat(textfiles + "/vpnstat.prom", &info) == 0 && info.st_mode & S_IFMT == S_IFREG)
    #expect(String(decoding: contents(textfiles + "/vpnstat.prom") ?? Data(), as: UTF8.self).contains("vpnstat_"))
    #expect(!FileManager.default.fileExists(atPath: textfiles + "/.vpnstat.prom.99999999.tmp"))
  }

  @Test("writers refuse directories other users may write (77), naming the directory and its mode; readers still read")
  func sharedDirectories() throws {
    let directory = try TemporaryDirectory("shared")
    let shared = directory.file("shared")
    try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
    chmod(shared, 0o777)
    for arguments in [
      ["record", "--count", "1", "--db", shared + "/v.db"], ["plan", "premium", "--db", shared + "/v.db"],
      ["enforce", "tun0", "--db", shared + "/v.db"],
    ] {
      let result = try run(Built.vpnstat, arguments)
      #expect(result.status == 77, "\(arguments): \(result.errors)")
      #expect(result.errors.contains(shared) && result.errors.contains("0777"), "\(result.errors)")
      #expect(!FileManager.default.fileExists(atPath: shared + "/v.db"))
    }
    // A textfile directory others may write is refused too.
    let ok = directory.file("v.db")
    let textfile = try run(Built.vpnstat, ["record", "--count", "1", "--db", ok, "--textfile", shared])
    #expect(textfile.status == 77, "\(textfile.errors)")
    // Readers have nothing to plant: status on a database there reads it.
    #expect(try run(Built.vpnstat, ["record", "--count", "1", "--db", ok]).status == 0)
    try FileManager.default.copyItem(atPath: ok, toPath: shared + "/copy.db")
    #expect(try run(Built.vpnstat, ["status", "--json", "--db", shared + "/copy.db"]).status == 0)
  }

  @Test(
    "writers and the gate refuse a database directory an ACL entry lets another user write (77, naming the entry), though its mode is 0755; a default ACL too"
  )
  func aclDirectories() throws {
    let directory = try TemporaryDirectory("aclshared")
    let made = directory.file("made.db")
    try #require(try run(Built.vpnstat, ["plan", "premium", "--db", made]).status == 0)
    for (label, acl) in [("access", ["-m", "u:nobody:rwx"]), ("default", ["-d", "-m", "g:nogroup:rwx"])] {
      let shared = directory.file(label)
      try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
      chmod(shared, 0o755)
      try FileManager.default.copyItem(atPath: made, toPath: shared + "/copy.db")
      try setfacl(acl + [shared])
      for arguments in [
        ["record", "--count", "1", "--db", shared + "/v.db"], ["plan", "premium", "--db", shared + "/v.db"],
        ["enforce", "tun0", "--db", shared + "/v.db"], ["session", "check", "--db", shared + "/copy.db"],
      ] {
        let result = try run(Built.vpnstat, arguments)
        #expect(result.status == 77, "\(label) \(arguments): \(result.status) \(result.errors)")
        #expect(result.errors.contains(shared) && result.errors.contains("ACL entry"), "\(label): \(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: shared + "/v.db"), "\(label) \(arguments) made the database")
      }
    }
  }

  @Test(
    "two names whose escaped forms differ by a backslash (q<0xff>, written $'q\\xff' or q\\xff, and the five bytes q\\xff, written q\\\\xff) are two tunnels with a lock each; one name written two ways is one"
  )
  func twoNamesTwoLocks() throws {
    let ns = try TestNamespace("lknm")
    let directory = try TemporaryDirectory("lknm")
    let db = directory.file("v.db")
    let lengths = ["--session-length", "60s", "--pause-length", "60s"]
    // The byte 0xff itself, as a shell passes it.
    let byte = try ns.start(
      "/bin/bash",
      ["-c", "exec \"$0\" enforce $'q\\xff' --db \"$1\" " + lengths.joined(separator: " "), Built.vpnstat, db])
    try byte.waitForError("enforcing the free plan")
    let backslash = try ns.start(Built.vpnstat, ["enforce", "q\\\\xff", "--db", db] + lengths)
    try backslash.waitForError("enforcing the free plan")
    #expect(byte.isRunning && backslash.isRunning, "\(byte.errors) \(backslash.errors)")
    let locks = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
      $0.hasPrefix("v.db.enforce-") && $0.hasSuffix(".lock")
    }
    #expect(Set(locks) == ["v.db.enforce-q\\xff.lock", "v.db.enforce-q\\\\xff.lock"], "\(locks)")
    // q<0xff> written as vpnstat prints it is the same tunnel: its enforcer runs already.
    let again = try ns.vpnstat(["enforce", "q\\xff", "--db", db] + lengths)
    #expect(again.status == 75, "\(again.status) \(again.errors)")
    #expect(again.errors.contains("pid \(byte.pid)"), "\(again.errors)")
    #expect(byte.stop() == 0 && backslash.stop() == 0)
  }

  @Test("two paths to one database (a symlink) share one enforcer lock")
  func twoPaths() throws {
    let t = try EnforcedTunnel("paths")
    let first = try t.startEnforcer(session: "60s", pause: "60s")
    let alias = t.directory.file("alias.db")
    try FileManager.default.createSymbolicLink(atPath: alias, withDestinationPath: t.db)
    let second = try t.ns.vpnstat("enforce", t.tunnel, "--db", alias)
    #expect(second.status == 75, "\(second.errors)")
    #expect(second.errors.contains("pid \(first.pid)"), "\(second.errors)")
    first.stop()
  }
}

/// Bad states of the database: a full disk, a damaged page, an empty file.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct DatabaseStateTests {
  /// A small tmpfs mounted for one test, unmounted (with everything in it) when it ends.
  final class SmallDisk: @unchecked Sendable {
    let directory: TemporaryDirectory
    var path: String { directory.path }
    init(_ label: String, size: String) throws {
      directory = try TemporaryDirectory(label)
      let mounted = try run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", directory.path])
      if mounted.status != 0 { throw TestSetupError("mount: \(mounted.errors)") }
    }
    /// Writes until the disk is full.
    func fill() throws {
      _ = try run("/bin/dd", ["if=/dev/zero", "of=\(path)/filler", "bs=4096"])
    }
    deinit { _ = try? run("/bin/umount", ["-l", directory.path]) }
  }

  @Test("a full disk: status, export and the gate still answer (they only read); record says so (74); nothing changes")
  func diskFull() throws {
    let disk = try SmallDisk("full", size: "1m")
    let db = disk.path + "/v.db"
    let filled = try run(Built.vpnstat, ["record", "--count", "2", "--interval", "100ms", "--db", db])
    #expect(filled.status == 0, "\(filled.errors)")
    try disk.fill()
    let before = contents(db)
    for arguments in [["status", "--json"], ["export"], ["session", "check"], ["session", "--json"], ["history"]] {
      let result = try run(Built.vpnstat, arguments + ["--db", db])
      #expect(result.status == 0, "\(arguments): \(result.status) \(result.errors)")
    }
    let record = try run(Built.vpnstat, ["record", "--count", "1", "--db", db])
    #expect(record.status == 74 || record.status == 0, "\(record.errors)")
    if record.status == 74 { #expect(record.errors.contains("full"), "\(record.errors)") }
    #expect(contents(db) == before)
  }

  @Test(
    "a damaged page: writers refuse (65) before writing anything, readers never write; the file stays byte for byte")
  func damagedPage() throws {
    let ns = try TestNamespace("dmg")
    for i in 0..<40 { try ns.ip("link", "add", "dmg\(i)", "type", "ifb") }
    let directory = try TemporaryDirectory("dmg")
    let db = directory.file("v.db")
    let made = try ns.vpnstat("record", "--count", "3", "--interval", "100ms", "--db", db)
    #expect(made.status == 0, "\(made.errors)")
    // The log checked into the file and removed (SQLite's last connection does so), so that
    // no copy in it stands for the page damaged next.
    let checkedIn = try python(
      "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM sqlite_master'); c.close()", [db]
    )
    try #require(checkedIn.status == 0, "\(checkedIn.errors)")
    try #require(!FileManager.default.fileExists(atPath: db + "-wal"))
    // Damage one b-tree page (not the first): its header claims more cells than fit.
    var bytes = try #require(contents(db))
    let pageSize = 4096
    #expect(bytes.count >= 4 * pageSize, "\(bytes.count)")
    let page = try #require(
      (1..<(bytes.count / pageSize)).last { [0x02, 0x05, 0x0A, 0x0D].contains(bytes[$0 * pageSize]) },
      "no b-tree page to damage")
    bytes[page * pageSize + 3] = 0xFF
    bytes[page * pageSize + 4] = 0xFF
    try bytes.write(to: URL(fileURLWithPath: db))
    let wal = contents(db + "-wal")
    for arguments in [
      ["plan", "premium"], ["session", "reset"], ["record", "--count", "1"],
      // An ifb is no tunnel: said to be one, so that the enforcer gets as far as the database.
      ["enforce", "dmg0", "--class", "dmg0=tunnel"],
    ] {
      let result = try ns.vpnstat(arguments + ["--db", db])
      #expect(result.status == 65, "\(arguments): \(result.status) \(result.errors)")
      #expect(result.errors.contains("damaged"), "\(arguments): \(result.errors)")
    }
    for arguments in [["session", "check"], ["status", "--json"], ["export"], ["history", "--json"]] {
      let result = try ns.vpnstat(arguments + ["--db", db])
      #expect(result.status == 0 || result.status == 65, "\(arguments): \(result.status) \(result.errors)")
    }
    #expect(contents(db) == bytes, "the damaged file was modified")
    #expect(contents(db + "-wal") == wal, "a -wal was written")
  }

  @Test("an empty file is no database: readers say so and leave it empty")
  func emptyFile() throws {
    let directory = try TemporaryDirectory("empty")
    let db = directory.file("v.db")
    #expect(FileManager.default.createFile(atPath: db, contents: Data()))
    for arguments in [["status", "--json"], ["session", "check"], ["export"], ["watch", "--count", "1", "--json"]] {
      let result = try run(Built.vpnstat, arguments + ["--db", db])
      #expect(result.status == 0, "\(arguments): \(result.errors)")
    }
    #expect(contents(db)?.isEmpty == true)
    #expect(!FileManager.default.fileExists(atPath: db + "-wal"))
  }

  @Test("`watch --json | head -n 1` ends when head does (after the first line, one interval in), not an interval later")
  func closedPipe() throws {
    let started = Date()
    let result = try run("/bin/sh", ["-c", "\(Built.vpnstat) watch --json --interval 3s | head -n 1"], timeout: 30)
    #expect(result.status == 0)
    #expect(result.output.hasPrefix("{"))
    let took = Date().timeIntervalSince(started)
    #expect(took > 2.9 && took < 4.5, "took \(took) s (the first line comes after one interval)")
  }
}

/// Any number of samplers on one database, and boots told apart without a boot id.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct LedgerConcurrencyKernelTests {
  @Test(
    "a 100 ms recorder, three status loops and a watch on one database over steady traffic: totals equal the kernel's, no reset"
  )
  func concurrentSamplers() throws {
    let ns = try TestNamespace("conc")
    let directory = try TemporaryDirectory("conc")
    let db = directory.file("v.db")
    let owner = try ns.echoTunnel("tun5", local: "169.254.5.1", peer: "169.254.5.2")
    defer { owner.stop() }
    let recorder = try ns.startRecorder(db, ["--interval", "100ms", "-i", "tun5"])
    let start = try ns.kernelCounters("tun5")
    let watch = try ns.start(Built.vpnstat, ["watch", "--json", "--interval", "250ms", "--db", db])
    let sender = try ns.start(
      Built.testPeer, ["udp-send", "169.254.5.2", "9500", "30000", "700", "--gap-us", "150"])
    let loops = try (0..<3).map { _ in
      try ns.start(
        "/bin/sh",
        ["-c", "i=0; while [ $i -lt 40 ]; do \(Built.vpnstat) status --json --db \(db) >/dev/null; i=$((i+1)); done"])
    }
    for loop in loops { #expect(loop.child.wait(timeout: 60) == 0, "\(loop.errors)") }
    sender.child.wait(timeout: 60)
    _ = try ns.settledCounters("tun5")
    watch.stop()
    #expect(recorder.stop() == 0, "\(recorder.errors)")
    let end = try ns.kernelCounters("tun5")
    let tun5 = try #require(
      try Store.open(StoreLocation(path: db), intent: .read)?.loadLedger().entries[InterfaceName("tun5")])
    #expect(end.txBytes - start.txBytes > 10_000_000)
    #expect(
      tun5.totals.traffic.txBytes == end.txBytes - start.txBytes,
      "ledger \(tun5.totals.traffic.txBytes), kernel \(end.txBytes - start.txBytes)")
    #expect(tun5.totals.traffic.rxBytes == end.rxBytes - start.rxBytes)
    #expect(tun5.totals.resets == 0)
    #expect(!recorder.errors.contains("reset"), "\(recorder.errors)")
  }

  @Test("a boot id that is readable for some runs and not for others books no reboot and no byte twice")
  func unreadableBootID() throws {
    let ns = try TestNamespace("boot")
    let directory = try TemporaryDirectory("boot")
    let db = directory.file("v.db")
    let empty = directory.file("no-boot-id")
    #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
    let owner = try ns.echoTunnel("tun6", local: "169.254.6.1", peer: "169.254.6.2")
    defer { owner.stop() }
    func record(hidden: Bool) throws -> CommandResult {
      let command = "\(Built.vpnstat) record --count 1 -i tun6 --db \(db)"
      let script =
        hidden ? "mount --bind \(empty) /proc/sys/kernel/random/boot_id && exec \(command)" : "exec \(command)"
      return try ns.run("/usr/bin/unshare", ["-m", "/bin/sh", "-c", script])
    }
    #expect(try record(hidden: false).status == 0)
    let start = try ns.kernelCounters("tun6")
    var warned = false
    for round in 0..<5 {
      try ns.peerRun("udp-send", "169.254.6.2", "9600", "200", "1000", "--gap-us", "100")
      let result = try record(hidden: round % 2 == 0)
      #expect(result.status == 0, "\(result.errors)")
      warned = warned || result.errors.contains("boot")
    }
    let end = try ns.kernelCounters("tun6")
    let tun6 = try #require(
      try Store.open(StoreLocation(path: db), intent: .read)?.loadLedger().entries[InterfaceName("tun6")])
    #expect(
      tun6.totals.traffic.txBytes == end.txBytes - start.txBytes,
      "ledger \(tun6.totals.traffic.txBytes) vs \(end.txBytes - start.txBytes)")
    #expect(tun6.totals.resets == 0)
    // Reports say why boots are told apart another way.
    let status = try ns.run(
      "/usr/bin/unshare",
      [
        "-m", "/bin/sh", "-c",
        "mount --bind \(empty) /proc/sys/kernel/random/boot_id && exec \(Built.vpnstat) status --json",
      ])
    #expect(((try parseStatus(status))["warnings"] as? [String] ?? []).contains { $0.contains("boot_id") })
  }

  @Test("a stopped recorder misses nothing of 60 tunnels that came and went; an overflow is said where users look")
  func stalledRecorder() throws {
    let ns = try TestNamespace("stall")
    let directory = try TemporaryDirectory("stall")
    let db = directory.file("v.db")
    let recorder = try ns.startRecorder(db, ["--interval", "60s"])
    kill(recorder.pid, SIGSTOP)
    var kernelTx: UInt64 = 0
    for _ in 0..<60 {
      let tun = try ns.echoTunnel("tun8", local: "169.254.8.1", peer: "169.254.8.2")
      try ns.peerRun("udp-send", "169.254.8.2", "9800", "20", "500")
      // The echoes come back to a port nobody listens on: wait for the ICMP answers to settle.
      var settled = try ns.kernelCounters("tun8").txBytes
      while true {
        usleep(30_000)
        let again = try ns.kernelCounters("tun8").txBytes
        if again == settled { break }
        settled = again
      }
      kernelTx += settled
      tun.stop()
      while (try? ns.ip("link", "show", "tun8")) != nil { usleep(5_000) }
    }
    kill(recorder.pid, SIGCONT)
    #expect(recorder.stop() == 0, "\(recorder.errors)")
    let booked = try Store.open(StoreLocation(path: db), intent: .read)?.loadLedger().entries[InterfaceName("tun8")]
    #expect(booked?.totals.traffic.txBytes == kernelTx, "\(booked?.totals.traffic.txBytes ?? 0) of \(kernelTx)")

    // With a buffer too small for a burst, the loss is counted and reported.
    let small = try ns.start(
      Built.vpnstat, ["record", "--interval", "60s", "--db", db], environment: ["VPNSTAT_NOTIFICATION_BUFFER": "16KiB"])
    defer { small.stop() }
    _ = try? small.waitForError("never", timeout: 0.5)
    kill(small.pid, SIGSTOP)
    try ns.ip("link", "add", "burst0", "type", "ifb")
    for i in 0..<300 { try ns.ip("link", "set", "burst0", i % 2 == 0 ? "up" : "down") }
    kill(small.pid, SIGCONT)
    try small.waitForError("overflowed")
    // The recorder says it on stderr first and stores the incident after: give the write time.
    var warnings: [String] = []
    let said = try waitUntil(timeout: 10) {
      warnings = try parseStatus(ns.vpnstat("status", "--json", "--db", db))["warnings"] as? [String] ?? []
      return warnings.contains { $0.contains("overflowed") }
    }
    #expect(said != nil, "\(warnings)")
    let export = try ns.vpnstat("export", "--db", db)
    #expect(export.output.contains("vpnstat_notification_overflows_total 1"), "\(export.output)")
  }
}

/// The limit follows the device, whatever it is called and whoever took it down.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct EnforcerFollowsTunnelTests {
  func isUp(_ ns: TestNamespace, _ name: String) throws -> Bool {
    let shown = try ns.ip("-j", "link", "show", name)
    let links = try JSONSerialization.jsonObject(with: shown.stdout) as? [[String: Any]]
    return (links?.first?["flags"] as? [String])?.contains("UP") == true
  }

  @Test(
    "renamed during the session and again in the pause: the deadline and the pause still apply, the rename is logged")
  func rename() throws {
    let t = try EnforcedTunnel("ren")
    try t.up()
    let enforcer = try t.startEnforcer(session: "3s", pause: "5s")
    let ends = try #require(instant(try t.openedWindow()["session_ends_at"]))
    try t.ns.ip("link", "set", t.tunnel, "down")
    try t.ns.ip("link", "set", t.tunnel, "name", "tun19")
    try t.ns.ip("link", "set", "tun19", "up")
    let down = try #require(try waitUntil(timeout: 5) { try !isUp(t.ns, "tun19") }, "tun19 escaped the deadline")
    #expect(down.timeIntervalSince(ends) < 1.0 && down.timeIntervalSince(ends) > -0.05)
    try t.ns.ip("link", "set", "tun19", "name", "tun29")
    try t.ns.ip("link", "set", "tun29", "up")
    let undone = try waitUntil(timeout: 1) { try !isUp(t.ns, "tun29") }
    #expect(undone != nil, "tun29 stayed up in the pause")
    #expect(
      enforcer.errors.contains("renamed tun19") && enforcer.errors.contains("renamed tun29"), "\(enforcer.errors)")
    enforcer.stop()
  }

  @Test("moved to another network namespace: reported and recorded as escaped")
  func movedAway() throws {
    let t = try EnforcedTunnel("mov")
    let elsewhere = try TestNamespace("movto")
    try t.up()
    let enforcer = try t.startEnforcer(session: "30s", pause: "30s")
    try t.ns.ip("link", "set", t.tunnel, "netns", elsewhere.name)
    try enforcer.waitForError("out of reach")
    _ = try waitUntil(timeout: 30) { try t.lastStop()?["reason"] as? String == "escaped" }
    #expect(try t.lastStop()?["reason"] as? String == "escaped")
    enforcer.stop()
  }

  @Test("after the enforcer's own disconnect and a new window, a person's link-down is recorded as 'user'")
  func laterStopsRecorded() throws {
    let t = try EnforcedTunnel("later")
    try t.up()
    let enforcer = try t.startEnforcer(session: "1s", pause: "1s")
    _ = try waitUntil(timeout: 30) { try t.lastStop()?["reason"] as? String == "free-limit" }
    // Past the pause, which a loaded machine may have seen end already (it is 1 s): an up then
    // opens a new window.
    let over = try waitUntil(timeout: 30, every: 0.05) { try t.session()["state"] as? String == "none" }
    try #require(over != nil, "the pause never ended")
    try t.up()
    _ = try waitUntil(timeout: 10) { try t.session()["state"] as? String == "active" }
    try t.ns.ip("link", "set", t.tunnel, "down")
    _ = try waitUntil(timeout: 30) { try t.lastStop()?["reason"] as? String == "user" }
    #expect(try t.lastStop()?["reason"] as? String == "user")
    enforcer.stop()
  }

  @Test("an --exec that does nothing: in the pause every up goes straight to link-down, without waiting for it again")
  func uselessAction() throws {
    let t = try EnforcedTunnel("noop")
    try t.up()
    let enforcer = try t.startEnforcer(["--exec", "/bin/true"], session: "1s", pause: "20s")
    _ = try waitUntil(timeout: 30) { try t.lastStop()?["reason"] as? String == "free-limit" }
    var worst = 0.0
    for _ in 0..<5 {
      try t.up()
      let raised = Date()
      let down = try #require(try waitUntil(timeout: 5) { try !t.isUp() })
      worst = max(worst, down.timeIntervalSince(raised))
    }
    #expect(worst < 0.5, "an up in the pause stayed up \(worst) s")
    enforcer.stop()
  }
}

/// Issue 38: the spool is part of every decision, for real. Root's own writers' lock held (a save
/// of root's that does not end) makes the database refuse an enforcer's window and stop; while
/// they wait in the spool, the gate refuses in the pause, `session` shows it to root and to
/// nobody alike, and a restarted enforcer holds it without opening a window.
@Suite(.enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
struct SpoolKernelTests {
  @Test(
    "while a window and its stop wait in the spool: the gate refuses in the pause, session shows it to root and nobody, a restarted enforcer takes an up down as the pause; then all is written"
  )
  func spoolDecides() throws {
    let t = try EnforcedTunnel("spooldec")
    #expect(try t.ns.vpnstat("record", "--count", "1", "--db", t.db).status == 0)
    let b = try t.startEnforcer(session: "2s", pause: "3m")
    // A writer of root's holds the database from now on.
    let held = try HeldWriterLock(StoreLocation(path: t.db))
    defer { held.release() }
    try t.up()
    try #require(try waitUntil(timeout: 8) { try !t.isUp() } != nil, "never taken down: \(b.errors)")
    // The window and the deadline's stop are in the spool, not in the database.
    let spooled = waitUntil(timeout: 3) {
      SpooledRecord.parse(String(decoding: contents(t.db + ".spool") ?? Data(), as: UTF8.self)).records.count >= 2
    }
    try #require(spooled != nil, "nothing spooled: \(b.errors)")
    #expect(try Store.open(StoreLocation(path: t.db), intent: .read)?.sessionRecord().window == nil)
    let gate = try t.ns.vpnstat("session", "check", "--db", t.db, "--timeout", "1s")
    #expect(gate.status == 75, "\(gate.status): \(gate.errors)")
    #expect(gate.errors.contains("free plan pause"), "\(gate.errors)")
    let rootView = try t.session()
    #expect(rootView["state"] as? String == "paused", "\(rootView)")
    let copy = try vpnstatForOtherUsers(in: t.directory)
    let theirs = try runAsNobody(copy, ["session", "--json", "--db", t.db])
    #expect(theirs.status == 0, "\(theirs.errors)")
    let object = try JSONSerialization.jsonObject(with: theirs.stdout) as? [String: Any]
    let session = object?["session"] as? [String: Any] ?? [:]
    #expect(session["state"] as? String == "paused", "\(session)")
    #expect(session["session_ends_at"] as? String == rootView["session_ends_at"] as? String)
    #expect((session["last_stop"] as? [String: Any])?["reason"] as? String == "free-limit", "\(session)")
    #expect(b.stop() == 0, "\(b.errors)")
    #expect(b.errors.contains("kept in \(t.db).spool"), "\(b.errors)")
    // C starts while the lock is held: the pause it decides from is the spool's.
    let c = try t.startEnforcer(session: "2s", pause: "3m")
    try t.up()
    #expect(try waitUntil(timeout: 2) { try !t.isUp() } != nil, "an up in the spooled pause stayed up: \(c.errors)")
    #expect(!c.errors.contains("opened a window"), "\(c.errors)")
    #expect(!c.errors.contains("cannot be read"), "held down as undecided, not as the pause: \(c.errors)")
    // The lock goes: C writes what the spool kept and what it added, and empties the spool.
    held.release()
    #expect(
      try waitUntil(timeout: 20) { (try? stops(t.db).map(\.reason).contains(.freeLimit)) == true } != nil,
      "\(c.errors)")
    #expect(try Store.open(StoreLocation(path: t.db), intent: .read)?.sessionRecord().window != nil)
    #expect(waitUntil(timeout: 5) { !FileManager.default.fileExists(atPath: t.db + ".spool") } != nil)
    #expect(c.stop() == 0, "\(c.errors)")
  }
}
