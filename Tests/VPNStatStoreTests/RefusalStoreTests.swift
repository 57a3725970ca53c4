import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Schema 5: refusals, recorded where readers see them.
struct RefusalStoreTests {
  let t0 = Timestamp(seconds: 1_799_913_600)

  /// A database as vpnstat with schema 4 left it.
  func schemaFour(at path: String) throws {
    _ = try FileSystem.createFile(path, mode: 0o644)
    let connection = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: true)
    for step in Store.migrations.prefix(4) { try connection.execute(step) }
    try connection.execute("PRAGMA application_id = \(Store.applicationID); PRAGMA user_version = 4")
  }

  @Test("a schema-4 database reads as no refusal and is left as it is; the first writer adds the table")
  func migration() throws {
    let directory = try TemporaryDirectory("schema4")
    let path = directory.file("v.db")
    try schemaFour(at: path)
    let before = contents(path)
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try reader.lastRefusal() == nil)
    #expect(contents(path) == before, "a reader changed the file")
    #expect(throws: StoreError.self) {
      try reader.recordRefusal(Refusal(at: t0, interface: nil, by: .gate, reason: .pause, until: nil))
    }
    let writer = try #require(try Store.open(StoreLocation(path: path), intent: .write))
    let refusal = Refusal(
      at: t0, interface: InterfaceName(bytes: [0x77, 0x1B, 0xFF]), by: .dispatcher, reason: .dataCap,
      until: t0 + .seconds(3600))
    try writer.recordRefusal(Refusal(at: t0 - .seconds(1), interface: nil, by: .gate, reason: .pause, until: nil))
    try writer.recordRefusal(refusal)
    let again = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try again.lastRefusal() == refusal)
  }

  @Test("the enforcer's undo in the pause is a refusal until the stored pause's end, recorded once with its stop")
  func undoIsRefusal() throws {
    let directory = try TemporaryDirectory("undo")
    let store = try #require(try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write))
    let window = SessionWindow.open(at: t0, lengths: .release)
    try store.updateSession { $0.window = window }
    let tunnel = InterfaceName("wg0")
    try store.recordStop(StopRecord(at: window.sessionEndsAt, interface: tunnel, reason: .freeLimit))
    #expect(try store.lastRefusal() == nil)
    let undo = StopRecord(at: window.sessionEndsAt + .seconds(60), interface: tunnel, reason: .pause)
    try store.recordStop(undo)
    let expected = Refusal(
      at: undo.at, interface: tunnel, by: .enforcer, reason: .pause, until: window.pauseEndsAt)
    #expect(try store.lastRefusal() == expected)
    // Offered again (from a spool): one stop, one refusal.
    try store.recordRefusal(Refusal(at: t0, interface: nil, by: .gate, reason: .pause, until: nil))
    try store.recordStop(undo)
    #expect(try store.lastRefusal()?.by == .gate)
    var count = 0
    try store.connection.query("SELECT count(*) FROM refusals WHERE by = 'enforcer'") { count = Int($0.integer(0)) }
    #expect(count == 1)
  }
}
