import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Issue 38: every decoder of the store — the session row, the trusted clock, stops, refusals,
/// the ledger's rows and its snapshot, buckets, incidents, what the recorder publishes — reads a
/// number through the model's rule for its kind: a value no vpnstat writes is
/// `StoreError.damagedValue` naming table, column and value (or, for the snapshot and the
/// published file, no value: the reader reads the rows or the database), never a trap.
struct StoredValueDecoderTests {
  /// A database with every table holding a row (`PublishedStateTests.populated`).
  func populated(_ label: String) throws -> (TemporaryDirectory, StoreLocation, Store) {
    let directory = try TemporaryDirectory(label)
    let (location, writer) = try PublishedStateTests().populated(directory)
    try writer.updateSession {
      $0.dataCap = DataCap(limitBytes: 1 << 40, period: UsagePeriod(.month, monthStartDay: 3))
    }
    // 5-minute rows, not folded yet: the daily buckets are read from them (`Store.foldedThrough`).
    #expect(try writer.connection.scalar("SELECT count(*) FROM buckets WHERE granularity = 0") ?? 0 > 0)
    return (directory, location, writer)
  }

  /// Writes `sql` as another program would: on a connection of its own, which fires the file's
  /// triggers (vpnstat's writer fires none).
  func written(at location: StoreLocation, _ sql: String) throws {
    try SQLiteConnection(uri: "file:" + location.path, readOnly: false, create: false).execute(sql)
  }

  /// The damage `read` throws, with its message.
  func damage(_ read: () throws -> Void) -> (detail: String, repair: DamageRepair?)? {
    do {
      try read()
    } catch StoreError.damagedValue(_, let detail, let repair) {
      return (detail, repair)
    } catch {
      Issue.record("not damage: \(error)")
    }
    return nil
  }

  /// Each column, a value out of its range, and the read that must refuse it.
  struct Case: Sendable, CustomTestStringConvertible {
    var table: String
    var column: String
    var value: Int64
    var repair: DamageRepair?
    var place: String { "\(table).\(column)" }
    var testDescription: String { "\(place) = \(value)" }
  }

  static let cases: [Case] = [
    Case(table: "session", column: "opened_at", value: .max, repair: .sessionReset),
    Case(table: "session", column: "session_ends_at", value: .min, repair: .sessionReset),
    Case(table: "session", column: "pause_ends_at", value: 9_223_372_036_854_775_000, repair: .sessionReset),
    Case(table: "session", column: "session_length", value: .max, repair: .sessionReset),
    Case(table: "session", column: "pause_length", value: 0, repair: .sessionReset),
    Case(table: "session", column: "data_cap_bytes", value: -1, repair: .dataCap),
    Case(table: "session", column: "month_start_day", value: 99, repair: .dataCap),
    Case(table: "trusted_clock", column: "wall", value: 9_223_372_036_854_775_000, repair: .sessionReset),
    Case(table: "trusted_clock", column: "boottime", value: .min, repair: .sessionReset),
    Case(table: "stops", column: "at", value: .max, repair: nil),
    Case(table: "refusals", column: "at", value: .min, repair: nil),
    Case(table: "refusals", column: "until", value: .max, repair: nil),
    Case(table: "interfaces", column: "first_seen_at", value: .min, repair: nil),
    Case(table: "interfaces", column: "if_index", value: 1 << 40, repair: nil),
    Case(table: "interfaces", column: "width", value: 48, repair: nil),
    Case(table: "interfaces", column: "sampled_at", value: .max, repair: nil),
    Case(table: "interfaces", column: "boottime", value: -1, repair: nil),
    Case(table: "buckets", column: "start", value: .max, repair: nil),
    Case(table: "incidents", column: "last_at", value: .min, repair: nil),
  ]

  /// What reads `table` through the store's API.
  func read(_ table: String, _ store: Store) throws {
    switch table {
    case "session":
      _ = try store.sessionRecord()
    case "trusted_clock":
      _ = try store.trustedNow(ManualTimeSource().now(), writing: false)
    case "stops": _ = try store.stops()
    case "refusals": _ = try store.lastRefusal()
    case "interfaces": _ = try store.loadLedger()
    case "buckets": _ = try store.buckets(.day, since: 0)
    default: _ = try store.health()
    }
  }

  @Test(
    "each decoder refuses a value out of its kind's range, naming table, column and value, with the command that repairs it",
    arguments: cases)
  func decoders(_ damaged: Case) throws {
    let (directory, location, writer) = try populated("decoders")
    try written(at: location, "UPDATE \(damaged.table) SET \(damaged.column) = \(damaged.value)")
    let reader = try #require(try Store.open(location, intent: .read))
    let found = damage { try read(damaged.table, reader) }
    #expect(
      found?.detail.hasPrefix("\(damaged.table).\(damaged.column) holds \(damaged.value), not ") == true,
      "\(String(describing: found))")
    #expect(found?.repair == damaged.repair)
    // The same read through every path a report takes: one read transaction of everything.
    if ["session", "trusted_clock", "stops", "refusals"].contains(damaged.table) {
      #expect(damage { _ = try reader.storedSession() } != nil)
    }
    // When the ledger was last saved, for report: the trusted clock's wall.
    if damaged.place == "trusted_clock.wall" { #expect(damage { _ = try reader.lastSaved() } != nil) }
    let error = StoreError.damagedValue(path: location.path, detail: found?.detail ?? "", repair: damaged.repair)
    #expect(error.isLasting)
    #expect(error.description.contains("is damaged (\(damaged.table).\(damaged.column) holds"))
    #expect(error.description.contains(damaged.repair == nil ? "Move it aside" : "or move the file aside"))
    withExtendedLifetime(directory) {}
  }

  @Test("a window whose instants are out of order is damage, named by its three instants")
  func windowOutOfOrder() throws {
    let (directory, location, writer) = try populated("order")
    try written(at: location, "UPDATE session SET session_ends_at = opened_at - 1")
    let reader = try #require(try Store.open(location, intent: .read))
    let found = damage { _ = try reader.sessionRecord() }
    #expect(
      found?.detail.contains("not in order") == true && found?.repair == .sessionReset, "\(String(describing: found))")
    withExtendedLifetime(directory) {}
  }

  @Test(
    "counters are any UInt64: a negative integer is a counter at 2^63 or more, read as such, and a period's usage sums them by wrapping, not by SQL's sum (integer overflow, 69)"
  )
  func countersAreAnyUInt64() throws {
    let (directory, location, writer) = try populated("counters")
    try written(at: location, "UPDATE interfaces SET rx_bytes = -1, total_tx_bytes = -9223372036854775808")
    // Two days of the tunnel class at 2^63 − 1 each: SQL's sum overflowed.
    // (and its 5-minute buckets not folded into them yet)
    try written(at: location, "DELETE FROM buckets WHERE granularity IN (0, 2) AND class = 'tunnel'")
    try written(
      at: location,
      """
      INSERT INTO buckets VALUES (x'74756e30', 2, 1799971200, 'tunnel', 9223372036854775807, 0, 0, 0),
        (x'74756e30', 2, 1799884800, 'tunnel', 9223372036854775807, 0, 0, 0)
      """)
    let reader = try #require(try Store.open(location, intent: .read))
    let ledger = try reader.loadLedger()
    #expect(ledger.entries.values.allSatisfy { $0.baseline.counters.rxBytes == .max })
    #expect(ledger.entries.values.allSatisfy { $0.totals.traffic.txBytes == 1 << 63 })
    #expect(try reader.usage(since: 0, of: .tunnel).rxBytes == UInt64(Int64.max) &* 2)
    withExtendedLifetime(directory) {}
  }

  @Test(
    "clearDamaged replaces what its caller writes anew — the trusted clock, and the window or the cap when asked — and leaves everything as it was when damage lies elsewhere"
  )
  func clearDamaged() throws {
    let (directory, location, writer) = try populated("clear")
    try written(at: location, "UPDATE trusted_clock SET wall = 9223372036854775000")
    try written(at: location, "UPDATE session SET pause_length = 9223372036854775807, month_start_day = 0")
    // The cap is damaged too, and not asked for: nothing is cleared.
    let refused = damage { _ = try writer.clearDamaged(.window) }
    #expect(refused?.detail.hasPrefix("session.month_start_day holds 0") == true, "\(String(describing: refused))")
    #expect(try writer.connection.scalar("SELECT wall FROM trusted_clock") == 9_223_372_036_854_775_000)
    #expect(try writer.connection.scalar("SELECT pause_length FROM session") == Int64.max)
    let cleared = try writer.clearDamaged([.window, .dataCap])
    #expect(cleared.map(\.part) == [.trustedClock, .window, .dataCap])
    #expect(cleared.first?.description.contains("trusted_clock.wall holds 9223372036854775000") == true)
    let record = try writer.sessionRecord()
    #expect(record.window == nil && record.dataCap == nil && record.tunnel == nil)
    #expect(record.usageBase == TrafficCounts(rxBytes: 7, txBytes: 9))
    #expect(try writer.storedSession().trusted == nil)
    #expect(try writer.clearDamaged([.window, .dataCap]).isEmpty)
    withExtendedLifetime((directory, location)) {}
  }

  @Test("a ledger snapshot holding a time or width no vpnstat writes is no snapshot: readers read the rows")
  func snapshot() throws {
    let clock = ManualTimeSource()
    let entry = LedgerEntry(
      name: InterfaceName("tun0"), interfaceClass: .tunnel,
      baseline: LedgerBaseline(
        instance: InterfaceInstance(index: 4, bootID: "boot"), counters: TrafficCounts(rxBytes: .max),
        width: .bits32, wall: clock.now().wall, boottime: clock.now().boottime),
      totals: LedgerTotals(TrafficCounts(txBytes: .max), firstSeenAt: clock.now().wall))
    func decoded(_ change: (inout LedgerEntry) -> Void) -> Ledger? {
      var changed = entry
      change(&changed)
      return LedgerSnapshot.encode(Ledger(entries: [changed.name: changed])).withUnsafeBytes {
        LedgerSnapshot.decode($0, sharingBootID: nil)
      }
    }
    #expect(decoded { _ in }?.entries[InterfaceName("tun0")] == entry)
    #expect(decoded { $0.baseline.wall = Timestamp(nanoseconds: 9_223_372_036_854_775_000) } == nil)
    #expect(decoded { $0.baseline.boottime = -1 } == nil)
    #expect(decoded { $0.totals.firstSeenAt = Timestamp(nanoseconds: .min) } == nil)
    // The width: the fixed part's fourth 32-bit number (after a header of 12 bytes, the two texts
    // "tunnel" and "boot" with their lengths, and the name "tun0" with its length).
    var bytes = LedgerSnapshot.encode(Ledger(entries: [entry.name: entry]))
    let width = 12 + (4 + 6) + (4 + 4) + (4 + 4) + 12
    #expect(bytes[width] == 32)
    bytes[width] = 48
    #expect(bytes.withUnsafeBytes { LedgerSnapshot.decode($0, sharingBootID: nil) } == nil)
  }

  @Test("a published session holding a time or length no vpnstat writes is not believed: readers read the database")
  func published() throws {
    let directory = try TemporaryDirectory("published-values")
    let (location, writer) = try PublishedStateTests().populated(directory)
    let good = try writer.storedSession()
    let stamp = try #require(StoreStamp.read(database: location.path))
    let path = location.path + "." + PublishedState.suffix
    func believed(_ change: (inout StoredSession) -> Void) throws -> Bool {
      var session = good
      change(&session)
      let made = PublishedState.encode(
        stamp: stamp, session: session, health: StoreHealth(), ledger: try writer.loadLedger())
      try Data(made).write(to: URL(fileURLWithPath: path))
      return PublishedState.load(location, sharingBootID: nil) != nil
    }
    #expect(try believed { _ in })
    let far = Timestamp(nanoseconds: 9_223_372_036_854_775_000)
    #expect(try !believed { $0.record.window?.lengths.pause = .nanoseconds(Int64.max) })
    #expect(try !believed { $0.record.window?.sessionEndsAt = far })
    #expect(try !believed { $0.record.window?.openedAt = Timestamp(nanoseconds: .max) })
    #expect(try !believed { $0.trusted?.wall = far })
    #expect(try !believed { $0.trusted?.boottime = .min })
    #expect(try !believed { $0.lastStop?.at = far })
    #expect(try !believed { $0.lastRefusal?.until = Timestamp(nanoseconds: .min) })
  }
}
