import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// The rules behind reports and data caps: periods of the local calendar (billing months like
/// vnStat's MonthRotate), a cap's status, the range bounds people type, top rows and the
/// current period's projection — each against figures worked out by hand.
struct ReportRuleTests {
  let utc = FixedOffsetCalendar.utc
  func at(_ text: String) -> Timestamp { Timestamp(rfc3339: text)! }
  func seconds(_ text: String) -> Int64 { at(text).seconds }

  @Test(
    "periods: a day from midnight, a week from Monday, a month from its start day (the previous month's before it)",
    arguments: [
      (PeriodLength.day, 1, "2026-11-25T12:00:00Z", "2026-11-25T00:00:00Z", "2026-11-26T00:00:00Z"),
      (.week, 1, "2026-11-25T12:00:00Z", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"),  // a Wednesday
      (.week, 1, "2026-11-29T23:59:59Z", "2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z"),  // a Sunday
      (.week, 1, "2026-11-30T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z"),  // a Monday
      (.month, 1, "2026-11-25T12:00:00Z", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"),
      (.month, 15, "2026-11-25T12:00:00Z", "2026-11-15T00:00:00Z", "2026-12-15T00:00:00Z"),
      (.month, 15, "2026-11-14T23:59:59Z", "2026-10-15T00:00:00Z", "2026-11-15T00:00:00Z"),
      (.month, 15, "2026-11-15T00:00:00Z", "2026-11-15T00:00:00Z", "2026-12-15T00:00:00Z"),
      (.month, 15, "2026-01-10T00:00:00Z", "2025-12-15T00:00:00Z", "2026-01-15T00:00:00Z"),  // across a year
      (.month, 28, "2026-03-01T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-28T00:00:00Z"),  // February
    ])
  func periods(length: PeriodLength, day: Int, time: String, start: String, end: String) {
    let period = UsagePeriod(length, monthStartDay: day)
    let bounds = period.bounds(at: at(time), in: utc)
    #expect(bounds.start == seconds(start), "\(length) from \(day) at \(time)")
    #expect(bounds.end == seconds(end), "\(length) from \(day) at \(time)")
  }

  @Test("a month from the 15th in UTC+5:30 starts at local midnight, not UTC's")
  func periodsFollowTheLocalCalendar() {
    let india = FixedOffsetCalendar(offsetSeconds: 5 * 3600 + 1800)
    let bounds = UsagePeriod(.month, monthStartDay: 15).bounds(at: at("2026-11-14T20:00:00Z"), in: india)
    // 2026-11-14T20:00Z is 2026-11-15 01:30 local: the new month has begun, at 18:30 UTC.
    #expect(bounds.start == seconds("2026-11-14T18:30:00Z"))
    #expect(bounds.end == seconds("2026-12-14T18:30:00Z"))
  }

  @Test("month start days outside 1…28 are clamped; labels name the start day")
  func monthStartDays() {
    #expect(UsagePeriod(.month, monthStartDay: 31).monthStartDay == 28)
    #expect(UsagePeriod(.month, monthStartDay: 0).monthStartDay == 1)
    #expect(UsagePeriod(.month, monthStartDay: 15).label == "month from the 15th")
    #expect(UsagePeriod(.month, monthStartDay: 1).label == "month")
    #expect(UsagePeriod(.week).label == "week")
    #expect(
      ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd"]
        == [1, 2, 3, 4, 11, 12, 13, 21, 22, 23].map(UsagePeriod.ordinal))
  }

  @Test("a cap is reached at exactly its limit (both directions counted), not a byte before")
  func capStatus() {
    let cap = DataCap(limitBytes: 5_000_000, period: UsagePeriod(.day))
    let now = at("2026-11-25T12:00:00Z")
    let below = cap.status(used: TrafficCounts(rxBytes: 4_000_000, txBytes: 999_999), at: now, in: utc)
    #expect(!below.reached)
    #expect(below.leftBytes == 1)
    #expect(below.usedBytes == 4_999_999)
    let exactly = cap.status(used: TrafficCounts(rxBytes: 4_000_000, txBytes: 1_000_000), at: now, in: utc)
    #expect(exactly.reached)
    #expect(exactly.leftBytes == 0)
    #expect(exactly.percent == 100)
    let over = cap.status(used: TrafficCounts(rxBytes: 6_000_000, txBytes: 1_500_000), at: now, in: utc)
    #expect(over.reached && over.leftBytes == 0 && over.percent == 150)
    #expect(over.periodStart == at("2026-11-25T00:00:00Z"))
    #expect(over.periodEnd == at("2026-11-26T00:00:00Z"))
  }

  @Test("a reached cap refuses connecting in the report, whatever the window says; premium too")
  func capRefusesConnecting() {
    let now = at("2026-11-25T12:00:00Z")
    let cap = DataCap(limitBytes: 100, period: UsagePeriod(.month))
    for plan in Plan.allCases {
      let record = SessionRecord(plan: plan, dataCap: cap)
      let reached = cap.status(used: TrafficCounts(rxBytes: 100), at: now, in: utc)
      let report = SessionReport.make(
        record, now: now, tunnelUp: false, nextLengths: .release, tunnelTotals: .zero, lastStop: nil,
        dataCap: reached)
      #expect(!report.canConnect, "\(plan)")
      let below = cap.status(used: TrafficCounts(rxBytes: 99), at: now, in: utc)
      let allowed = SessionReport.make(
        record, now: now, tunnelUp: false, nextLengths: .release, tunnelTotals: .zero, lastStop: nil, dataCap: below)
      #expect(allowed.canConnect, "\(plan)")
    }
  }

  @Test(
    "range bounds: RFC 3339 instants and local dates; a date as an end includes its day; nonsense is refused",
    arguments: [
      ("2026-11-29", "2026-11-29T00:00:00Z", "2026-11-30T00:00:00Z"),
      ("2026-02-28", "2026-02-28T00:00:00Z", "2026-03-01T00:00:00Z"),
      ("2024-02-29", "2024-02-29T00:00:00Z", "2024-03-01T00:00:00Z"),
      ("2026-11-29T12:30:00Z", "2026-11-29T12:30:00Z", "2026-11-29T12:30:00Z"),
      ("2026-11-29T12:30:00+02:00", "2026-11-29T10:30:00Z", "2026-11-29T10:30:00Z"),
      ("2026-11-29T12:30:00.5Z", "2026-11-29T12:30:00Z", "2026-11-29T12:30:01Z"),
    ])
  func bounds(text: String, start: String, end: String) throws {
    let bound = try #require(TimeBound(parsing: text))
    #expect(bound.start(in: utc) == seconds(start))
    #expect(bound.end(in: utc) == seconds(end))
  }

  @Test("dates that do not exist and other garbage are not range bounds")
  func badBounds() {
    for text in [
      "2026-02-29", "2026-02-30", "2026-13-01", "2026-00-10", "2026-11-31", "1969-12-31", "2026-1-5", "yesterday", "",
      "2026-11-29T25:00:00Z", "２０２６-11-29", "2026-11-29 ", "-2026-11-29",
    ] {
      #expect(TimeBound(parsing: text) == nil, "\(text)")
    }
  }

  /// Daily buckets of the report fixture's days.
  var fixtureDays: [TrafficBucket] {
    ReportFixture.days.map { day in
      TrafficBucket(
        name: ReportFixture.tunnel, start: seconds(day.date + "T00:00:00Z"), interfaceClass: .tunnel,
        traffic: TrafficCounts(rxBytes: day.rx, txBytes: day.rx / 10))
    }
  }

  @Test("billing months from the 15th are summed from daily buckets, each day in the month it falls in")
  func billingMonths() throws {
    let history = TrafficHistory.make(
      buckets: fixtureDays, granularity: .month, count: 3, now: ReportFixture.now, grouping: .class,
      selection: InterfaceSelection(), calendar: utc, monthStartDay: 15)
    let rows = try #require(history.series.first?.rows)
    #expect(rows.map(\.start) == ["2026-09-15", "2026-10-15", "2026-11-15"].map { seconds($0 + "T00:00:00Z") })
    #expect(rows.map(\.end) == ["2026-10-15", "2026-11-15", "2026-12-15"].map { seconds($0 + "T00:00:00Z") })
    #expect(rows.map(\.traffic.rxBytes) == [4500, 18_000, 10_500])
    #expect(rows.map(\.traffic.txBytes) == [450, 1800, 1050])
    // A row holds exactly its days: the 14th and the 15th of October fall in different months.
    #expect(HistoryRows(.month, monthStartDay: 15).source == .day)
    #expect(HistoryRows(.month).source == .month)
  }

  @Test("the current period's projection: 10,500 B in 10.5 of 30 days is 30,000 B; the average is per second")
  func projection() throws {
    let history = TrafficHistory.make(
      buckets: fixtureDays, granularity: .month, count: 3, now: ReportFixture.now, grouping: .class,
      selection: InterfaceSelection(), calendar: utc, monthStartDay: 15)
    let current = try #require(history.series.first?.current)
    #expect(current.row.start == seconds("2026-11-15T00:00:00Z"))
    #expect(current.elapsedSeconds == 10.5 * 86_400)
    #expect(current.projected.rxBytes == 30_000)
    #expect(current.projected.txBytes == 3000)
    #expect(abs(current.averageRate.rxBytesPerSecond - 10_500 / 907_200) < 1e-12)
    // Today: 1,500 B by noon is 3,000 B for the day.
    let days = TrafficHistory.make(
      buckets: fixtureDays, granularity: .day, count: 30, now: ReportFixture.now, grouping: .class,
      selection: InterfaceSelection(), calendar: utc)
    let today = try #require(days.series.first?.current)
    #expect(today.projected.rxBytes == 3000 && today.projected.txBytes == 300)
    // A range that ends before now has no current period.
    var past = TrafficHistory.make(
      buckets: fixtureDays, rows: HistoryRows(.day), from: seconds("2026-10-01T00:00:00Z"),
      until: seconds("2026-11-01T00:00:00Z"), now: ReportFixture.now, grouping: .class,
      selection: InterfaceSelection(), calendar: utc)
    #expect(past.series.first?.current == nil)
    past = past.top(5)
    #expect(past.series.first?.rows.map(\.traffic.rxBytes) == [7000, 4000, 3000, 500])
  }

  @Test("no projection in a period's first second, nor past its end")
  func projectionBounds() {
    let row = TrafficHistory.Row(start: 1000, end: 1000 + 86_400, traffic: TrafficCounts(rxBytes: 10))
    #expect(PeriodEstimate.of(row, at: Timestamp(seconds: 1000)) == nil)
    #expect(PeriodEstimate.of(row, at: Timestamp(seconds: 1000 + 86_400)) == nil)
    #expect(PeriodEstimate.of(row, at: Timestamp(seconds: 1001))?.projected.rxBytes == 864_000)
  }

  @Test("top days: the busiest first by both directions, ties to the earlier, empty days never ranked")
  func topDays() throws {
    let history = TrafficHistory.make(
      buckets: fixtureDays, granularity: .day, count: 100, now: ReportFixture.now, grouping: .class,
      selection: InterfaceSelection(), calendar: utc)
    let top = history.top(5)
    let rows = try #require(top.series.first?.rows)
    #expect(
      rows.map(\.start)
        == ["2026-11-20", "2026-10-31", "2026-11-14", "2026-10-14", "2026-10-15"].map {
          seconds($0 + "T00:00:00Z")
        })
    #expect(rows.map(\.traffic.bytes) == [8800, 7700, 6600, 4400, 3300])
    #expect(top.order == .top && top.series.first?.current == nil)
    // More than there are days with traffic: only those.
    #expect(history.top(700).series.first?.rows.count == ReportFixture.days.count)
    var tie = fixtureDays
    tie.append(
      TrafficBucket(
        name: InterfaceName("wg1"), start: seconds("2026-11-02T00:00:00Z"), interfaceClass: .tunnel,
        traffic: TrafficCounts(rxBytes: 8000, txBytes: 800)))
    let tied = TrafficHistory.make(
      buckets: tie, granularity: .day, count: 100, now: ReportFixture.now, grouping: .class,
      selection: InterfaceSelection(), calendar: utc
    ).top(2)
    #expect(tied.series.first?.rows.map(\.start) == [seconds("2026-11-02T00:00:00Z"), seconds("2026-11-20T00:00:00Z")])
  }
}
