import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The hourly, daily and monthly buckets as the 5-minute ones folded in once closed
/// (`Store.foldedThrough`): a save writes the 5-minute rows only, and every reader still gets
/// what was booked into each bucket of each granularity.
struct BucketFoldTests {
  /// UTC+5:30: local hours are not whole hours of Unix time.
  let calendar = FixedOffsetCalendar(offsetSeconds: 19_800)
  /// 2027-01-15 10:00 UTC, a 5-minute boundary.
  let base: Int64 = 1_800_000_000 - 1_800_000_000 % 300

  struct Key: Hashable {
    var granularity: TrafficGranularity
    var start: Int64
    var name: InterfaceName
  }

  /// What was booked, as the model books it: into the bucket of every granularity holding `at`.
  struct Booked {
    var sums: [Key: UInt64] = [:]
  }

  /// Books `rx` bytes of `name` at `at` (Unix seconds) in one save made at `now` (default `at`).
  func book(
    _ store: Store, _ name: String, rx: UInt64, at: Int64, now: Int64? = nil, into booked: inout Booked
  ) throws {
    let interfaceName = InterfaceName(name)
    var rows: [(granularity: TrafficGranularity, bucket: TrafficBucket)] = []
    for granularity in TrafficGranularity.allCases {
      let start = granularity.start(of: Timestamp(seconds: at), in: calendar)
      rows.append(
        (
          granularity,
          TrafficBucket(
            name: interfaceName, start: start, interfaceClass: .tunnel, traffic: TrafficCounts(rxBytes: rx))
        ))
      booked.sums[Key(granularity: granularity, start: start, name: interfaceName), default: 0] += rx
    }
    try store.saveLedger(now: Timestamp(seconds: now ?? at)) { _ in ((), LedgerCheckpoint(entries: [], buckets: rows)) }
  }

  /// Every granularity's buckets as a reader sums them.
  func read(_ store: Store) throws -> [Key: UInt64] {
    var sums: [Key: UInt64] = [:]
    for granularity in TrafficGranularity.allCases {
      for bucket in try store.buckets(granularity, since: 0) {
        sums[Key(granularity: granularity, start: bucket.start, name: bucket.name), default: 0] +=
          bucket.traffic.rxBytes
      }
    }
    return sums
  }

  /// The `interfaces` table as schema 1 made it (schema 7 made it anew).
  var schemaOneInterfaces: String {
    let first = Store.migrations[0]
    return String(first[..<first.range(of: "CREATE TABLE buckets")!.lowerBound])
  }

  func rows(_ store: Store, _ granularity: TrafficGranularity) throws -> Int64 {
    try store.connection.scalar(
      "SELECT count(*) FROM buckets WHERE granularity = ?", [.integer(Int64(granularity.rawValue))])
      ?? 0
  }

  @Test(
    "a save writes the 5-minute rows only; closed ones spanning a quarter hour are folded in; readers read every granularity as booked, in a local calendar"
  )
  func foldsClosedBuckets() throws {
    let directory = try TemporaryDirectory("fold")
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: calendar))
    var booked = Booked()
    // Four saves a minute apart in one 5-minute bucket, two interfaces.
    for minute in 0..<4 {
      try book(store, "tun0", rx: 100 + UInt64(minute), at: base + Int64(minute) * 60, into: &booked)
      try book(store, "wg1", rx: 7, at: base + Int64(minute) * 60 + 1, into: &booked)
    }
    #expect(try rows(store, .fiveMinutes) == 2)
    #expect(try rows(store, .hour) == 0 && rows(store, .day) == 0 && rows(store, .month) == 0)
    #expect(try read(store) == booked.sums)
    #expect(
      try store.usage(since: TrafficGranularity.day.start(of: Timestamp(seconds: base), in: calendar), of: .tunnel)
        .rxBytes == 434)
    // The next 5-minute buckets: the closed ones wait until they span a quarter hour
    // (`Store.foldSpan`), then are folded; the open one is not.
    try book(store, "tun0", rx: 1000, at: base + 300, into: &booked)
    try book(store, "wg1", rx: 9, at: base + 605, into: &booked)
    #expect(try rows(store, .hour) == 0 && rows(store, .day) == 0 && rows(store, .month) == 0)
    #expect(try store.foldedThrough() == base)
    #expect(try read(store) == booked.sums)
    try book(store, "tun0", rx: 1001, at: base + 900, into: &booked)
    #expect(try rows(store, .hour) == 2 && rows(store, .day) == 2 && rows(store, .month) == 2)
    #expect(try store.foldedThrough() == base + 900)
    #expect(try read(store) == booked.sums)
    // Across the local hour's end (:30 UTC here) and a day's: each closed bucket folded once.
    for step in 2..<30 {
      try book(
        store, step % 2 == 0 ? "tun0" : "wg1", rx: UInt64(step), at: base + Int64(step) * 300 + 17, into: &booked)
      #expect(try read(store) == booked.sums)
    }
    // Each local hour of a closed bucket, each interface: one row.
    let through = try #require(try store.foldedThrough())
    let foldedHours = Set(
      booked.sums.keys.filter { $0.granularity == .fiveMinutes && $0.start < through }.map {
        Key(
          granularity: .hour, start: TrafficGranularity.hour.start(of: Timestamp(seconds: $0.start), in: calendar),
          name: $0.name)
      })
    #expect(foldedHours.count > 4, "more than two local hours")
    #expect(try rows(store, .hour) == Int64(foldedHours.count))
    let day = TrafficGranularity.day.start(of: Timestamp(seconds: base), in: calendar)
    let tunnelToday = booked.sums.filter { $0.key.granularity == .day && $0.key.start >= day }.values.reduce(0, +)
    #expect(try store.usage(since: day, of: .tunnel).rxBytes == tunnelToday)
    // A reader's connection reads the same.
    let reader = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .read, calendar: calendar))
    #expect(try read(reader) == booked.sums)
  }

  @Test(
    "a booking into a bucket already folded (a clock set back) goes into the coarser buckets at once; the mark stays")
  func clockSetBack() throws {
    let directory = try TemporaryDirectory("fold-back")
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: calendar))
    var booked = Booked()
    try book(store, "tun0", rx: 5, at: base, into: &booked)
    try book(store, "tun0", rx: 6, at: base + 3600, into: &booked)
    #expect(try store.foldedThrough() == base + 3600)
    let hourRows = try rows(store, .hour)
    // The clock went back two hours: a local hour no save wrote yet.
    try book(store, "tun0", rx: 70, at: base - 3600, into: &booked)
    #expect(try store.foldedThrough() == base + 3600)
    #expect(try rows(store, .hour) == hourRows + 1, "the earlier hour written at once")
    #expect(try read(store) == booked.sums)
    withExtendedLifetime(directory) {}
  }

  @Test(
    "a schema-5 database: its buckets were written at every save, so the mark goes after its last 5-minute bucket; what it held reads the same"
  )
  func migration() throws {
    let directory = try TemporaryDirectory("fold-migrate")
    let path = directory.file("v.db")
    var booked = Booked()
    do {
      let store = try #require(try Store.open(StoreLocation(path: path), intent: .write, calendar: calendar))
      try book(store, "tun0", rx: 11, at: base + 60, into: &booked)
      try book(store, "tun0", rx: 12, at: base + 400, into: &booked)
      // As schema 5 left it: every granularity written, no mark.
      try store.connection.execute(
        """
        DELETE FROM buckets WHERE granularity > 0;
        INSERT INTO buckets (name, granularity, start, class, rx_bytes, tx_bytes, rx_packets, tx_packets)
          SELECT name, 1, \(TrafficGranularity.hour.start(of: Timestamp(seconds: base), in: calendar)), class,
            sum(rx_bytes), 0, 0, 0 FROM buckets WHERE granularity = 0 GROUP BY name;
        INSERT INTO buckets (name, granularity, start, class, rx_bytes, tx_bytes, rx_packets, tx_packets)
          SELECT name, 2, \(TrafficGranularity.day.start(of: Timestamp(seconds: base), in: calendar)), class,
            sum(rx_bytes), 0, 0, 0 FROM buckets WHERE granularity = 0 GROUP BY name;
        INSERT INTO buckets (name, granularity, start, class, rx_bytes, tx_bytes, rx_packets, tx_packets)
          SELECT name, 3, \(TrafficGranularity.month.start(of: Timestamp(seconds: base), in: calendar)), class,
            sum(rx_bytes), 0, 0, 0 FROM buckets WHERE granularity = 0 GROUP BY name;
        DROP TABLE bucket_fold;
        DROP TABLE boots;
        DROP TABLE interfaces;
        \(schemaOneInterfaces);
        PRAGMA user_version = 5;
        """)
    }
    let store = try #require(try Store.open(StoreLocation(path: path), intent: .write, calendar: calendar))
    #expect(try store.foldedThrough() == base + 600)
    #expect(try read(store) == booked.sums)
    // A booking in that last bucket is in the coarser ones at once; the next bucket's is folded later.
    try book(store, "tun0", rx: 13, at: base + 500, into: &booked)
    try book(store, "tun0", rx: 14, at: base + 700, into: &booked)
    #expect(try read(store) == booked.sums)
    try book(store, "tun0", rx: 15, at: base + 1000, into: &booked)
    #expect(try store.foldedThrough() == base + 600)
    #expect(try read(store) == booked.sums)
    try book(store, "tun0", rx: 16, at: base + 1600, into: &booked)
    #expect(try store.foldedThrough() == base + 1500)
    #expect(try read(store) == booked.sums)
    withExtendedLifetime(directory) {}
  }
}
