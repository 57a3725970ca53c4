import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The reflex (`TakedownReflex`): in the pause, an up of a followed device is cut on its
/// notification's first bytes, as `EnforcerLoop` feeds them, and the handling after it finishes
/// the stop without a second request — never after a write it has not read, nor once the pause
/// may be over.
struct TakedownReflexTests {
  /// wg0 up, a window opened, its deadline passed: the pause runs. The kernel watches nothing
  /// here: the test says when the database changed.
  func inThePause(_ label: String) throws -> (EnforcerBench, ToldChanges, Int32, SessionWindow) {
    let told = ToldChanges()
    let bench = try EnforcerBench(label, changes: .told(told))
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    let index = try #require(bench.kernel.index(of: "wg0"))
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(try bench.stops() == [.freeLimit])
    return (bench, told, index, window)
  }

  /// An up notification as the loop takes it: its first bytes, then the event, then the batch's end.
  func notified(_ bench: EnforcerBench, _ change: LinkNotifications.Change, look: () -> Void = {}) throws {
    bench.enforcer.reflexively(index: change.record.index, flags: change.record.attributes.flags ?? 0)
    look()
    try bench.handle(.link(change))
    bench.enforcer.settleReflexCuts()
  }

  @Test("an up in the pause is cut before it is handled: one request, and the stop recorded as the pause")
  func cutBeforeHandled() throws {
    let (bench, _, index, _) = try inThePause("reflex")
    bench.clock.advance(.seconds(60))
    #expect(bench.enforcer.reflex?.indices == [index])
    let before = bench.kernel.setDownCalls
    try notified(bench, bench.kernel.set(index, up: true)) {
      #expect(!bench.kernel.isUp(index), "not cut on the first bytes")
      #expect(bench.kernel.setDownCalls == before + 1)
    }
    #expect(bench.kernel.setDownCalls == before + 1, "the stop made a second request")
    #expect(try bench.stops() == [.pause, .freeLimit])
    #expect(bench.log.contains("up during the free plan's pause: disconnected"), "\(bench.log.lines)")
    #expect(!bench.log.contains("bring it up again"))
  }

  @Test("a write the enforcer was told of comes first: the up is decided on it (premium: it stays up)")
  func writeComesFirst() throws {
    let (bench, told, index, _) = try inThePause("reflex-write")
    let other = try #require(try Store.open(bench.location, intent: .write, calendar: FixedOffsetCalendar.utc))
    _ = try other.updateSession { $0 = $0.switching(to: .premium) }
    told.changed = true
    bench.clock.advance(.seconds(60))
    let before = bench.kernel.setDownCalls
    try notified(bench, bench.kernel.set(index, up: true)) {
      #expect(bench.kernel.isUp(index), "cut on a decision the write had changed")
    }
    #expect(bench.kernel.isUp(index), "\(bench.log.lines)")
    #expect(bench.kernel.setDownCalls == before)
    #expect(bench.enforcer.record?.plan == .premium)
    #expect(bench.enforcer.reflex == nil)
  }

  @Test("when the pause may be over, the up takes the normal path: at its end exactly, a new window")
  func notPastThePause() throws {
    let (bench, _, index, window) = try inThePause("reflex-end")
    bench.clock.advance(window.pauseEndsAt - bench.clock.now().wall)
    let before = bench.kernel.setDownCalls
    try notified(bench, bench.kernel.set(index, up: true)) {
      #expect(bench.kernel.isUp(index), "cut after the pause")
    }
    #expect(bench.kernel.setDownCalls == before)
    #expect(try bench.stored().window?.openedAt == window.pauseEndsAt)
  }

  @Test("a down, another device, or a device not followed is never cut")
  func onlyFollowedUps() throws {
    let (bench, _, index, _) = try inThePause("reflex-other")
    let other = bench.kernel.add("eth9", up: true, kind: "veth")
    let before = bench.kernel.setDownCalls
    try notified(bench, other)
    try notified(bench, bench.kernel.set(index, up: false))
    #expect(bench.kernel.isUp(other.record.index))
    #expect(bench.kernel.setDownCalls == before)
  }

  @Test("without anyone to say the database changed, there is no reflex: every up reads it first")
  func noReflexWithoutChanges() throws {
    let bench = try EnforcerBench("reflex-none")
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(bench.enforcer.reflex == nil)
  }
}
