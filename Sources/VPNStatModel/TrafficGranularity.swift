/// The traffic buckets' sizes, with how long each is kept (like vnStat's defaults: enough for
/// the recent past at each resolution, bounded so the database stays small).
public enum TrafficGranularity: Int, CaseIterable, Sendable {
  case fiveMinutes = 0
  case hour = 1
  case day = 2
  case month = 3

  public var name: String {
    switch self {
    case .fiveMinutes: "5min"
    case .hour: "hour"
    case .day: "day"
    case .month: "month"
    }
  }

  /// How many buckets are kept.
  public var retainedBuckets: Int {
    switch self {
    case .fiveMinutes: 48 * 12  // 48 hours
    case .hour: 7 * 24  // 7 days
    // 25 months of days: billing months (`month-start-day`) are summed from them, as far
    // back as the monthly buckets go.
    case .day: 775
    case .month: 25
    }
  }

  /// The start of the bucket holding `time`, in Unix seconds. Hours, days and months follow the
  /// local calendar, as people read them ("today", "this month").
  public func start(of time: Timestamp, in calendar: any LocalCalendar) -> Int64 {
    let seconds = time.seconds
    switch self {
    case .fiveMinutes:
      return seconds.floorDivided(by: 300) * 300
    case .hour, .day, .month:
      var parts = calendar.civil(seconds)
      if self == .hour {
        // Local hours start at local :00, which is not a multiple of 3600 s in UTC+5:30 and the
        // like; subtracting the local minutes and seconds also keeps DST's repeated hour apart.
        return seconds - parts.minute * 60 - parts.second
      }
      parts.hour = 0
      parts.minute = 0
      parts.second = 0
      if self == .month { parts.day = 1 }
      return calendar.instant(parts)
    }
  }

  /// The start of the bucket after the one starting at `start`.
  public func next(after start: Int64, in calendar: any LocalCalendar) -> Int64 {
    switch self {
    case .fiveMinutes: return start + 300
    case .hour: return start + 3600
    case .day, .month:
      var parts = calendar.civil(start)
      if self == .day { parts.day += 1 } else { parts.month += 1 }
      return calendar.instant(parts)
    }
  }

  /// The start of the oldest bucket kept at `now`.
  public func retentionCutoff(at now: Timestamp, in calendar: any LocalCalendar) -> Int64 {
    start(ofLast: retainedBuckets, at: now, in: calendar)
  }

  /// The start of the first of the last `count` buckets, the last being the one holding `now`:
  /// one step back by `count - 1` buckets, whatever `count` is (a count from the command line
  /// must not cost a loop or an allocation per bucket). Clamped to the Unix epoch: nothing was
  /// recorded before it.
  public func start(ofLast count: Int, at now: Timestamp, in calendar: any LocalCalendar) -> Int64 {
    let start = self.start(of: now, in: calendar)
    // More steps than there are buckets since 1970 all land before it.
    let steps = Int64(max(0, min(max(count, 1) - 1, Int(start / 300) + 1)))
    switch self {
    case .fiveMinutes: return max(0, start - steps * 300)
    case .hour: return max(0, start - steps * 3600)
    case .day, .month:
      // Out-of-range days and months carry over: one conversion for any number of steps.
      var parts = calendar.civil(start)
      if self == .day { parts.day -= steps } else { parts.month -= steps }
      parts.hour = 0
      return max(0, calendar.instant(parts))
    }
  }
}
