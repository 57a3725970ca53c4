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

  @Test("in the pause: 75 with the gate's words and the wait, before the name is even looked up")
  func pauseRefuses() throws {
    try pause()
    let result = try vpnstat(["connect", Self.name, "--db", db])
    #expect(result.status == 75, "\(result.status): \(result.errors)")
    #expect(result.errors.contains("free plan pause: you can reconnect in 44 min"), "\(result.errors)")
    #expect(result.errors.contains("nothing was started"), "\(result.errors)")
    #expect(result.output.isEmpty)
    let json = try vpnstat(["connect", Self.name, "--db", db, "--json"])
    #expect(json.status == 75)
    let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
    #expect(object["command"] as? String == "connect")
    #expect(object["name"] as? String == Self.name)
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
    let result = try vpnstat(["connect", Self.name, "--db", db])
    #expect(result.status == 75, "\(result.status): \(result.errors) \(result.output)")
    #expect(result.errors.contains("data cap reached"), "\(result.errors)")
  }

  @Test("a database held locked: undecided, 66, within the gate's 2 s, and nothing started")
  func lockedUndecided() throws {
    try pause()
    let holder = try BackgroundProcess(
      "/usr/bin/python3",
      [
        "-c",
        "import sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('pragma locking_mode=exclusive'); c.execute('begin exclusive'); print('locked', flush=True); time.sleep(30)",
        db,
      ])
    defer { holder.stop() }
    try holder.waitFor("locked")
    let asked = Date()
    let result = try vpnstat(["connect", Self.name, "--db", db, "--json"])
    #expect(Date().timeIntervalSince(asked) < 4)
    #expect(result.status == 66, "\(result.status): \(result.errors)")
    let object = try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
    #expect(object["outcome"] as? String == "undecided")
    #expect((object["message"] as? String)?.contains("locked by another process") == true)
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
    ])
  func usage(_ arguments: [String]) throws {
    let result = try vpnstat(arguments + ["--db", db])
    #expect(result.status == 64, "\(arguments): \(result.status) \(result.errors)")
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
