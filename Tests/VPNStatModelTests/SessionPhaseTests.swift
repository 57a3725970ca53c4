import Testing

@testable import VPNStatModel

/// `SessionPhase`: the one place the stage of the free plan and "when can I connect" are
/// decided, at the instants where they change.
struct SessionPhaseTests {
  let t0 = Timestamp(seconds: 1_800_000_000)
  var window: SessionWindow {
    SessionWindow.open(at: t0, lengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)))
  }
  let cap = DataCap(limitBytes: 5_000_000, period: UsagePeriod(.day))

  func status(_ bytes: UInt64, at: Timestamp) -> DataCapStatus {
    cap.status(used: TrafficCounts(rxBytes: bytes, txBytes: 0), at: at, in: FixedOffsetCalendar.utc)
  }

  @Test(
    "the stage at each instant where it changes: active until the deadline, the pause from it, over at the pause's end")
  func stages() {
    let record = SessionRecord(window: window)
    #expect(SessionPhase(record, at: t0).stage == .active(window))
    #expect(SessionPhase(record, at: window.sessionEndsAt - .nanoseconds(1)).stage == .active(window))
    #expect(SessionPhase(record, at: window.sessionEndsAt).stage == .pause(window))
    #expect(SessionPhase(record, at: window.pauseEndsAt - .nanoseconds(1)).stage == .pause(window))
    #expect(SessionPhase(record, at: window.pauseEndsAt).stage == .over(window))
    #expect(SessionPhase(SessionRecord(), at: t0).stage == .none)
    #expect(SessionPhase(record.switching(to: .premium), at: t0).stage == .unlimited)
    #expect(SessionPhase(record, at: window.sessionEndsAt).pausing == window)
    #expect(SessionPhase(record, at: t0).running == window && SessionPhase(record, at: t0).pausing == nil)
  }

  @Test("when can I connect: refused strictly after the deadline until the pause's end; at the deadline itself allowed")
  func pauseBlock() {
    let record = SessionRecord(window: window)
    #expect(SessionPhase(record, at: window.sessionEndsAt).connectBlock == nil)
    let inPause = SessionPhase(record, at: window.sessionEndsAt + .seconds(1))
    #expect(inPause.connectBlock == ConnectBlock(reason: .pause, until: window.pauseEndsAt))
    #expect(!inPause.canConnect)
    #expect(SessionPhase(record, at: window.pauseEndsAt).canConnect)
  }

  @Test("with the cap reached: the later of the pause's end and the cap period's end, with its reason; premium too")
  func capBlock() {
    let record = SessionRecord(window: window)
    let now = window.sessionEndsAt + .seconds(1)
    let reached = status(6_000_000, at: now)
    // The cap's period (a day) ends after the pause: the cap is the answer.
    let both = SessionPhase(record, dataCap: reached, at: now)
    #expect(both.connectBlock == ConnectBlock(reason: .dataCap, until: reached.periodEnd))
    #expect(reached.periodEnd > window.pauseEndsAt)
    // Below the cap: the pause alone.
    #expect(SessionPhase(record, dataCap: status(1, at: now), at: now).connectBlock?.reason == .pause)
    // Premium has no pause, but the cap still refuses.
    let premium = SessionPhase(record.switching(to: .premium), dataCap: reached, at: now)
    #expect(premium.connectBlock == ConnectBlock(reason: .dataCap, until: reached.periodEnd))
    // A status whose period has ended refuses nothing.
    #expect(SessionPhase(SessionRecord(), dataCap: reached, at: reached.periodEnd).canConnect)
  }

  @Test("the report, the notices and the gate give the phase's answer")
  func oneAnswer() {
    let record = SessionRecord(window: window)
    let now = window.sessionEndsAt + .seconds(60)
    let reached = status(6_000_000, at: now)
    let report = SessionReport.make(
      record, now: now, tunnelUp: false, nextLengths: .builtIn, tunnelTotals: nil, lastStop: nil, dataCap: reached)
    let phase = SessionPhase(record, dataCap: reached, at: now)
    #expect(report.connectBlock == phase.connectBlock && report.canConnect == phase.canConnect)
    #expect(report.state == .paused)
    let seen = NoticeObservation(at: now, window: window, dataCap: reached)
    #expect(seen.nextConnectAllowed(at: now) == phase.connectBlock?.until)
  }
}
