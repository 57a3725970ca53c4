import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The data cap in the enforcer: checked after every sample and on every up, it disconnects
/// through the same path as a session deadline, recorded as `data-cap`, until the period rolls
/// over. A fake kernel, a manual clock (2027-01-15 08:00 UTC), a database in a temporary file.
struct DataCapEnforcerTests {
  /// A cap of 5,000,000 bytes a day on the stored session; wg0 up, the enforcer started.
  func capped(
    _ label: String, plan: Plan = .free, saveInterval: Duration = Recorder.defaultSaveInterval
  ) throws -> (EnforcerBench, Int32) {
    let bench = try EnforcerBench(label, saveInterval: saveInterval)
    _ = try bench.store.updateSession {
      $0 = $0.switching(to: plan)
      $0.dataCap = DataCap(limitBytes: 5_000_000, period: UsagePeriod(.day))
    }
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    return (bench, try #require(bench.kernel.index(of: "wg0")))
  }

  /// Traffic on the tunnel, then the periodic tick that samples it.
  func carry(_ bench: EnforcerBench, _ index: Int32, rx: UInt64, tx: UInt64) throws {
    bench.kernel.carry(index, rx: rx, tx: tx)
    bench.clock.advance(.seconds(1))
    try bench.handle(.tick)
  }

  @Test("below the cap nothing happens; the sample that reaches it takes the tunnel down, recorded data-cap")
  func reachedAtATick() throws {
    let (bench, index) = try capped("cap")
    try carry(bench, index, rx: 4_000_000, tx: 999_999)
    #expect(bench.kernel.isUp(index))
    #expect(bench.enforcer.dataCap?.usedBytes == 4_999_999)
    #expect(try bench.stops().isEmpty)
    try carry(bench, index, rx: 1, tx: 0)
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.dataCap])
    #expect(bench.log.contains("data cap reached: ≈ 5.00 MB of 5.00 MB this day (100 %)"), "\(bench.log.lines)")
    // The session window is left as it was: the cap is a limit of its own.
    #expect(try bench.stored().window != nil)
  }

  @Test(
    "the device goes away after the cap's stop (wg-quick down deletes it): one stop, data-cap, not 'vanished' — the desktop must not say 'stopped by the user'"
  )
  func goneAfterCapStop() throws {
    let (bench, index) = try capped("capgone")
    try carry(bench, index, rx: 5_000_000, tx: 0)
    #expect(try bench.stops() == [.dataCap])
    try bench.handle(.link(bench.kernel.delete(index)))
    #expect(try bench.stops() == [.dataCap], "\(bench.log.lines)")
    #expect(!bench.log.contains("by something else"), "\(bench.log.lines)")
    #expect(bench.log.contains("went away after this enforcer's stop (data-cap)"), "\(bench.log.lines)")
    // A new device under the name, up inside the session and taken away by someone else: that
    // one is recorded (the enforcer's own stop is over once a device came up).
    bench.clock.advance(.seconds(86_400))
    try bench.handle(.link(bench.kernel.add("wg0", up: true)))
    let again = try #require(bench.kernel.index(of: "wg0"))
    #expect(bench.kernel.isUp(again), "\(bench.log.lines)")
    try bench.handle(.link(bench.kernel.delete(again)))
    #expect(try bench.stops() == [.vanished, .dataCap], "\(bench.log.lines)")
  }

  @Test("up again while the cap is reached: down at once; the next day it may stay up")
  func refusedUntilRollover() throws {
    let (bench, index) = try capped("rollover")
    try carry(bench, index, rx: 5_000_000, tx: 0)
    #expect(!bench.kernel.isUp(index))
    bench.clock.advance(.seconds(60))
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.dataCap, .dataCap])
    // Midnight: a new day, nothing used yet.
    let midnight = Timestamp(rfc3339: "2027-01-16T00:00:00Z")!
    bench.clock.advance(midnight - bench.clock.now().wall)
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(bench.kernel.isUp(index))
    try carry(bench, index, rx: 1000, tx: 1000)
    #expect(bench.kernel.isUp(index))
    #expect(bench.enforcer.dataCap?.usedBytes == 2000)
    #expect(try bench.stops() == [.dataCap, .dataCap])
  }

  @Test("a cap alone, on premium: enforced the same way")
  func premiumWithACap() throws {
    let (bench, index) = try capped("capalone", plan: .premium)
    #expect(bench.alarm.armed == nil)
    try carry(bench, index, rx: 3_000_000, tx: 2_000_000)
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.dataCap])
  }

  @Test("only this period counts: yesterday's traffic is not today's usage")
  func periodOnly() throws {
    let (bench, index) = try capped("yesterday")
    try carry(bench, index, rx: 4_900_000, tx: 0)
    let midnight = Timestamp(rfc3339: "2027-01-16T00:00:00Z")!
    bench.clock.advance(midnight - bench.clock.now().wall)
    try carry(bench, index, rx: 200_000, tx: 0)
    #expect(bench.kernel.isUp(index))
    #expect(bench.enforcer.dataCap?.usedBytes == 200_000)
  }

  @Test(
    "between checkpoints: the sample that crosses the cap takes the tunnel down, though the buckets are not saved yet"
  )
  func crossedBetweenCheckpoints() throws {
    let (bench, index) = try capped("capunsaved", saveInterval: .seconds(3600))
    try carry(bench, index, rx: 4_000_000, tx: 999_999)
    try carry(bench, index, rx: 0, tx: 0)
    // Nothing of it is in the database yet: the next checkpoint is an hour away.
    let midnight = Timestamp(rfc3339: "2027-01-15T00:00:00Z")!.seconds
    #expect(try bench.store.usage(since: midnight, of: .tunnel) == .zero)
    #expect(bench.kernel.isUp(index))
    #expect(bench.enforcer.dataCap?.usedBytes == 4_999_999)
    try carry(bench, index, rx: 1, tx: 0)
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.dataCap])
  }

  @Test("between checkpoints across midnight: traffic booked before it is not the new day's usage")
  func unsavedTrafficKeepsItsDay() throws {
    let (bench, index) = try capped("capmidnight", saveInterval: .seconds(3600))
    let beforeMidnight = Timestamp(rfc3339: "2027-01-15T23:59:58Z")!
    bench.clock.advance(beforeMidnight - bench.clock.now().wall)
    try bench.handle(.tick)
    try carry(bench, index, rx: 4_900_000, tx: 0)
    try carry(bench, index, rx: 0, tx: 0)
    try carry(bench, index, rx: 200_000, tx: 0)
    // 00:00:01, less than an hour since the last checkpoint: yesterday's 4.9 MB are unsaved.
    #expect(bench.clock.now().wall == Timestamp(rfc3339: "2027-01-16T00:00:01Z")!)
    #expect(try bench.store.usage(since: Timestamp(rfc3339: "2027-01-16T00:00:00Z")!.seconds, of: .tunnel) == .zero)
    #expect(bench.kernel.isUp(index))
    #expect(bench.enforcer.dataCap?.usedBytes == 200_000)
  }

  @Test("a cap set while the tunnel is up, already reached: the next tick takes it down")
  func capSetLater() throws {
    let bench = try EnforcerBench("later")
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let index = try #require(bench.kernel.index(of: "wg0"))
    try carry(bench, index, rx: 2_000_000, tx: 0)
    #expect(bench.kernel.isUp(index))
    _ = try bench.store.updateSession { $0.dataCap = DataCap(limitBytes: 1_000_000, period: UsagePeriod(.month)) }
    bench.clock.advance(.seconds(1))
    try bench.handle(.tick)
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.dataCap])
  }
}
