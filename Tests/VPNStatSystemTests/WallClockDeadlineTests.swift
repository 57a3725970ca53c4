import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatSystem

/// The wall-clock deadline the enforcer and `notify` arm: it never says "expired" before the
/// deadline, and with a lead its timer wakes the process early and the rest is waited out.
struct WallClockDeadlineTests {
  func wall() -> Int64 { SystemClock.read(CLOCK_REALTIME) }

  @Test("with a lead, the descriptor is readable before the deadline and consume returns at it, not before")
  func leadWaitsOutTheRest() throws {
    let alarm = try WallClockDeadline(waking: .milliseconds(300))
    let target = wall() + 400_000_000
    try alarm.arm(at: Timestamp(nanoseconds: target))
    #expect(try !waitForReadable([alarm.descriptor], timeout: .seconds(2)).isEmpty)
    let woken = wall()
    #expect(woken < target, "woken \(target - woken) ns after the deadline: no lead")
    #expect(alarm.consume() == .expired)
    #expect(wall() >= target, "expired \(target - wall()) ns before the deadline")
    #expect(alarm.consume() == .none)
  }

  @Test("without a lead it fires at the deadline; disarmed, it says nothing")
  func noLead() throws {
    let alarm = try WallClockDeadline()
    let target = wall() + 50_000_000
    try alarm.arm(at: Timestamp(nanoseconds: target))
    #expect(try !waitForReadable([alarm.descriptor], timeout: .seconds(2)).isEmpty)
    #expect(wall() >= target)
    #expect(alarm.consume() == .expired)
    try alarm.arm(at: Timestamp(nanoseconds: wall() + 50_000_000))
    try alarm.disarm()
    #expect(try waitForReadable([alarm.descriptor], timeout: .milliseconds(150)).isEmpty)
    #expect(alarm.consume() == .none)
  }
}
