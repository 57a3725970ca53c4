/// An instant on the wall clock (CLOCK_REALTIME), in nanoseconds since the Unix epoch.
/// Session deadlines and stored times are wall-clock: they must mean the same after a reboot.
public struct Timestamp: Hashable, Comparable, Sendable {
  public var nanoseconds: Int64
  public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
  public init(seconds: Int64) { self.nanoseconds = seconds * 1_000_000_000 }

  /// `seconds` plus `nanoseconds` since the epoch, or nil when that is outside what a Timestamp
  /// holds (before 1677 or after 2262): for times read from files, where a trap is no answer.
  public init?(checkedSeconds seconds: Int64, nanoseconds: Int64) {
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
    let (total, overflow2) = whole.addingReportingOverflow(nanoseconds)
    guard !overflow, !overflow2 else { return nil }
    self.nanoseconds = total
  }

  /// The instants vpnstat stores, 1950 to 2200: wider than any clock it reads (a clock never set
  /// reads 1970), and narrow enough that the model's arithmetic on them cannot overflow — any two
  /// differ by less than a `Duration` of nanoseconds holds (250 years against 292), and one plus
  /// a session and a pause (`SessionLengths.storable`) stays before 2262. A stored number outside
  /// was not written by vpnstat: it is damage, which every decoder reports as such.
  public static let storable = Timestamp(seconds: -631_152_000)...Timestamp(seconds: 7_258_118_400)

  /// A stored instant, or nil when `nanoseconds` lies outside `storable` (damage).
  public init?(stored nanoseconds: Int64) {
    guard Self.storable.contains(Timestamp(nanoseconds: nanoseconds)) else { return nil }
    self.init(nanoseconds: nanoseconds)
  }

  /// A stored instant in whole seconds (a traffic bucket's start), or nil outside `storable`.
  public init?(storedSeconds seconds: Int64) {
    guard (Self.storable.lowerBound.seconds...Self.storable.upperBound.seconds).contains(seconds) else { return nil }
    self.init(seconds: seconds)
  }

  public var seconds: Int64 { nanoseconds.floorDivided(by: 1_000_000_000) }
  public var secondsDouble: Double { Double(nanoseconds) / 1e9 }

  public static func < (a: Timestamp, b: Timestamp) -> Bool { a.nanoseconds < b.nanoseconds }
  public static func + (a: Timestamp, b: Duration) -> Timestamp {
    Timestamp(nanoseconds: a.nanoseconds + b.nanoseconds)
  }
  public static func - (a: Timestamp, b: Duration) -> Timestamp {
    Timestamp(nanoseconds: a.nanoseconds - b.nanoseconds)
  }
  public static func - (a: Timestamp, b: Timestamp) -> Duration {
    .nanoseconds(a.nanoseconds - b.nanoseconds)
  }

  /// RFC 3339 in UTC, whole seconds: `2026-11-29T12:40:42Z`.
  public var rfc3339: String { rfc3339(fractionDigits: 0) }

  /// RFC 3339 in UTC with `fractionDigits` (0…9) digits of the second. Written into the
  /// String's own storage digit by digit: a report of a thousand interfaces writes a thousand.
  public func rfc3339(fractionDigits: Int) -> String {
    String(unsafeUninitializedCapacity: Self.rfc3339Capacity) { rfc3339(fractionDigits: fractionDigits, into: $0) }
  }

  /// The most bytes `rfc3339(fractionDigits:into:)` writes.
  public static let rfc3339Capacity = 30

  /// Writes `rfc3339(fractionDigits:)` into `text`, which has room for `rfc3339Capacity` bytes;
  /// returns how many it wrote. How a renderer writes a time straight into its output.
  public func rfc3339(fractionDigits: Int, into text: UnsafeMutableBufferPointer<UInt8>) -> Int {
    let secs = seconds
    // The remainder, not nanoseconds − secs × 10⁹, which overflows near Int64.min (a damaged row).
    let nanos = (nanoseconds % 1_000_000_000 + 1_000_000_000) % 1_000_000_000
    let days = secs.floorDivided(by: 86_400)
    let secondOfDay = secs - days * 86_400
    let (year, month, day) = civilDate(fromDays: days)
    let digits = min(max(fractionDigits, 0), 9)
    // Every Timestamp (nanoseconds in an Int64) falls in the years 1677 to 2262.
    precondition((0...9999).contains(year))
    precondition(text.count >= Self.rfc3339Capacity)
    var at = 0
    func put(_ value: Int64, _ width: Int) {
      var rest = value
      for i in stride(from: width - 1, through: 0, by: -1) {
        text[at + i] = 0x30 + UInt8(rest % 10)
        rest /= 10
      }
      at += width
    }
    func put(_ byte: UInt8) {
      text[at] = byte
      at += 1
    }
    put(year, 4)
    put(0x2D)
    put(month, 2)
    put(0x2D)
    put(day, 2)
    put(0x54)
    put(secondOfDay / 3600, 2)
    put(0x3A)
    put(secondOfDay / 60 % 60, 2)
    put(0x3A)
    put(secondOfDay % 60, 2)
    if digits > 0 {
      var fraction = nanos
      for _ in digits..<9 { fraction /= 10 }
      put(0x2E)
      put(fraction, digits)
    }
    put(0x5A)
    return at
  }

  /// Parses the RFC 3339 forms vpnstat writes and the common variants (offsets, fractions).
  public init?(rfc3339 text: String) {
    let b = Array(text.utf8)
    func number(_ range: Range<Int>) -> Int64? {
      guard range.upperBound <= b.count else { return nil }
      var value: Int64 = 0
      for i in range {
        guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
        value = value * 10 + Int64(b[i] - 0x30)
      }
      return value
    }
    guard b.count >= 20, b[4] == 0x2D, b[7] == 0x2D, b[10] == 0x54 || b[10] == 0x74 || b[10] == 0x20,
      b[13] == 0x3A, b[16] == 0x3A,
      let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
      let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
      (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
    else { return nil }
    var index = 19
    var nanos: Int64 = 0
    if index < b.count, b[index] == 0x2E {
      index += 1
      var digits = 0
      while index < b.count, b[index] >= 0x30, b[index] <= 0x39 {
        if digits < 9 { nanos = nanos * 10 + Int64(b[index] - 0x30) }
        digits += 1
        index += 1
      }
      guard digits > 0 else { return nil }
      for _ in min(digits, 9)..<9 { nanos *= 10 }
    }
    guard index < b.count else { return nil }
    var offset: Int64 = 0
    if b[index] == 0x5A || b[index] == 0x7A {
      index += 1
    } else if b[index] == 0x2B || b[index] == 0x2D {
      guard let oh = number(index + 1..<index + 3), index + 3 < b.count, b[index + 3] == 0x3A,
        let om = number(index + 4..<index + 6)
      else { return nil }
      offset = (oh * 3600 + om * 60) * (b[index] == 0x2D ? -1 : 1)
      index += 6
    } else {
      return nil
    }
    guard index == b.count else { return nil }
    let days = daysFromCivil(year: year, month: month, day: day)
    // Years up to 9999 fit in seconds; in nanoseconds only up to 2262.
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset
    self.init(checkedSeconds: secs, nanoseconds: nanos)
  }

  /// Local date and time as `2026-12-15 00:00`, for messages meant for people.
  public func localDateTime(in calendar: any LocalCalendar) -> String {
    let parts = calendar.civil(seconds)
    return padded(parts.year, 4) + "-" + padded(parts.month, 2) + "-" + padded(parts.day, 2) + " "
      + localClockTime(in: calendar)
  }

  /// Local time as a person reads it beside `now`: `15:17:05` on `now`'s day, else with its date,
  /// `2027-01-01 00:00:00` — a clock time alone reads as today (a refusal until New Year read as
  /// "until 00:00:00", tonight).
  public func localTime(near now: Timestamp, in calendar: any LocalCalendar, withSeconds: Bool = true) -> String {
    let parts = calendar.civil(seconds)
    let today = calendar.civil(now.seconds)
    let clock = localClockTime(in: calendar, withSeconds: withSeconds)
    guard parts.year != today.year || parts.month != today.month || parts.day != today.day else { return clock }
    return padded(parts.year, 4) + "-" + padded(parts.month, 2) + "-" + padded(parts.day, 2) + " " + clock
  }

  /// Local wall time as `HH:MM` (or `HH:MM:SS`), for messages meant for people.
  public func localClockTime(in calendar: any LocalCalendar, withSeconds: Bool = false) -> String {
    let parts = calendar.civil(seconds)
    var text = padded(parts.hour, 2) + ":" + padded(parts.minute, 2)
    if withSeconds { text += ":" + padded(parts.second, 2) }
    return text
  }
}

func padded(_ value: Int64, _ width: Int) -> String {
  let digits = String(value)
  return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

// Howard Hinnant's civil-from-days and days-from-civil: exact for every proleptic Gregorian date.
func civilDate(fromDays z0: Int64) -> (Int64, Int64, Int64) {
  let z = z0 + 719_468
  let era = (z >= 0 ? z : z - 146_096) / 146_097
  let doe = z - era * 146_097
  let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
  let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
  let mp = (5 * doy + 2) / 153
  let day = doy - (153 * mp + 2) / 5 + 1
  let month = mp < 10 ? mp + 3 : mp - 9
  return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
}

func daysFromCivil(year y0: Int64, month: Int64, day: Int64) -> Int64 {
  let y = month <= 2 ? y0 - 1 : y0
  let era = (y >= 0 ? y : y - 399) / 400
  let yoe = y - era * 400
  let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
  let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
  return era * 146_097 + doe - 719_468
}

extension Int64 {
  /// Division that rounds toward minus infinity (times before 1970 fall in the right bucket).
  public func floorDivided(by divisor: Int64) -> Int64 {
    let q = self / divisor
    return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? q - 1 : q
  }
}

extension Duration {
  /// The whole duration in nanoseconds, toward zero (saturating far outside vpnstat's ranges).
  /// Through `Int128`, whose arithmetic is compiled in place: `components` calls the standard
  /// library's own 128-bit code, which lies in its one shared section of code (1.6 MiB), so a
  /// loop asking every second kept pages of it resident for a division.
  public var nanoseconds: Int64 { Int64(clamping: attoseconds / 1_000_000_000) }

  /// `nanoseconds` as a duration, made in place for the same reason (`.nanoseconds(_:)` calls
  /// the standard library's 128-bit multiplication).
  public init(nanoseconds: Int64) { self.init(attoseconds: Int128(nanoseconds) &* 1_000_000_000) }

  public var secondsDouble: Double { Double(nanoseconds) / 1e9 }
}

/// One reading of the clocks vpnstat relates: the wall clock (can be set), CLOCK_BOOTTIME
/// (runs through suspend, never set) and CLOCK_MONOTONIC (stops in suspend), plus the boot id.
public struct ClockReading: Sendable, Equatable {
  public var wall: Timestamp
  /// Nanoseconds of CLOCK_BOOTTIME.
  public var boottime: Int64
  /// Nanoseconds of CLOCK_MONOTONIC.
  public var monotonic: Int64
  public var bootID: String

  public init(wall: Timestamp, boottime: Int64, monotonic: Int64, bootID: String) {
    self.wall = wall
    self.boottime = boottime
    self.monotonic = monotonic
    self.bootID = bootID
  }

  /// The CLOCK_BOOTTIME readings vpnstat stores beside a wall time (the trusted clock, a ledger
  /// baseline): never before boot, never longer than the span of `Timestamp.storable`. The time
  /// elapsed since one, and the boot instant (wall − boottime), then stay within an Int64.
  public static let storableBoottimes: ClosedRange<Int64> =
    0...(Timestamp.storable.upperBound.nanoseconds - Timestamp.storable.lowerBound.nanoseconds)

  /// A stored CLOCK_BOOTTIME reading, or nil outside `storableBoottimes` (damage).
  public static func boottime(stored value: Int64) -> Int64? { storableBoottimes.contains(value) ? value : nil }

  /// Time spent suspended since boot: CLOCK_BOOTTIME − CLOCK_MONOTONIC.
  public var suspended: Int64 { boottime - monotonic }
}

/// Where "now" comes from, and how time passes: tests inject their own to drive time (a sleep
/// moves their clock at once); production reads the kernel's clocks and sleeps for real.
public protocol TimeSource: Sendable {
  func now() -> ClockReading
  /// Lets `duration` pass: the one way the engine waits.
  func sleep(for duration: Duration)
  /// Why readings carry no boot id, when they do not: said where users look, since boots are
  /// then told apart by the clocks alone (`BootIdentity`).
  var bootIDProblem: String? { get }
}

extension TimeSource {
  public var bootIDProblem: String? { nil }
}
