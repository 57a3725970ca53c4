import Foundation

import VPNStatModel
import VPNStatStore

/// A database with hand-picked tunnel traffic on hand-picked days (UTC), built through the
/// store's API as a recorder would, for reports checked against figures worked out by hand.
///
/// Each day's received bytes (sent: a tenth of it), on `wg0`, at 06:00 UTC:
///
///     2026-10-10    500      2026-11-01  2,000      2026-11-25  1,500 (today: "now" is 12:00)
///     2026-10-14  4,000      2026-11-14  6,000
///     2026-10-15  3,000      2026-11-15  1,000
///     2026-10-31  7,000      2026-11-20  8,000
///
/// By hand: the five busiest days (rx + tx) are 11-20 (8,800), 10-31 (7,700), 11-14 (6,600),
/// 10-14 (4,400), 10-15 (3,300). Months from the 15th: 09-15…10-14 4,500 rx; 10-15…11-14
/// 18,000 rx; 11-15…12-14 (current) 10,500 rx. Calendar months: October 14,500, November
/// 18,500. The current month from the 15th is 30 days long and 10.5 days old at "now": its
/// projection is 10,500 × 30 / 10.5 = 30,000 rx and 3,000 tx; today's is 3,000 rx, 300 tx.
enum ReportFixture {
  static let days: [(date: String, rx: UInt64)] = [
    ("2026-10-10", 500), ("2026-10-14", 4000), ("2026-10-15", 3000), ("2026-10-31", 7000),
    ("2026-11-01", 2000), ("2026-11-14", 6000), ("2026-11-15", 1000), ("2026-11-20", 8000),
    ("2026-11-25", 1500),
  ]
  static let now = Timestamp(rfc3339: "2026-11-25T12:00:00Z")!
  static let tunnel = InterfaceName("wg0")

  /// Writes the fixture's traffic into a new database at `path` (UTC buckets).
  static func make(at path: String) throws {
    guard let store = try Store.open(StoreLocation(path: path), intent: .write, calendar: FixedOffsetCalendar.utc)
    else { throw TestSetupError("cannot create \(path)") }
    var rx: UInt64 = 0
    var boottime: Int64 = 1_000_000_000
    func advance(at wall: Timestamp) throws {
      let observation = LedgerObservation(
        name: tunnel, interfaceClass: .tunnel,
        baseline: LedgerBaseline(
          instance: InterfaceInstance(index: 7, bootID: "fixture"),
          counters: TrafficCounts(rxBytes: rx, txBytes: rx / 10, rxPackets: rx / 100, txPackets: rx / 1000),
          width: .bits64, wall: wall, boottime: boottime),
        plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
      _ = try store.advanceLedger([observation], now: wall)
    }
    // The first sight of the name books nothing: it is the baseline.
    var last = Timestamp(rfc3339: "2026-10-01T00:00:00Z")!
    try advance(at: last)
    for day in days {
      let wall = Timestamp(rfc3339: day.date + "T06:00:00Z")!
      boottime += (wall - last).nanoseconds
      last = wall
      rx += day.rx
      try advance(at: wall)
    }
  }
}
