import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// The rules issue 24 asked for, without a kernel: a reader's unsaved traffic goes into the
/// current bucket of each granularity (so history, alerts and caps give `status`'s figure), the
/// first-run summary of today and this month, and the next window's lengths as the enforcer
/// that opens it has them.
struct FirstMinutesRuleTests {
  let utc = FixedOffsetCalendar.utc
  func at(_ text: String) -> Timestamp { Timestamp(rfc3339: text)! }

  func observation(
    _ name: String, _ rx: UInt64, _ tx: UInt64, at time: String, index: Int32 = 4,
    class interfaceClass: InterfaceClass = .tunnel
  ) -> LedgerObservation {
    let wall = at(time)
    return LedgerObservation(
      name: InterfaceName(name), interfaceClass: interfaceClass,
      baseline: LedgerBaseline(
        instance: InterfaceInstance(index: index, bootID: "boot-a"),
        counters: TrafficCounts(rxBytes: rx, txBytes: tx, rxPackets: rx / 100, txPackets: tx / 100), width: .bits64,
        wall: wall, boottime: (wall.seconds - 1_700_000_000) * 1_000_000_000),
      plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
  }

  /// The stored ledger: wg0 and wlan0 first seen at 10:00, wg0 saved again at 11:58 with
  /// 1,000 B received and 100 B sent.
  func stored() -> Ledger {
    var ledger = Ledger()
    _ = ledger.advance([
      observation("wg0", 5_000, 500, at: "2026-11-25T10:00:00Z"),
      observation("wlan0", 70_000, 9_000, at: "2026-11-25T10:00:00Z", class: .wifi),
    ])
    _ = ledger.advance([observation("wg0", 6_000, 600, at: "2026-11-25T11:58:00Z")])
    return ledger
  }

  @Test(
    "a reader's unsaved traffic: each name's growth past the stored totals, in the bucket of every granularity holding its reading"
  )
  func unsavedInTheCurrentBuckets() {
    let stored = stored()
    var reader = stored
    // The reader's sample at 12:03:10: wg0 moved 4,000 / 400 B since the save, wlan0 nothing,
    // eth0 is new to it (its starting point: nothing booked).
    _ = reader.advance([
      observation("wg0", 10_000, 1_000, at: "2026-11-25T12:03:10Z"),
      observation("wlan0", 70_000, 9_000, at: "2026-11-25T12:03:10Z", class: .wifi),
      observation("eth0", 123_456, 7_890, at: "2026-11-25T12:03:10Z", class: .ethernet),
    ])
    let unsaved = UnsavedTraffic(reading: reader, past: stored, calendar: utc)
    let starts: [TrafficGranularity: String] = [
      .fiveMinutes: "2026-11-25T12:00:00Z", .hour: "2026-11-25T12:00:00Z", .day: "2026-11-25T00:00:00Z",
      .month: "2026-11-01T00:00:00Z",
    ]
    for (granularity, start) in starts {
      let buckets = unsaved.buckets(granularity, since: 0)
      #expect(buckets.count == 1, "\(granularity): \(buckets)")
      #expect(buckets.first?.name == InterfaceName("wg0"))
      #expect(buckets.first?.interfaceClass == .tunnel)
      #expect(buckets.first?.start == at(start).seconds, "\(granularity)")
      #expect(buckets.first?.traffic.rxBytes == 4_000 && buckets.first?.traffic.txBytes == 400, "\(granularity)")
      // Buckets before `since` are left out, as the stored ones are.
      #expect(unsaved.buckets(granularity, since: at(start).seconds + 1).isEmpty)
    }
    #expect(unsaved.traffic(.day, since: at("2026-11-25T00:00:00Z").seconds, of: .tunnel, name: nil).bytes == 4_400)
    #expect(unsaved.traffic(.day, since: 0, of: .wifi, name: nil).isZero)
    #expect(unsaved.traffic(.day, since: 0, of: .ethernet, name: nil).isZero)
    // The history's current row: the stored buckets plus these.
    let storedBucket = TrafficBucket(
      name: InterfaceName("wg0"), start: at("2026-11-25T00:00:00Z").seconds, interfaceClass: .tunnel,
      traffic: TrafficCounts(rxBytes: 1_000, txBytes: 100))
    let history = TrafficHistory.make(
      buckets: [storedBucket] + unsaved.buckets(.day, since: 0), granularity: .day, count: 2,
      now: at("2026-11-25T12:03:10Z"), grouping: .class, selection: InterfaceSelection(), calendar: utc)
    #expect(history.series.first?.rows.last?.traffic.rxBytes == 5_000)
    #expect(history.series.first?.rows.last?.traffic.txBytes == 500)
  }

  @Test("a save newer than the reader's sample is not taken back: no name books less than nothing")
  func newerSaveBooksNothing() {
    let older = stored()
    var newer = older
    _ = newer.advance([observation("wg0", 9_000, 900, at: "2026-11-25T12:04:00Z")])
    var reader = older
    _ = reader.advance([observation("wg0", 8_000, 800, at: "2026-11-25T12:03:59Z")])
    let unsaved = UnsavedTraffic(reading: reader, past: newer, calendar: utc)
    #expect(unsaved.buckets(.day, since: 0).isEmpty)
    // Against the ledger it loaded, the same reader books its growth.
    #expect(
      UnsavedTraffic(reading: reader, past: older, calendar: utc).traffic(.day, since: 0, of: nil, name: nil).bytes
        == 2_200)
  }

  @Test("the summary: today, yesterday, this month and last month, zero where nothing moved, with projections")
  func summary() {
    let now = at("2026-11-25T12:00:00Z")
    func bucket(_ start: String, _ rx: UInt64, name: String = "wg0", _ interfaceClass: InterfaceClass = .tunnel)
      -> TrafficBucket
    {
      TrafficBucket(
        name: InterfaceName(name), start: at(start).seconds, interfaceClass: interfaceClass,
        traffic: TrafficCounts(rxBytes: rx, txBytes: rx / 10))
    }
    let days = [bucket("2026-11-25T00:00:00Z", 1_500), bucket("2026-11-20T00:00:00Z", 8_000)]
    let months = [
      bucket("2026-10-01T00:00:00Z", 14_500), bucket("2026-11-01T00:00:00Z", 9_500),
      bucket("2026-10-01T00:00:00Z", 2_000, name: "wlan0", .wifi),
    ]
    func history(_ buckets: [TrafficBucket], _ granularity: TrafficGranularity, _ grouping: TrafficHistory.Grouping)
      -> TrafficHistory
    {
      TrafficHistory.make(
        buckets: buckets, granularity: granularity, count: 2, now: now, grouping: grouping,
        selection: InterfaceSelection(), calendar: utc)
    }
    let summary = UsageSummary.make(
      days: history(days, .day, .class), months: history(months, .month, .class),
      monthsByInterface: history(months, .month, .interface))
    #expect(summary.series.map(\.interfaceClass) == [.tunnel, .wifi])
    let tunnel = summary.series[0]
    #expect(tunnel.members == [InterfaceName("wg0")])
    #expect(tunnel.lines.map(\.period) == [.today, .yesterday, .thisMonth, .lastMonth])
    #expect(tunnel.lines.map(\.row.traffic.rxBytes) == [1_500, 0, 9_500, 14_500])
    #expect(
      tunnel.lines.map(\.row.start) == [
        at("2026-11-25T00:00:00Z").seconds, at("2026-11-24T00:00:00Z").seconds, at("2026-11-01T00:00:00Z").seconds,
        at("2026-10-01T00:00:00Z").seconds,
      ])
    // Half of today passed: twice today's traffic. 24.5 of November's 30 days passed.
    #expect(tunnel.lines[0].estimate?.projected.rxBytes == 3_000)
    #expect(tunnel.lines[2].estimate?.projected.rxBytes == 11_633)  // 9,500 × 30 / 24.5
    #expect(tunnel.lines[1].estimate == nil && tunnel.lines[3].estimate == nil)
    // Wi-Fi moved only last month: it is shown, with zeros for the rest.
    #expect(summary.series[1].lines.map(\.row.traffic.rxBytes) == [0, 0, 0, 2_000])
  }

  @Test("the next window's lengths are the running enforcer's: its own word, else its window's, else the reader's")
  func nextLengthsAreTheEnforcers() {
    let reader = SessionLengths(session: .seconds(900), pause: .seconds(2700))
    let enforcerLengths = SessionLengths(session: .seconds(30), pause: .seconds(60))
    let window = SessionWindow.open(at: at("2026-11-25T12:00:00Z"), lengths: enforcerLengths)
    let record = SessionRecord(window: window, tunnel: InterfaceName("wg0"))
    let since = at("2026-11-25T11:00:00Z")
    let saying = EnforcerPresence(
      pid: 42, startTime: 1, since: since, action: "auto", tunnel: InterfaceName("wg0"), lengths: enforcerLengths)
    let silent = EnforcerPresence(pid: 42, startTime: 1, since: since, action: "auto", tunnel: InterfaceName("wg0"))
    #expect(SessionReport.nextLengths(given: reader, record: SessionRecord(), enforcer: saying) == enforcerLengths)
    #expect(SessionReport.nextLengths(given: reader, record: record, enforcer: silent) == enforcerLengths)
    #expect(SessionReport.nextLengths(given: reader, record: SessionRecord(), enforcer: silent) == reader)
    #expect(SessionReport.nextLengths(given: reader, record: record, enforcer: nil) == reader)
    let report = SessionReport.make(
      record, now: at("2026-11-25T12:00:10Z"), tunnelUp: true, nextLengths: reader, tunnelTotals: nil,
      lastStop: nil, enforcer: saying)
    #expect(report.nextLengths == enforcerLengths)
    // The presence file carries them, and one from before them still reads.
    let read = EnforcerPresence(parsing: saying.text)
    #expect(read == saying)
    #expect(EnforcerPresence(parsing: silent.text)?.lengths == nil)
    #expect(
      EnforcerPresence(parsing: saying.text.replacingOccurrences(of: "pause_length_ns=", with: "pause_length_ns=-"))?
        .lengths == nil)
  }
}
