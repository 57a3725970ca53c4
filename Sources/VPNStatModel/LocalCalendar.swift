/// A date and a time of day on the local calendar.
public struct CivilTime: Hashable, Sendable {
  public var year: Int64
  /// 1…12 (out of range carries into the year when turned into an instant).
  public var month: Int64
  /// 1…31 (out of range carries into the month).
  public var day: Int64
  public var hour: Int64
  public var minute: Int64
  public var second: Int64
  /// 0 = Sunday … 6 = Saturday (set by `LocalCalendar.civil`, ignored by `instant`).
  public var weekday: Int

  public init(
    year: Int64, month: Int64, day: Int64, hour: Int64 = 0, minute: Int64 = 0, second: Int64 = 0, weekday: Int = 0
  ) {
    self.year = year
    self.month = month
    self.day = day
    self.hour = hour
    self.minute = minute
    self.second = second
    self.weekday = weekday
  }
}

/// What "today", "this hour" and "12:45" mean where the user is. Buckets and the times people
/// read follow it; the system layer reads the machine's time zone, tests use a fixed offset.
public protocol LocalCalendar: Sendable {
  /// The local date and time at `seconds` since the Unix epoch.
  func civil(_ seconds: Int64) -> CivilTime
  /// The instant (Unix seconds) a local date and time names. Fields out of range carry over
  /// (day 0 is the last day of the month before); a time that occurs twice or never (a DST
  /// change) resolves as the local rules say.
  func instant(_ civil: CivilTime) -> Int64
}

/// A calendar at a fixed offset from UTC, with no daylight saving: UTC by default.
public struct FixedOffsetCalendar: LocalCalendar {
  public var offsetSeconds: Int64
  public init(offsetSeconds: Int64 = 0) { self.offsetSeconds = offsetSeconds }

  public static let utc = FixedOffsetCalendar()

  public func civil(_ seconds: Int64) -> CivilTime {
    let local = seconds + offsetSeconds
    let days = local.floorDivided(by: 86_400)
    let secondOfDay = local - days * 86_400
    let (year, month, day) = civilDate(fromDays: days)
    // 1970-01-01 was a Thursday.
    let weekday = Int((days + 4).floorDivided(by: 7) * -7 + days + 4)
    return CivilTime(
      year: year, month: month, day: day, hour: secondOfDay / 3600, minute: secondOfDay / 60 % 60,
      second: secondOfDay % 60, weekday: weekday)
  }

  public func instant(_ civil: CivilTime) -> Int64 {
    let months = civil.year * 12 + (civil.month - 1)
    let year = months.floorDivided(by: 12)
    let month = months - year * 12 + 1
    let days = daysFromCivil(year: year, month: month, day: 1) + civil.day - 1
    return days * 86_400 + civil.hour * 3600 + civil.minute * 60 + civil.second - offsetSeconds
  }
}
