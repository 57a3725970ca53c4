import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// What a person is told about time is true: a time on another day carries its date, a wait of
/// days is said in days, and "when can I connect" has one answer — the later of the pause's end
/// and the data cap's period end, with its reason.
struct TruthTests {
  static let utc = FixedOffsetCalendar.utc
  /// 2026-12-31 23:58:00 UTC: the month's cap period ends in 2 minutes, a day's too.
  static let now = Timestamp(rfc3339: "2026-12-31T23:58:00Z")!

  @Test("a time on another day than now carries its date; on now's day, the clock time alone")
  func timesCarryTheirDate() {
    let calendar = Self.utc
    #expect(Timestamp(rfc3339: "2026-12-31T23:59:30Z")!.localTime(near: Self.now, in: calendar) == "23:59:30")
    #expect(
      Timestamp(rfc3339: "2027-01-01T00:00:00Z")!.localTime(near: Self.now, in: calendar) == "2027-01-01 00:00:00")
    #expect(
      Timestamp(rfc3339: "2026-12-30T10:00:00Z")!.localTime(near: Self.now, in: calendar) == "2026-12-30 10:00:00")
    // Local days: two hours east of UTC it is already 2027-01-01 01:58, so 22:30 UTC is today.
    let east = FixedOffsetCalendar(offsetSeconds: 7200)
    #expect(Timestamp(rfc3339: "2026-12-31T22:30:00Z")!.localTime(near: Self.now, in: east) == "00:30:00")
    #expect(Timestamp(rfc3339: "2026-12-31T21:30:00Z")!.localTime(near: Self.now, in: east) == "2026-12-31 23:30:00")
  }

  @Test("a wait past a day is said in days and hours; under a day as before")
  func waitsInDays() {
    #expect(Units.duration(seconds: 678 * 3600 + 36 * 60) == "28 d 06 h")
    #expect(Units.duration(seconds: 86_400) == "1 d 00 h")
    #expect(Units.duration(seconds: 86_399) == "23 h 59 min")
    #expect(Units.duration(seconds: 125) == "2 min 5 s")
  }

  /// A pause ending at `pauseEnd`, and a cap reached whose period is `period`.
  func report(pauseEnd: Timestamp, period: PeriodLength) -> SessionReport {
    let lengths = SessionLengths(session: .seconds(60), pause: pauseEnd - (Self.now - .seconds(90)) - .seconds(60))
    let window = SessionWindow.open(at: Self.now - .seconds(90), lengths: lengths)
    let cap = DataCap(limitBytes: 80_000_000, period: UsagePeriod(period))
    return SessionReport.make(
      SessionRecord(window: window), now: Self.now, tunnelUp: false, nextLengths: .release, tunnelTotals: .zero,
      lastStop: nil, enforcer: nil,
      dataCap: cap.status(used: TrafficCounts(rxBytes: 90_000_000), at: Self.now, in: Self.utc))
  }

  @Test(
    "paused, and a monthly cap reached until the new year: one answer, the cap's — in the headline, the gate's refusal and the refusal recorded"
  )
  func capOutlastsPause() throws {
    let report = report(pauseEnd: Self.now + .seconds(108), period: .month)
    #expect(report.state == .paused)
    let block = try #require(report.connectBlock)
    #expect(block.reason == .dataCap)
    #expect(block.until == Timestamp(rfc3339: "2027-01-01T00:00:00Z"))
    let headline = SessionText.headline(report, calendar: Self.utc)
    #expect(headline.contains("data cap reached: connecting is refused until 2027-01-01 00:00:00"), "\(headline)")
    #expect(!headline.contains("reconnect in"), "\(headline)")
    let refusal = try #require(SessionText.refusal(report, calendar: Self.utc))
    #expect(refusal.hasPrefix("data cap reached: ≈ 90.0 MB of 80.0 MB this month"), "\(refusal)")
    let recorded = try #require(Refusal.of(report, interface: nil, by: .gate))
    #expect(recorded.reason == .dataCap && recorded.until == block.until)
    let line = RefusalText.line(recorded, now: Self.now, calendar: Self.utc)
    #expect(line.contains("(until 2027-01-01 00:00:00)"), "\(line)")
  }

  @Test("a cap whose period ends before the pause does: the pause is the answer, with its own time")
  func pauseOutlastsCap() throws {
    let pauseEnd = Self.now + .seconds(600)
    let report = report(pauseEnd: pauseEnd, period: .day)
    let block = try #require(report.connectBlock)
    #expect(block.reason == .pause && block.until == pauseEnd)
    let headline = SessionText.headline(report, calendar: Self.utc)
    #expect(headline.contains("reconnect in 10 min (at 2027-01-01 00:08:00)"), "\(headline)")
    #expect(try #require(SessionText.refusal(report, calendar: Self.utc)).hasPrefix("free plan pause"))
    #expect(Refusal.of(report, interface: nil, by: .connect)?.reason == .pause)
  }
}
