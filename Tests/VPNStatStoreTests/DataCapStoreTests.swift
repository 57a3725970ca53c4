import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Schema 4 (the data cap) and the period usage the cap and `alert` read.
struct DataCapStoreTests {
  /// A database as vpnstat with schema 3 left it: the first three migrations, nothing after.
  func schemaThree(at path: String) throws {
    _ = try FileSystem.createFile(path, mode: 0o644)
    let connection = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: true)
    for step in Store.migrations.prefix(3) { try connection.execute(step) }
    try connection.execute("PRAGMA application_id = \(Store.applicationID); PRAGMA user_version = 3")
  }

  @Test("a schema-3 database reads as no cap and is left as it is; the first writer adds the cap columns")
  func migration() throws {
    let directory = try TemporaryDirectory("schema3")
    let path = directory.file("v.db")
    try schemaThree(at: path)
    let before = contents(path)
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try reader.sessionRecord().dataCap == nil)
    #expect(try reader.sessionRecord().plan == .free)
    #expect(contents(path) == before, "a reader changed the file")
    let writer = try #require(try Store.open(StoreLocation(path: path), intent: .write))
    #expect(Store.schemaVersion == 7)
    let cap = DataCap(limitBytes: 2 << 30, period: UsagePeriod(.month, monthStartDay: 15))
    try writer.updateSession { $0.dataCap = cap }
    let again = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try again.sessionRecord().dataCap == cap)
    // Switching plans keeps the cap; removing it leaves none.
    try writer.updateSession { $0 = $0.switching(to: .premium) }
    #expect(try again.sessionRecord().dataCap == cap)
    try writer.updateSession { $0.dataCap = nil }
    #expect(try again.sessionRecord().dataCap == nil)
  }

  @Test(
    "a cap with a period this vpnstat does not know (written by another) reads as no cap; a month start day or a limit it never writes is damage (issue 38), never a crash"
  )
  func unknownPeriod() throws {
    let directory = try TemporaryDirectory("capodd")
    let path = directory.file("v.db")
    let store = try #require(try Store.open(StoreLocation(path: path), intent: .write))
    try store.updateSession { $0.dataCap = DataCap(limitBytes: 10, period: UsagePeriod(.week)) }
    try store.connection.execute("UPDATE session SET data_cap_period = 'fortnight'")
    #expect(try store.sessionRecord().dataCap == nil)
    try store.connection.execute("UPDATE session SET data_cap_period = 'month', month_start_day = 99")
    #expect(throws: StoreError.self) { try store.sessionRecord() }
    try store.connection.execute("UPDATE session SET month_start_day = 28, data_cap_bytes = -5")
    #expect(throws: StoreError.self) { try store.sessionRecord() }
    try store.connection.execute("UPDATE session SET data_cap_bytes = 5")
    #expect(try store.sessionRecord().dataCap == DataCap(limitBytes: 5, period: UsagePeriod(.month, monthStartDay: 28)))
  }

  @Test("a period's usage: the daily buckets from its start, of one class or one name")
  func usage() throws {
    let directory = try TemporaryDirectory("usage")
    let path = directory.file("v.db")
    try ReportFixture.make(at: path)
    let store = try #require(
      try Store.open(StoreLocation(path: path), intent: .read, calendar: FixedOffsetCalendar.utc))
    let fromFifteenth = Timestamp(rfc3339: "2026-11-15T00:00:00Z")!.seconds
    #expect(
      try store.usage(since: fromFifteenth, of: .tunnel)
        == TrafficCounts(rxBytes: 10_500, txBytes: 1050, rxPackets: 105, txPackets: 11))
    #expect(try store.usage(since: fromFifteenth, of: nil, name: ReportFixture.tunnel).bytes == 11_550)
    #expect(try store.usage(since: fromFifteenth, of: .wifi) == .zero)
    #expect(try store.usage(since: fromFifteenth, of: nil, name: InterfaceName("wg1")) == .zero)
    #expect(try store.usage(since: 0, of: .tunnel).rxBytes == 33_000)
    // The stored ledger totals the usage of a reader's own sample is measured against.
    #expect(try store.ledgerTotals(of: .tunnel).rxBytes == 33_000)
    #expect(try store.ledgerTotals(of: nil, name: ReportFixture.tunnel).rxBytes == 33_000)
  }
}
