import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// `connect` and `disconnect` in-process, where nothing can be started: the gate before
/// anything else (75 in the pause or with the cap reached, 66 undecided), their JSON, and wrong
/// arguments. Starting real tunnels is `ConnectEndToEndTests`'s.
struct ConnectCommandTests {
  let directory: TemporaryDirectory
  let db: String
  let clock = ManualTimeSource()
  /// A name nothing on this machine answers to: were the gate skipped, it would end in 69.
  static let name = "vpnstat-no-such-tunnel"

  init() throws {
    directory = try TemporaryDirectory("connectcmd")
    db = directory.file("v.db")
  }

  func vpnstat(_ arguments: [String]) throws -> CommandResult {
    try runInProcess(arguments, clock: clock)
  }

  /// A window whose session ended `ago` seconds ago, with a `pause`-second pause.
  func pause(endedAgo ago: Int64 = 60, pause: Int64 = 2700) throws {
    let store = try #require(try Store.open(StoreLocation(path: db), intent: .write))
    try store.updateSession { record in
      record.window = SessionWindow.open(
        at: clock.now().wall - .seconds(900 + ago),
        lengths: SessionLengths(session: .seconds(900), pause: .seconds(pause)))
    }
  }

  /// A wg-quick directory holding `wgt0.conf` (never run: the gate refuses first), and the
  /// arguments that name it.
  func configured() throws -> [String] {
    let configurations = directory.file("wireguard")
    try FileManager.default.createDirectory(atPath: configurations, withIntermediateDirectories: false)
    chmod(configurations, 0o755)
    try Data("[Interface]\nPrivateKey = x\n".utf8).write(to: URL(fileURLWithPath: configurations + "/wgt0.conf"))
    chmod(configurations + "/wgt0.conf", 0o600)
    return ["wgt0", "--wg-quick-dir", configurations]
  }

  @Test("in the pause: 75 with the gate's words and the wait for a tunnel that exists; nothing started")
  func pauseRefuses() throws {
    try pause()
    let tunnel = try configured()
    let result = try vpnstat(["connect"] + tunnel + ["--db", db])
    #expect(result.status == 75, "\(result.status): \(result.errors)")
    #expect(result.errors.contains("free plan pause: you can reconnect in 44 min"), "\(result.errors)")
    #expect(result.errors.contains("nothing was started"), "\(result.errors)")
    #expect(result.output.isEmpty)
    let json = try vpnstat(["connect"] + tunnel + ["--db", db, "--json"])
    #expect(json.status == 75)
    let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
    #expect(object["command"] as? String == "connect")
    #expect(object["name"] as? String == "wgt0")
    #expect(object["outcome"] as? String == "not-allowed")
    #expect(object["manager"] is NSNull && object["started_at"] is NSNull && object["accepted_at"] is NSNull)
    #expect((object["message"] as? String)?.hasPrefix("free plan pause: you can reconnect in") == true)
    #expect(object["timeout_seconds"] as? Int == 30)
    #expect(object["recorded"] is NSNull)
  }

  @Test("the data cap reached: 75 with the cap's words")
  func dataCapRefuses() throws {
    let fixture = try SysfsFixture()
    for rx: UInt64 in [10_000, 50_000] {
      try fixture.add("wg0", index: 7, rx: rx, tx: rx, type: 65534, uevent: "DEVTYPE=wireguard")
      let recorded = try vpnstat(["record", "--count", "1", "--db", db, "--sysfs-root", fixture.directory.path])
      try #require(recorded.status == 0, "\(recorded.errors)")
    }
    #expect(try vpnstat(["plan", "free", "--data-cap", "1000", "--db", db]).status == 0)
    let result = try vpnstat(["connect"] + (try configured()) + ["--db", db])
    #expect(result.status == 75, "\(result.status): \(result.errors) \(result.output)")
    #expect(result.errors.contains("data cap reached"), "\(result.errors)")
  }

  @Test(
    "a database a program's writer stopped in the middle of a write (its journal left): undecided, 66, within the gate's 2 s, and nothing started"
  )
  func lockedUndecided() throws {
    try pause()
    try leaveHotJournal(db)
    let asked = Date()
    let result = try vpnstat(["connect", Self.name, "--db", db, "--json"])
    #expect(Date().timeIntervalSince(asked) < 4)
    #expect(result.status == 66, "\(result.status): \(result.errors)")
    let object = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
    #expect(object["outcome"] as? String == "undecided")
    #expect((object["message"] as? String)?.contains("locked by another process") == true)
  }

  @Test(
    "in the pause, a name that names no tunnel (a typo): 69 saying so, not the pause's wait; no refusal is recorded for the desktop"
  )
  func typoInThePause() throws {
    try pause()
    let result = try vpnstat(["connect", Self.name, "--db", db])
    #expect(result.status == 69, "\(result.status): \(result.errors)")
    #expect(result.errors.contains("no tunnel named '\(Self.name)'"), "\(result.errors)")
    #expect(!result.errors.contains("reconnect in"), "\(result.errors)")
    let store = try #require(try Store.open(StoreLocation(path: db), intent: .read))
    #expect(try store.lastRefusal() == nil)
  }

  @Test("allowed, but no such tunnel: 69 saying where it looked; disconnect the same")
  func notFound() throws {
    let result = try vpnstat(["connect", Self.name, "--db", db])
    #expect(result.status == 69, "\(result.status): \(result.errors)")
    #expect(result.errors.contains("no tunnel named '\(Self.name)'"), "\(result.errors)")
    #expect(result.errors.contains("no interface \(Self.name)"), "\(result.errors)")
    let gone = try vpnstat(["disconnect", Self.name, "--db", db, "--manager", "wg-quick"])
    #expect(gone.status == 69, "\(gone.errors)")
    #expect(gone.errors.contains("no wg-quick tunnel named"), "\(gone.errors)")
    #expect(!FileManager.default.fileExists(atPath: db), "a failed disconnect created the database")
  }

  @Test(
    "wrong arguments: 64",
    arguments: [
      ["connect"], ["connect", ""], ["connect", "wg0", "--manager", "strongswan"],
      ["connect", "wg0", "--timeout", "20m"],
      ["connect", "wg0", "--timeout", "50ms"], ["disconnect", "wg0", "--timeout", "0"], ["disconnect", "a", "b"],
      // A control character in a name (a newline would split a manager's listing).
      ["connect", "wg\n0"], ["disconnect", "wg\u{1B}0"], ["connect", "work\tvpn"],
      // A unit name that could be taken for an option, or is no unit name at all.
      ["connect", "x", "--systemd-unit", "-h=--force.service"], ["connect", "x", "--systemd-unit", "x=a b.service"],
    ])
  func usage(_ arguments: [String]) throws {
    let result = try vpnstat(arguments + ["--db", db])
    #expect(result.status == 64, "\(arguments): \(result.status) \(result.errors)")
  }

  @Test(
    "a database others could write decides nothing: connect and session check refuse it with 77, naming it, before anything starts"
  )
  func untrustedDatabase() throws {
    let open = directory.file("open")
    try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
    chmod(open, 0o777)
    let planted = open + "/v.db"
    // A premium database: it would allow anything.
    let store = try #require(try Store.open(StoreLocation(path: db), intent: .write))
    try store.updateSession { $0.plan = .premium }
    try FileManager.default.copyItem(atPath: db, toPath: planted)
    for arguments in [
      ["connect", Self.name, "--manager", "none"], ["session", "check"], ["connect", Self.name, "--json"],
    ] {
      let result = try vpnstat(arguments + ["--db", planted])
      #expect(result.status == 77, "\(arguments): \(result.status) \(result.errors)")
      #expect(result.errors.contains("refusing the database \(planted)"), "\(result.errors)")
      #expect(result.errors.contains("\(open) is writable by other users (mode 0777)"), "\(result.errors)")
    }
    // The same file where only its owner may write is the gate's to read.
    chmod(open, 0o755)
    #expect(try vpnstat(["session", "check", "--db", planted]).status == 0)
    chmod(planted, 0o666)
    #expect(try vpnstat(["session", "check", "--db", planted]).status == 77, "a file others may write")
  }

  @Test("connect and disconnect refuse a --wg-quick-dir others may write with 77; a configuration there is never run")
  func untrustedWgQuickDirectory() throws {
    let open = directory.file("wireguard")
    try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: false)
    chmod(open, 0o777)
    try Data("[Interface]\nPostDown = touch \(directory.file("ran"))\n".utf8).write(
      to: URL(fileURLWithPath: open + "/wgt0.conf"))
    for command in ["connect", "disconnect"] {
      let result = try vpnstat([command, "wgt0", "--wg-quick-dir", open, "--db", db])
      #expect(result.status == 77, "\(command): \(result.status) \(result.errors)")
      #expect(result.errors.contains("refusing the wg-quick directory \(open)"), "\(result.errors)")
    }
    // A directory only its owner may write, holding a file others may write: the file is refused.
    chmod(open, 0o755)
    chmod(open + "/wgt0.conf", 0o666)
    let file = try vpnstat(["disconnect", "wgt0", "--wg-quick-dir", open, "--db", db])
    #expect(file.status == 77, "\(file.status) \(file.errors)")
    #expect(file.errors.contains("\(open)/wgt0.conf is writable by other users (mode 0666)"), "\(file.errors)")
    #expect(!FileManager.default.fileExists(atPath: directory.file("ran")))
  }

  @Test(
    "a wg-quick configuration that is a FIFO is refused at once (77, not a regular file), by name and by path: wg-quick would wait on it"
  )
  func wgQuickFIFO() throws {
    let configurations = directory.file("wireguard")
    try FileManager.default.createDirectory(atPath: configurations, withIntermediateDirectories: false)
    chmod(configurations, 0o755)
    let fifo = configurations + "/wgt0.conf"
    try #require(mkfifo(fifo, 0o600) == 0, "mkfifo: \(String(cString: strerror(errno)))")
    for arguments in [["disconnect", "wgt0"], ["connect", "wgt0"], ["connect", fifo], ["disconnect", fifo]] {
      let started = Date()
      let result = try vpnstat(arguments + ["--timeout", "2s", "--wg-quick-dir", configurations, "--db", db])
      #expect(Date().timeIntervalSince(started) < 1, "\(arguments) took \(Date().timeIntervalSince(started)) s")
      #expect(result.status == 77, "\(arguments): \(result.status) \(result.errors)")
      #expect(result.errors.contains("\(fifo) is a FIFO, not a regular file"), "\(arguments): \(result.errors)")
    }
  }

  @Test("each outcome has its documented status")
  func statuses() {
    let expected: [TunnelControlReport.Outcome: VPNStatCommandLine.ExitStatus] = [
      .connected: .success, .disconnected: .success, .notConnected: .success, .timedOut: .unavailable,
      .refused: .unavailable, .gaveUp: .unavailable, .stillUp: .unavailable, .notPermitted: .noPermission,
      .notAllowed: .tryLater, .undecided: .undecided,
    ]
    #expect(Set(expected.keys) == Set(TunnelControlReport.Outcome.allCases))
    for (outcome, status) in expected { #expect(VPNStatCommandLine.ExitStatus.of(outcome) == status, "\(outcome)") }
  }
}
