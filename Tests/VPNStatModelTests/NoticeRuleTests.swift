import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender

/// The rule of `vpnstat notify` (`SessionNotices.decide`) with a manual clock: what is told when,
/// and the words (`NoticeText`).
struct NoticeRuleTests {
  // 2027-01-14 08:00:00 UTC.
  let t0 = Timestamp(seconds: 1_799_913_600)
  let settings = NoticeSettings.standard
  var window: SessionWindow { SessionWindow.open(at: t0, lengths: .release) }
  let tunnel = InterfaceName("wg0")

  func look(
    _ at: Timestamp, plan: Plan = .free, stop: StopRecord? = nil, refusal: Refusal? = nil, cap: DataCapStatus? = nil
  )
    -> NoticeObservation
  {
    NoticeObservation(
      at: at, plan: plan, window: plan == .free ? window : nil, tunnel: tunnel, lastStop: stop, lastRefusal: refusal,
      dataCap: cap)
  }

  /// Looks at each instant in turn, as the agent does, and returns what each look decided.
  func run(_ looks: [NoticeObservation], settings: NoticeSettings? = nil) -> [NoticeDecision] {
    var previous: NoticeObservation?
    var decisions: [NoticeDecision] = []
    for current in looks {
      decisions.append(
        SessionNotices.decide(
          previous: previous, current: current, now: current.at, settings: settings ?? self.settings))
      previous = current
    }
    return decisions
  }

  @Test("warnings 10 min, 2 min and 30 s before the end, each once, the timer armed for each; none after the end")
  func warnings() {
    let end = window.sessionEndsAt
    let decisions = run([
      look(t0), look(end - .seconds(600)), look(end - .seconds(120)), look(end - .seconds(100)),
      look(end - .seconds(30)),
      look(end - .seconds(1)), look(end + .seconds(1)),
    ])
    #expect(decisions.map(\.notices.count) == [0, 1, 1, 0, 1, 0, 0])
    #expect(
      decisions.map(\.wakeAt) == [
        end - .seconds(600), end - .seconds(120), end - .seconds(30), end - .seconds(30), nil, nil, nil,
      ])
    #expect(decisions[1].notices == [.sessionEnding(window, tunnel: tunnel)])
  }

  @Test(
    "a look that passed both warning times says it once; a first look inside them says it; other lengths are honoured")
  func skippedAndFirst() {
    let end = window.sessionEndsAt
    #expect(run([look(t0), look(end - .seconds(10))]).map(\.notices.count) == [0, 1])
    #expect(run([look(end - .seconds(60))]).map(\.notices.count) == [1])
    let short = NoticeSettings(warnings: [.seconds(1), .seconds(2), .seconds(2)], capWarningPercent: 80)
    #expect(short.warnings == [.seconds(2), .seconds(1)])
    let decisions = run(
      [look(end - .seconds(5)), look(end - .seconds(2)), look(end - .milliseconds(999))], settings: short)
    #expect(decisions.map(\.notices.count) == [0, 1, 1])
    #expect(decisions[0].wakeAt == end - .seconds(2))
  }

  @Test("the stop: why and when the next session may start; a stop from before the first look is not told")
  func stops() {
    let end = window.sessionEndsAt
    let limit = StopRecord(at: end, interface: tunnel, reason: .freeLimit)
    let decisions = run([
      look(end - .seconds(5)), look(end + .milliseconds(200), stop: limit), look(end + .seconds(2), stop: limit),
    ])
    #expect(decisions[1].notices == [.stopped(limit, nextSessionAt: window.pauseEndsAt)])
    // Told once: the next look sees the same stop.
    #expect(decisions[2].notices.isEmpty)
    // The person's own stop in the session: reconnecting is allowed now.
    let user = StopRecord(at: t0 + .seconds(60), interface: tunnel, reason: .user)
    #expect(
      run([look(t0), look(t0 + .seconds(61), stop: user)])[1].notices == [.stopped(user, nextSessionAt: nil)])
    // Already there at the first look: nothing.
    #expect(run([look(end + .seconds(1), stop: limit)])[0].notices.isEmpty)
    // Not told: the enforcer's own stop, a reset, an undo in the pause (that is a refusal).
    for reason in [StopReason.stopped, .reset, .pause] {
      let other = StopRecord(at: end, interface: tunnel, reason: reason)
      #expect(run([look(t0), look(t0 + .seconds(1), stop: other)])[1].notices.isEmpty, "\(reason)")
    }
  }

  @Test("a refusal is told once, with the pause's end; premium hears nothing of windows")
  func refusals() {
    let end = window.sessionEndsAt
    let refusal = Refusal(
      at: end + .seconds(60), interface: tunnel, by: .gate, reason: .pause, until: window.pauseEndsAt)
    let decisions = run([
      look(end + .seconds(30)), look(end + .seconds(61), refusal: refusal), look(end + .seconds(70), refusal: refusal),
    ])
    #expect(decisions.map(\.notices) == [[], [.refused(refusal)], []])
    // Premium: no warnings, no pause refusals, no stops of a window; the cap's still.
    let limit = StopRecord(at: end, interface: tunnel, reason: .freeLimit)
    let premium = run([
      look(end - .seconds(200), plan: .premium),
      look(end - .seconds(10), plan: .premium, stop: limit, refusal: refusal),
    ])
    #expect(premium.map(\.notices) == [[], []])
    #expect(premium.map(\.wakeAt) == [nil, nil])
  }

  @Test("the data cap at 80 % and at 100 %, each once a period, compared in bytes; a new period starts over")
  func dataCap() {
    let cap = DataCap(limitBytes: 5_000_000, period: UsagePeriod(.day))
    func used(_ bytes: UInt64, at: Timestamp = Timestamp(seconds: 1_799_913_600)) -> DataCapStatus {
      cap.status(used: TrafficCounts(rxBytes: bytes, txBytes: 0), at: at, in: FixedOffsetCalendar.utc)
    }
    let decisions = run(
      [0, 3_999_999, 4_000_000, 4_500_000, 5_000_000, 6_000_000].enumerated().map { index, bytes in
        look(t0 + .seconds(Int64(index)), cap: used(bytes))
      })
    #expect(decisions.map(\.notices.count) == [0, 0, 1, 0, 1, 0])
    #expect(decisions[2].notices == [.dataCap(used(4_000_000), threshold: 80)])
    #expect(decisions[4].notices == [.dataCap(used(5_000_000), threshold: 100)])
    // Straight past both: one notice, the cap's.
    #expect(
      run([look(t0, cap: used(0)), look(t0 + .seconds(1), cap: used(7_000_000))])[1].notices == [
        .dataCap(used(7_000_000), threshold: 100)
      ])
    // The next day the same usage counts again.
    let tomorrow = t0 + .seconds(86_400)
    let next = run([look(t0, cap: used(4_500_000)), look(tomorrow, cap: used(4_500_000, at: tomorrow))])
    #expect(next.map(\.notices.count) == [1, 1])
  }

  @Test("the words: the refusal with its pause end and wait, the urgent stop, the warning, the cap with estimates")
  func words() {
    let options = DisplayOptions(calendar: FixedOffsetCalendar.utc)
    let end = window.sessionEndsAt  // 08:15:00
    let refusal = Refusal(
      at: end + .seconds(60), interface: tunnel, by: .dispatcher, reason: .pause, until: window.pauseEndsAt)
    let refused = NoticeText.notification(.refused(refusal), at: window.pauseEndsAt - .seconds(750), options: options)
    #expect(refused.summary == "VPN refused: the free plan's pause ends at 09:00:00 (in 12 min 30 s)")
    #expect(refused.body == "wg0 was refused by NetworkManager's dispatcher (the connect gate) at 08:16:00.")
    let stop = NoticeText.notification(
      .stopped(StopRecord(at: end, interface: tunnel, reason: .freeLimit), nextSessionAt: window.pauseEndsAt),
      at: end, options: options)
    #expect(stop.summary == "VPN disconnected: free session over")
    #expect(stop.body == "wg0 went down at 08:15:00.\nThe next session can start at 09:00:00 (in 45 min).")
    #expect(stop.urgency == .critical)
    let warning = NoticeText.notification(
      .sessionEnding(window, tunnel: tunnel), at: end - .seconds(30), options: options)
    #expect(warning.summary == "VPN session ends in 30 s (at 08:15:00)")
    #expect(warning.expiry == .after(.seconds(30)))
    let cap = DataCap(limitBytes: 5_000_000, period: UsagePeriod(.day))
    let status = cap.status(used: TrafficCounts(rxBytes: 4_100_000, txBytes: 0), at: t0, in: FixedOffsetCalendar.utc)
    let eighty = NoticeText.notification(.dataCap(status, threshold: 80), at: t0, options: options)
    #expect(eighty.summary == "VPN data cap: 80 % used")
    #expect(
      eighty.body.hasPrefix("≈ 4.10 MB of 5.00 MB this day (82 %).\n≈ 900 kB left until 2027-01-15 00:00."),
      "\(eighty.body)")
    #expect(eighty.body.hasSuffix("Figures are estimates from interface counters."))
  }

  @Test(
    "a refusal says why: the reached cap (until its period ends) before the pause (until it ends); none when allowed")
  func refusalOfReport() {
    let cap = DataCap(limitBytes: 5_000_000, period: UsagePeriod(.day))
    let record = SessionRecord(plan: .free, window: window, tunnel: tunnel)
    func report(at now: Timestamp, used: UInt64) -> SessionReport {
      SessionReport.make(
        record, now: now, tunnelUp: false, nextLengths: .release, tunnelTotals: nil, lastStop: nil,
        dataCap: cap.status(used: TrafficCounts(rxBytes: used, txBytes: 0), at: now, in: FixedOffsetCalendar.utc))
    }
    #expect(Refusal.of(report(at: t0 + .seconds(60), used: 0), interface: nil, by: .gate) == nil)
    let paused = window.sessionEndsAt + .seconds(60)
    #expect(
      Refusal.of(report(at: paused, used: 0), interface: nil, by: .gate)
        == Refusal(at: paused, interface: tunnel, by: .gate, reason: .pause, until: window.pauseEndsAt))
    let capped = report(at: t0 + .seconds(60), used: 6_000_000)
    #expect(
      Refusal.of(capped, interface: InterfaceName("wg1"), by: .connect)
        == Refusal(
          at: t0 + .seconds(60), interface: InterfaceName("wg1"), by: .connect, reason: .dataCap,
          until: capped.dataCap?.periodEnd))
  }
}
