/// How long the period of a data cap or an alert is. Days and weeks start at local midnight
/// (weeks on Monday, as ISO 8601 has them); months on their start day.
public enum PeriodLength: String, Hashable, Sendable, CaseIterable {
  case day
  case week
  case month
}

/// A period of the local calendar that repeats: "this day", "this week", "this month" — where a
/// month starts on `monthStartDay`, like vnStat's MonthRotate, so a billing month that starts on
/// the 15th runs from the 15th at 00:00 to the 15th of the next month at 00:00, and is named by
/// the month it starts in. Every period starts at a local midnight, so it is made of whole daily
/// buckets.
public struct UsagePeriod: Hashable, Sendable {
  public var length: PeriodLength
  /// 1…28 (every month has the day, as vnStat's MonthRotate requires); only months use it.
  public var monthStartDay: Int

  /// The days a month may start on.
  public static let monthStartDays = 1...28

  public init(_ length: PeriodLength, monthStartDay: Int = 1) {
    self.length = length
    self.monthStartDay = min(max(monthStartDay, Self.monthStartDays.lowerBound), Self.monthStartDays.upperBound)
  }

  /// A stored period, or nil when its month start day is not one of `monthStartDays`: vpnstat
  /// writes no other (damage).
  public init?(_ length: PeriodLength, storedMonthStartDay day: Int64) {
    guard let day = Int(exactly: day), Self.monthStartDays.contains(day) else { return nil }
    self.init(length, monthStartDay: day)
  }

  /// The start of the period holding `time`, in Unix seconds.
  public func start(of time: Timestamp, in calendar: any LocalCalendar) -> Int64 {
    var parts = calendar.civil(time.seconds)
    parts.hour = 0
    parts.minute = 0
    parts.second = 0
    switch length {
    case .day: break
    case .week:
      // weekday: 0 = Sunday; Monday starts the week.
      parts.day -= Int64((parts.weekday + 6) % 7)
    case .month:
      if parts.day < Int64(monthStartDay) { parts.month -= 1 }
      parts.day = Int64(monthStartDay)
    }
    return calendar.instant(parts)
  }

  /// The start of the period after the one starting at `start`.
  public func next(after start: Int64, in calendar: any LocalCalendar) -> Int64 {
    var parts = calendar.civil(start)
    parts.hour = 0
    parts.minute = 0
    parts.second = 0
    switch length {
    case .day: parts.day += 1
    case .week: parts.day += 7
    case .month:
      parts.month += 1
      parts.day = Int64(monthStartDay)
    }
    return calendar.instant(parts)
  }

  /// The bounds of the period holding `time`: [start, end) in Unix seconds.
  public func bounds(at time: Timestamp, in calendar: any LocalCalendar) -> (start: Int64, end: Int64) {
    let start = start(of: time, in: calendar)
    return (start, next(after: start, in: calendar))
  }

  /// "day", "week", "month", or "month from the 15th" when months do not start on the 1st.
  public var label: String {
    guard length == .month, monthStartDay != 1 else { return length.rawValue }
    return "month from the \(Self.ordinal(monthStartDay))"
  }

  /// `1st`, `2nd`, `15th`, `22nd`.
  public static func ordinal(_ day: Int) -> String {
    let suffix: String
    switch (day % 10, day % 100) {
    case (_, 11...13): suffix = "th"
    case (1, _): suffix = "st"
    case (2, _): suffix = "nd"
    case (3, _): suffix = "rd"
    default: suffix = "th"
    }
    return "\(day)\(suffix)"
  }
}

/// A limit on the tunnel class's traffic per period, received and sent together (providers
/// count both): a second kind of limit beside the free plan's session window, with or without it.
public struct DataCap: Hashable, Sendable {
  /// Bytes per period, both directions together.
  public var limitBytes: UInt64
  public var period: UsagePeriod

  public init(limitBytes: UInt64, period: UsagePeriod) {
    self.limitBytes = limitBytes
    self.period = period
  }

  /// The limits vpnstat stores: at least a byte (the least a size option takes), at most the
  /// largest SQLite integer (a larger limit is stored as that).
  public static let storableLimits: ClosedRange<UInt64> = 1...UInt64(Int64.max)

  /// A stored limit, or nil outside `storableLimits` (damage).
  public static func limit(stored value: Int64) -> UInt64? {
    UInt64(exactly: value).flatMap { storableLimits.contains($0) ? $0 : nil }
  }

  /// Where `used` stands against the cap in the period holding `now`.
  public func status(used: TrafficCounts, at now: Timestamp, in calendar: any LocalCalendar) -> DataCapStatus {
    let (start, end) = period.bounds(at: now, in: calendar)
    return DataCapStatus(
      cap: self, periodStart: Timestamp(seconds: start), periodEnd: Timestamp(seconds: end), used: used)
  }
}

/// A data cap (or an alert's limit) against the traffic of its current period: what `session`
/// shows, what the gate and the enforcer decide on, what `alert` exits with.
public struct DataCapStatus: Hashable, Sendable {
  public var cap: DataCap
  public var periodStart: Timestamp
  public var periodEnd: Timestamp
  /// The traffic in the period so far (an estimate from interface counters).
  public var used: TrafficCounts

  public init(cap: DataCap, periodStart: Timestamp, periodEnd: Timestamp, used: TrafficCounts) {
    self.cap = cap
    self.periodStart = periodStart
    self.periodEnd = periodEnd
    self.used = used
  }

  /// Both directions: what counts against the cap.
  public var usedBytes: UInt64 { used.bytes }
  /// What is left before the cap is reached (0 once it is).
  public var leftBytes: UInt64 { cap.limitBytes > usedBytes ? cap.limitBytes - usedBytes : 0 }
  /// Used as a percentage of the cap (over 100 once it is crossed).
  public var percent: Double { Double(usedBytes) / Double(max(cap.limitBytes, 1)) * 100 }
  /// The cap is reached: as much traffic as it allows has gone, or more.
  public var reached: Bool { usedBytes >= cap.limitBytes }
}
