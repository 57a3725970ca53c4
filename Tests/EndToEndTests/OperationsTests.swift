import Foundation
import Testing

@testable import VPNStatTestSupport

/// Operating vpnstat: the configuration file, creating the database, a locked database at the
/// connect gate, and a recorder killed with SIGKILL.
struct OperationsTests {
  @Test("the configuration file sets option defaults; the command line wins; bad lines exit 64 naming the line")
  func configFile() throws {
    let directory = try TemporaryDirectory("conf")
    let config = directory.file("vpnstat.conf")
    try Data("# lengths for testing\nsession-length = 7m\n\npause-length=3m\nclass = odd#name=tunnel\n".utf8)
      .write(to: URL(fileURLWithPath: config))
    let db = directory.file("v.db")
    let environment = ["VPNSTAT_CONFIG": config]
    let fromFile = try run(Built.vpnstat, ["session", "--json", "--db", db], environment: environment)
    #expect(fromFile.status == 0, "\(fromFile.errors)")
    #expect(fromFile.output.contains("\"next_session_length_seconds\":420"))
    #expect(fromFile.output.contains("\"next_pause_length_seconds\":180"))
    let overridden = try run(
      Built.vpnstat, ["session", "--json", "--db", db, "--session-length", "9m"], environment: environment)
    #expect(overridden.output.contains("\"next_session_length_seconds\":540"))

    try Data("session-length = 7m\ncolour = yes\n".utf8).write(to: URL(fileURLWithPath: config))
    let unknown = try run(Built.vpnstat, ["status"], environment: environment)
    #expect(unknown.status == 64)
    #expect(unknown.errors.contains("\(config):2") && unknown.errors.contains("'colour'"), "\(unknown.errors)")
    try Data("pause-length = soon\n".utf8).write(to: URL(fileURLWithPath: config))
    let bad = try run(Built.vpnstat, ["session", "--db", db], environment: environment)
    #expect(bad.status == 64)
    #expect(bad.errors.contains("'soon'"))
  }

  @Test("a missing database directory is created (0755) with the file (0644) by the commands that write")
  func createsDirectory() throws {
    let directory = try TemporaryDirectory("mkdir")
    let db = directory.file("a/b/c/v.db")
    let result = try run(Built.vpnstat, ["plan", "free", "--db", db])
    #expect(result.status == 0, "\(result.errors)")
    var info = stat()
    #expect(stat(directory.file("a/b/c"), &info) == 0 && info.st_mode & 0o777 == 0o755)
    #expect(stat(db, &info) == 0 && info.st_mode & 0o777 == 0o644)
    // Readers never create one.
    let absent = directory.file("none/v.db")
    #expect(try run(Built.vpnstat, ["status", "--json", "--db", absent]).status == 0)
    #expect(!FileManager.default.fileExists(atPath: directory.file("none")))
  }

  @Test("the connect gate answers from a database another process keeps locked")
  func gateWithLockedDatabase() throws {
    let directory = try TemporaryDirectory("gate")
    let db = directory.file("v.db")
    #expect(try run(Built.vpnstat, ["plan", "free", "--db", db]).status == 0)
    let holder = try BackgroundProcess(
      "/usr/bin/python3",
      [
        "-c",
        "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('begin immediate'); print('locked', flush=True); time.sleep(30)",
        db,
      ])
    defer { holder.stop() }
    try holder.waitFor("locked")
    let gate = try run(Built.vpnstat, ["session", "check", "--db", db])
    #expect(gate.status == 0, "a locked database must not close the gate: \(gate.errors)")
    let status = try run(Built.vpnstat, ["session", "--json", "--db", db])
    #expect(status.status == 0, "\(status.errors)")
  }

  @Test(
    "a database no reader can read as of one commit (a program's writer died mid-write in rollback mode): the gate says undecided (66) within its --timeout; the next writer rolls the write back and the gate decides"
  )
  func gateBoundOnUnreadableDatabase() throws {
    let directory = try TemporaryDirectory("gatebound")
    let db = directory.file("v.db")
    #expect(try run(Built.vpnstat, ["plan", "free", "--db", db]).status == 0)
    try leaveHotJournal(db)
    let asked = Date()
    let gate = try run(Built.vpnstat, ["session", "check", "--db", db, "--timeout", "300ms"])
    let took = Date().timeIntervalSince(asked)
    #expect(gate.status == 66, "\(gate.status): \(gate.errors)")
    // One statement alone would wait the 2 s busy timeout without the gate's single deadline.
    #expect(took < 1.8, "the gate took \(took) s with --timeout 300ms")
    #expect(gate.errors.contains("Undecided"), "\(gate.errors)")
    // A writer (here `plan`) rolls the dead one's write back: the stops it added are gone.
    #expect(try run(Built.vpnstat, ["plan", "free", "--db", db]).status == 0)
    #expect(!FileManager.default.fileExists(atPath: db + "-journal"))
    let decided = try run(Built.vpnstat, ["session", "check", "--db", db, "--timeout", "300ms"])
    #expect(decided.status == 0, "\(decided.status): \(decided.errors)")
    #expect(try stops(db, limit: 5).isEmpty)
  }
}

@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct RecorderCrashTests {
  @Test("a recorder killed with SIGKILL loses nothing: the next sample bridges from the last one stored")
  func killNine() throws {
    let pair = try VethPair("kill", subnet: 35)
    let directory = try TemporaryDirectory("kill")
    let db = directory.file("v.db")
    let recorder = try pair.left.startRecorder(db, ["--interval", "300ms"])
    try pair.left.peerRun("udp-send", pair.rightAddress, "9800", "400", "1000")
    // Killed once it has sampled the first batch (status reads what it published).
    let sent = try pair.left.settledCounters(pair.leftName).txBytes
    let sampled = try waitUntil(timeout: 10) {
      let status = try parseStatus(pair.left.vpnstat("status", "--json", "--db", db, "-i", pair.leftName))
      return uint(interface(status, named: pair.leftName)?["total_tx_bytes"]) == sent
    }
    #expect(sampled != nil, "the recorder never sampled the first batch: \(recorder.errors)")
    #expect(recorder.stop(SIGKILL) == 128 + SIGKILL)
    try pair.left.peerRun("udp-send", pair.rightAddress, "9800", "300", "1000")
    let kernel = try pair.left.settledCounters(pair.leftName)
    let status = try parseStatus(pair.left.vpnstat("status", "--json", "--db", db, "-i", pair.leftName))
    let veth = try #require(interface(status, named: pair.leftName))
    #expect(uint(veth["total_tx_bytes"]) == kernel.txBytes)
    #expect(kernel.txBytes >= 700 * 1000)
  }
}
