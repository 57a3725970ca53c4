import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Every rule of the session window, with an injected clock.
struct SessionRuleTests {
  let lengths = SessionLengths.release
  let t0 = Timestamp(seconds: 1_800_000_000)

  func report(_ record: SessionRecord, at now: Timestamp, tunnelUp: Bool) -> SessionReport {
    SessionReport.make(record, now: now, tunnelUp: tunnelUp, nextLengths: lengths, tunnelTotals: .zero, lastStop: nil)
  }

  @Test("the first connection opens a window: 15 minutes, then a 45-minute pause")
  func opens() {
    let (decision, record) = SessionRecord().tunnelUp(at: t0, lengths: lengths)
    guard case .opened(let window) = decision else {
      Issue.record("\(decision)")
      return
    }
    #expect(window.sessionEndsAt == t0 + .seconds(900))
    #expect(window.pauseEndsAt == t0 + .seconds(3600))
    #expect(record.window == window)
    #expect(report(record, at: t0, tunnelUp: true).state == .active)
  }

  @Test("a reconnect at minute 10 leaves 5 minutes: the window is not extended")
  func reconnectAtTen() {
    let (_, record) = SessionRecord().tunnelUp(at: t0, lengths: lengths)
    let later = t0 + .seconds(600)
    let (decision, after) = record.tunnelUp(at: later, lengths: lengths)
    guard case .resumed(let window) = decision else {
      Issue.record("\(decision)")
      return
    }
    #expect(window.sessionEndsAt == t0 + .seconds(900))
    #expect(after == record)
    #expect(report(after, at: later, tunnelUp: true).remaining == .seconds(300))
  }

  @Test("connecting in the pause is refused, with how long and until when")
  func pauseRefuses() throws {
    let (_, record) = SessionRecord().tunnelUp(at: t0, lengths: lengths)
    let inPause = t0 + .seconds(900 + 8 * 60 + 48)
    #expect(!record.canConnect(at: inPause))
    let (decision, _) = record.tunnelUp(at: inPause, lengths: lengths)
    guard case .refuse = decision else {
      Issue.record("\(decision)")
      return
    }
    let shown = report(record, at: inPause, tunnelUp: false)
    #expect(shown.state == .paused)
    #expect(shown.pauseRemaining == .seconds(36 * 60 + 12))
    let message = try #require(SessionText.pauseMessage(shown, calendar: SystemCalendar()))
    #expect(message.hasPrefix("free plan pause: you can reconnect in 36 min 12 s (at "))
    #expect(message.hasSuffix("\((t0 + .seconds(3600)).localClockTime(in: SystemCalendar(), withSeconds: true)))"))
    // With the tunnel still up after the deadline, the state says the disconnect is pending.
    #expect(report(record, at: inPause, tunnelUp: true).state == .expired)
  }

  @Test("the boundaries: connecting is refused only strictly between the two instants")
  func boundaries() {
    let window = SessionWindow.open(at: t0, lengths: lengths)
    #expect(window.canConnect(at: window.sessionEndsAt))
    #expect(!window.canConnect(at: window.sessionEndsAt + .nanoseconds(1)))
    #expect(!window.canConnect(at: window.pauseEndsAt - .nanoseconds(1)))
    #expect(window.canConnect(at: window.pauseEndsAt))
  }

  @Test(
    "every rule agrees at each boundary instant: the gate, the on-tunnel-up rule, the watchdog and the state",
    arguments: SessionBoundary.all)
  func rulesAtBoundaries(_ boundary: SessionBoundary) throws {
    let (_, record) = SessionRecord().tunnelUp(at: t0, lengths: lengths)
    let window = try #require(record.window)
    #expect(window.sessionEndsAt == t0 + .seconds(900) && window.pauseEndsAt == t0 + .seconds(3600))
    let now = t0 + boundary.offset
    #expect(record.canConnect(at: now) == boundary.canConnect)
    #expect(window.canConnect(at: now) == boundary.canConnect)

    let (decision, next) = record.tunnelUp(at: now, lengths: lengths)
    switch (boundary.tunnelUp, decision) {
    case (.resumed, .resumed(let kept)), (.refused, .refuse(let kept)):
      #expect(kept == window && next == record, "the window must not change")
    case (.reopened, .reopened(let opened)):
      #expect(opened.openedAt == now && opened.sessionEndsAt == now + .seconds(900))
      #expect(next.window == opened)
    default:
      Issue.record("on tunnel up: expected \(boundary.tunnelUp), got \(decision)")
    }

    let unarmed = WatchdogDecision.check(record, now: now, linkUp: true, armed: nil)
    let armed = WatchdogDecision.check(record, now: now, linkUp: true, armed: window.sessionEndsAt)
    switch boundary.watchdog {
    case .armsDeadline:
      #expect(unarmed == .arm(window.sessionEndsAt))
      #expect(armed == .wait)
    case .disconnects:
      #expect(unarmed == .disconnect && armed == .disconnect)
    case .appliesTunnelUp:
      #expect(unarmed == .tunnelUp && armed == .tunnelUp)
    }
    // A tunnel that is down is left alone at every instant.
    #expect(WatchdogDecision.check(record, now: now, linkUp: false, armed: window.sessionEndsAt) == .wait)

    let shown = report(record, at: now, tunnelUp: false)
    #expect(shown.state == boundary.stateWhenDown)
    #expect(shown.canConnect == boundary.canConnect)
  }

  @Test("after the pause a new window opens from now")
  func afterPause() {
    let (_, record) = SessionRecord().tunnelUp(at: t0, lengths: lengths)
    let later = t0 + .seconds(3600 + 42)
    #expect(record.canConnect(at: later))
    #expect(report(record, at: later, tunnelUp: false).state == .none)
    let (decision, next) = record.tunnelUp(at: later, lengths: lengths)
    guard case .reopened(let window) = decision else {
      Issue.record("\(decision)")
      return
    }
    #expect(window.openedAt == later)
    #expect(window.sessionEndsAt == later + .seconds(900))
    #expect(next.window == window)
  }

  @Test("premium has no window, and leaves none behind when it ends")
  func premium() {
    let (_, free) = SessionRecord().tunnelUp(at: t0, lengths: lengths)
    let premium = free.switching(to: .premium)
    #expect(premium.window == nil)
    let (decision, stillPremium) = premium.tunnelUp(at: t0 + .seconds(1000), lengths: lengths)
    #expect(decision == .unlimited)
    #expect(stillPremium.window == nil)
    #expect(premium.canConnect(at: t0 + .seconds(1000)))
    #expect(report(premium, at: t0 + .seconds(1000), tunnelUp: true).state == .unlimited)
    // Downgrading later starts clean: the old pause is gone.
    let downgraded = premium.switching(to: .free)
    #expect(downgraded.window == nil)
    #expect(downgraded.canConnect(at: t0 + .seconds(1000)))
    let (reopened, _) = downgraded.tunnelUp(at: t0 + .seconds(1000), lengths: lengths)
    guard case .opened = reopened else {
      Issue.record("\(reopened)")
      return
    }
  }

  @Test("the lengths a window opened with stay with it; debug builds default to 2 min / 1 min")
  func lengthsStay() {
    let (_, record) = SessionRecord().tunnelUp(
      at: t0, lengths: SessionLengths(session: .seconds(60), pause: .seconds(60)))
    let (decision, _) = record.tunnelUp(at: t0 + .seconds(30), lengths: lengths)
    guard case .resumed(let window) = decision else {
      Issue.record("\(decision)")
      return
    }
    #expect(window.lengths.session == .seconds(60))
    #if DEBUG
      #expect(SessionLengths.builtIn == SessionLengths(session: .seconds(120), pause: .seconds(60)))
    #else
      #expect(SessionLengths.builtIn == SessionLengths.release)
    #endif
  }

  @Test("the wall clock set back one hour does not extend a window")
  func clockSetBack() throws {
    let directory = try TemporaryDirectory("clock")
    let store = try #require(try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write))
    let clock = ManualTimeSource(wall: 1_800_000_000)
    let start = try store.trustedNow(clock.now())
    let window = try store.updateSession { record -> SessionWindow? in
      record = record.tunnelUp(at: start, lengths: lengths).1
      return record.window
    }
    let deadline = try #require(window?.sessionEndsAt)
    clock.advance(.seconds(14 * 60))
    _ = try store.trustedNow(clock.now())
    clock.setWall(by: .seconds(-3600))
    clock.advance(.seconds(2 * 60))
    let now = try store.trustedNow(clock.now())
    #expect(now == start + .seconds(16 * 60))
    #expect(now > deadline)
    let decision = WatchdogDecision.check(try store.sessionRecord(), now: now, linkUp: true, armed: deadline)
    #expect(decision == .disconnect)
    // A clock set forward is believed.
    clock.setWall(by: .seconds(7200))
    #expect(try store.trustedNow(clock.now()) == clock.now().wall)
    // A new boot starts from its own wall clock.
    clock.reboot(bootID: "boot-b")
    #expect(try store.trustedNow(clock.now()) == clock.now().wall)
  }

  @Test("after the wall clock is set back, the next reading a tick later does not go back either, on any connection")
  func clockSetBackStaysBack() throws {
    let directory = try TemporaryDirectory("clock2")
    let location = StoreLocation(path: directory.file("v.db"))
    let store = try #require(try Store.open(location, intent: .write))
    let clock = ManualTimeSource(wall: 1_800_000_000)
    let start = try store.trustedNow(clock.now())
    clock.advance(.seconds(60))
    clock.setWall(by: .seconds(-3600))
    #expect(try store.trustedNow(clock.now()) == start + .seconds(60))
    // The stored pair is the trusted time, not the raw wall time: a tick later, still ahead.
    clock.advance(.seconds(1))
    #expect(try store.trustedNow(clock.now()) == start + .seconds(61))
    clock.advance(.seconds(1))
    let other = try #require(try Store.open(location, intent: .write))
    #expect(try other.trustedNow(clock.now()) == start + .seconds(62))
    // A reader that may not store a pair still trusts the stored one.
    clock.advance(.seconds(1))
    let reader = try #require(try Store.open(location, intent: .read))
    #expect(try reader.trustedNow(clock.now()) == start + .seconds(63))
  }

  @Test("a sleep across the deadline disconnects at wake")
  func sleepAcrossDeadline() throws {
    let clock = ManualTimeSource(wall: 1_800_000_000)
    let (_, record) = SessionRecord().tunnelUp(at: clock.now().wall, lengths: lengths)
    clock.advance(.seconds(5 * 60))
    let before = clock.now()
    #expect(
      WatchdogDecision.check(record, now: before.wall, linkUp: true, armed: nil) == .arm(record.window!.sessionEndsAt))
    clock.suspend(.seconds(30 * 60))
    let after = clock.now()
    // CLOCK_MONOTONIC stood still: the enforcer sees the sleep and checks at once.
    #expect(after.suspended - before.suspended == Duration.seconds(30 * 60).nanoseconds)
    #expect(after.monotonic == before.monotonic)
    #expect(
      WatchdogDecision.check(record, now: after.wall, linkUp: true, armed: record.window!.sessionEndsAt) == .disconnect)
  }

  @Test("the watchdog: premium disarms, a reset window re-opens, a down tunnel waits")
  func watchdogCases() {
    let (_, record) = SessionRecord().tunnelUp(at: t0, lengths: lengths)
    let deadline = record.window!.sessionEndsAt
    #expect(WatchdogDecision.check(record.switching(to: .premium), now: t0, linkUp: true, armed: deadline) == .disarm)
    #expect(WatchdogDecision.check(SessionRecord(), now: t0, linkUp: true, armed: nil) == .tunnelUp)
    #expect(WatchdogDecision.check(record, now: t0 + .seconds(2000), linkUp: false, armed: nil) == .wait)
    #expect(WatchdogDecision.check(record, now: t0 + .seconds(10), linkUp: true, armed: deadline) == .wait)
    #expect(WatchdogDecision.check(record, now: t0 + .seconds(4000), linkUp: true, armed: nil) == .tunnelUp)
  }

  @Test("plan changes and resets go through the store in one transaction, stops are recorded")
  func storeSession() throws {
    let directory = try TemporaryDirectory("sess")
    let store = try #require(try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write))
    _ = try store.updateSession { record in record = record.tunnelUp(at: t0, lengths: lengths).1 }
    #expect(try store.sessionRecord().window != nil)
    try store.recordStop(StopRecord(at: t0 + .seconds(900), interface: InterfaceName("wg0"), reason: .freeLimit))
    _ = try store.updateSession { record in record = record.switching(to: .premium) }
    let stored = try store.sessionRecord()
    #expect(stored.plan == .premium && stored.window == nil)
    #expect(try store.stops(limit: 1).first?.reason == .freeLimit)
  }
}

/// One instant at a boundary of the window and what every rule says there.
struct SessionBoundary: Sendable, CustomTestStringConvertible {
  enum TunnelUp: Sendable { case resumed, refused, reopened }
  enum Watchdog: Sendable { case armsDeadline, disconnects, appliesTunnelUp }
  let label: String
  /// The instant, from the window opened at t0 with the release lengths (session ends at +15 min,
  /// the pause at +60 min).
  let offset: Duration
  let canConnect: Bool
  let tunnelUp: TunnelUp
  let watchdog: Watchdog
  let stateWhenDown: SessionState
  var testDescription: String { label }
}

extension SessionBoundary {
  static let all: [SessionBoundary] = {
    let sessionEnds = Duration.seconds(900)
    let pauseEnds = Duration.seconds(3600)
    let ns = Duration.nanoseconds(1)
    return [
      SessionBoundary(
        label: "session_ends_at − 1 ns", offset: sessionEnds - ns, canConnect: true, tunnelUp: .resumed,
        watchdog: .armsDeadline, stateWhenDown: .active),
      SessionBoundary(
        label: "session_ends_at", offset: sessionEnds, canConnect: true, tunnelUp: .refused, watchdog: .disconnects,
        stateWhenDown: .paused),
      SessionBoundary(
        label: "session_ends_at + 1 ns", offset: sessionEnds + ns, canConnect: false, tunnelUp: .refused,
        watchdog: .disconnects, stateWhenDown: .paused),
      SessionBoundary(
        label: "pause_ends_at − 1 ns", offset: pauseEnds - ns, canConnect: false, tunnelUp: .refused,
        watchdog: .disconnects, stateWhenDown: .paused),
      SessionBoundary(
        label: "pause_ends_at", offset: pauseEnds, canConnect: true, tunnelUp: .reopened, watchdog: .appliesTunnelUp,
        stateWhenDown: .none),
      SessionBoundary(
        label: "pause_ends_at + 1 ns", offset: pauseEnds + ns, canConnect: true, tunnelUp: .reopened,
        watchdog: .appliesTunnelUp, stateWhenDown: .none),
    ]
  }()
}
