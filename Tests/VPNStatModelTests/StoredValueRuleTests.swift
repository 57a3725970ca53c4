import Foundation
import Testing

@testable import VPNStatModel

/// Issue 38: the range each kind of stored number must lie in (`Timestamp.storable`,
/// `ClockReading.storableBoottimes`, `SessionLengths.storable`, `SessionWindow(stored:…)`,
/// `UsagePeriod.monthStartDays`, `DataCap.storableLimits`), and that the model's arithmetic on any
/// value inside cannot trap: a value outside is damage, said by the decoders, never a SIGILL.
struct StoredValueRuleTests {
  let earliest = Timestamp.storable.lowerBound
  let latest = Timestamp.storable.upperBound
  let longest = SessionLengths.storable.upperBound

  @Test(
    "instants are stored from 1950 to 2200, bounds included; 2262 (the issue's wall), Int64's ends and one ns past a bound are not"
  )
  func instants() {
    #expect(earliest.rfc3339 == "1950-01-01T00:00:00Z")
    #expect(latest.rfc3339 == "2200-01-01T00:00:00Z")
    for valid in [earliest.nanoseconds, latest.nanoseconds, 0, -1, 1_796_326_288_861_283_483] {
      #expect(Timestamp(stored: valid)?.nanoseconds == valid, "\(valid)")
    }
    for invalid in [earliest.nanoseconds - 1, latest.nanoseconds + 1, 9_223_372_036_854_775_000, .max, .min] {
      #expect(Timestamp(stored: invalid) == nil, "\(invalid)")
    }
    #expect(Timestamp(storedSeconds: latest.seconds) == latest)
    #expect(Timestamp(storedSeconds: earliest.seconds) == earliest)
    for invalid in [latest.seconds + 1, earliest.seconds - 1, .max, .min] {
      #expect(Timestamp(storedSeconds: invalid) == nil, "\(invalid)")
    }
  }

  @Test("a time since boot is stored from 0 to the span of the stored instants")
  func boottimes() {
    #expect(ClockReading.boottime(stored: 0) == 0)
    let most = latest.nanoseconds - earliest.nanoseconds
    #expect(ClockReading.boottime(stored: most) == most)
    for invalid in [-1, most + 1, .max, .min] { #expect(ClockReading.boottime(stored: invalid) == nil, "\(invalid)") }
  }

  @Test("a session or pause length is stored from 1 ns to 366 days; 0, negative and Int64.max (the issue's) are not")
  func lengths() {
    #expect(SessionLengths(storedSession: 1, pause: longest.nanoseconds) != nil)
    #expect(SessionLengths(storedSession: 120_000_000_000, pause: 60_000_000_000) == .debug)
    for invalid: Int64 in [0, -1, longest.nanoseconds + 1, .max, .min] {
      #expect(SessionLengths(storedSession: invalid, pause: 1) == nil, "\(invalid)")
      #expect(SessionLengths(storedSession: 1, pause: invalid) == nil, "\(invalid)")
    }
    // Every length an option gives (1 ms to 100 days) is a stored one.
    #expect(SessionLengths.storable.contains(.milliseconds(1)) && SessionLengths.storable.contains(.seconds(8_640_000)))
  }

  @Test("a stored window opens, then its session ends, then its pause ends; equal instants are in order")
  func windowOrder() {
    let t = Timestamp(seconds: 1_800_000_000)
    let lengths = SessionLengths.release
    #expect(SessionWindow(stored: t, sessionEndsAt: t, pauseEndsAt: t, lengths: lengths) != nil)
    #expect(
      SessionWindow(stored: t, sessionEndsAt: t + .seconds(1), pauseEndsAt: t + .seconds(2), lengths: lengths) != nil)
    #expect(SessionWindow(stored: t, sessionEndsAt: t - .nanoseconds(1), pauseEndsAt: t, lengths: lengths) == nil)
    #expect(
      SessionWindow(stored: t, sessionEndsAt: t + .seconds(2), pauseEndsAt: t + .seconds(1), lengths: lengths) == nil)
  }

  @Test("a month starts on a day from 1 to 28 and a cap is at least a byte, as stored: anything else is no value")
  func capValues() {
    for day: Int64 in [1, 15, 28] { #expect(UsagePeriod(.month, storedMonthStartDay: day)?.monthStartDay == Int(day)) }
    for day: Int64 in [0, 29, 99, -1, .max, .min] { #expect(UsagePeriod(.month, storedMonthStartDay: day) == nil) }
    #expect(DataCap.limit(stored: 1) == 1)
    #expect(DataCap.limit(stored: .max) == UInt64(Int64.max))
    for invalid: Int64 in [0, -1, .min] { #expect(DataCap.limit(stored: invalid) == nil, "\(invalid)") }
  }

  /// What the model does with stored values, at the corners of their ranges: each line trapped
  /// (SIGILL) for some value a file could hold before the ranges existed.
  @Test("the model's arithmetic on stored values at the ends of their ranges does not trap")
  func arithmeticAtTheBounds() {
    let lengths = SessionLengths(session: longest, pause: longest)
    for now in [earliest, latest] {
      // A window opened at a stored instant with the longest lengths.
      let window = SessionWindow.open(at: now, lengths: lengths)
      #expect(window.pauseEndsAt > window.sessionEndsAt)
      for other in [earliest, latest] {
        let record = SessionRecord(
          window: SessionWindow(
            openedAt: other, sessionEndsAt: other + longest, pauseEndsAt: other + longest + longest, lengths: lengths))
        let report = SessionReport.make(
          record, now: now, tunnelUp: true, nextLengths: lengths, tunnelTotals: .zero, lastStop: nil)
        #expect((now - other) + (other - now) == .zero)
        #expect(report.remaining.map { $0 == other + longest - now } ?? true)
        #expect(report.pauseRemaining.map { $0 == other + longest + longest - now } ?? true)
        #expect(WatchdogDecision.check(record, now: now, linkUp: true, armed: nil) != .wait)
        let warning = StoreHealth(notificationOverflows: 1, lastNotificationOverflow: other).warning(at: now)
        #expect((warning != nil) == (now - other < .seconds(86_400)))
      }
    }
    // The trusted floor: a stored pair at the latest instant and any stored time since boot,
    // read again a year of uptime later.
    for boottime in [
      ClockReading.storableBoottimes.lowerBound, ClockReading.storableBoottimes.upperBound - 366 * 86_400_000_000_000,
    ] {
      let last = TrustedClock(wall: latest, boottime: boottime, bootID: "")
      let reading = ClockReading(
        wall: earliest, boottime: boottime + 366 * 86_400_000_000_000, monotonic: 0, bootID: "")
      #expect(TrustedClock.now(reading, last: last) == latest + .seconds(366 * 86_400))
    }
    // Boots told apart by the clocks, stored extremes on both sides.
    for (wall, boottime) in [(earliest, ClockReading.storableBoottimes.upperBound), (latest, 0)] {
      let same = BootIdentity.same(
        old: (bootID: "", wall: wall, boottime: boottime),
        new: (bootID: "", wall: latest, boottime: ClockReading.storableBoottimes.upperBound))
      #expect(same != false || boottime > ClockReading.storableBoottimes.upperBound)
    }
  }

  @Test("a spooled stop or window holding a value no vpnstat writes is an unreadable line, not a record")
  func spool() {
    let t = Timestamp(seconds: 1_800_000_000)
    let window = SessionWindow.open(at: t, lengths: .release)
    let good = SpooledRecord.window(window, tunnel: InterfaceName("wg0"), usageBase: .zero).line
    #expect(SpooledRecord(line: Substring(good)) != nil)
    for (field, value) in [
      ("opened", "9223372036854775807"), ("session_ends", "-9223372036854775808"), ("pause", "0"),
      ("session", "9223372036854775807"), ("pause_ends", "\(t.nanoseconds)"),
    ] {
      let fields = good.split(separator: "\t").map { $0.hasPrefix(field + "=") ? "\(field)=\(value)" : String($0) }
      #expect(SpooledRecord(line: Substring(fields.joined(separator: "\t"))) == nil, "\(field)=\(value)")
    }
    let stop = SpooledRecord.stop(StopRecord(at: t, interface: nil, reason: .freeLimit)).line
    #expect(SpooledRecord(line: Substring(stop)) != nil)
    #expect(SpooledRecord(line: "stop\tat=9223372036854775000\treason=free-limit") == nil)
  }

  @Test("an enforcer's presence with lengths outside the stored range has no lengths; one since 2262 is no presence")
  func presence() {
    let base = "pid=12\nsince=2026-12-03T10:00:00Z\naction=auto\ninterface=wg0\n"
    #expect(
      EnforcerPresence(parsing: base + "session_length_ns=900000000000\npause_length_ns=2700000000000")?.lengths
        == .release)
    let huge = EnforcerPresence(parsing: base + "session_length_ns=9223372036854775807\npause_length_ns=1")
    #expect(huge != nil && huge?.lengths == nil)
    #expect(EnforcerPresence(parsing: base.replacingOccurrences(of: "2026-12-03", with: "2262-04-11")) == nil)
  }
}
