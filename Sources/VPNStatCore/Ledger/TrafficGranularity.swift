#if canImport(Glibc)
  import Glibc
#endif

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
    case .day: 62
    case .month: 25
    }
  }

  /// The start of the bucket holding `time`, in Unix seconds. Hours, days and months follow the
  /// local time zone, as people read them ("today", "this month").
  public func start(of time: Timestamp) -> Int64 {
    let seconds = time.seconds
    switch self {
    case .fiveMinutes:
      return seconds.floorDivided(by: 300) * 300
    case .hour, .day, .month:
      var t = time_t(seconds)
      var parts = tm()
      localtime_r(&t, &parts)
      if self == .hour {
        // Local hours start at local :00, which is not a multiple of 3600 s in UTC+5:30 and the
        // like; subtracting the local minutes and seconds also keeps DST's repeated hour apart.
        return seconds - Int64(parts.tm_min) * 60 - Int64(parts.tm_sec)
      }
      parts.tm_sec = 0
      parts.tm_min = 0
      parts.tm_hour = 0
      if self == .month { parts.tm_mday = 1 }
      parts.tm_isdst = -1
      return Int64(mktime(&parts))
    }
  }

  /// The start of the bucket after the one starting at `start`.
  public func next(after start: Int64) -> Int64 {
    switch self {
    case .fiveMinutes: return start + 300
    case .hour: return start + 3600
    case .day, .month:
      var t = time_t(start)
      var parts = tm()
      localtime_r(&t, &parts)
      if self == .day { parts.tm_mday += 1 } else { parts.tm_mon += 1 }
      parts.tm_isdst = -1
      return Int64(mktime(&parts))
    }
  }

  /// The start of the oldest bucket kept at `now`.
  public func retentionCutoff(at now: Timestamp) -> Int64 {
    start(ofLast: retainedBuckets, at: now)
  }

  /// The start of the first of the last `count` buckets, the last being the one holding `now`:
  /// one step back by `count - 1` buckets, whatever `count` is (a count from the command line
  /// must not cost a loop or an allocation per bucket). Clamped to the Unix epoch: nothing was
  /// recorded before it.
  public func start(ofLast count: Int, at now: Timestamp) -> Int64 {
    let start = self.start(of: now)
    // More steps than there are buckets since 1970 all land before it.
    let steps = max(0, min(max(count, 1) - 1, Int(start / 300) + 1))
    switch self {
    case .fiveMinutes: return max(0, start - Int64(steps) * 300)
    case .hour: return max(0, start - Int64(steps) * 3600)
    case .day, .month:
      var t = time_t(start)
      var parts = tm()
      localtime_r(&t, &parts)
      // mktime normalises an out-of-range day or month: one call for any number of steps.
      if self == .day { parts.tm_mday -= Int32(clamping: steps) } else { parts.tm_mon -= Int32(clamping: steps) }
      parts.tm_hour = 0
      parts.tm_isdst = -1
      return max(0, Int64(mktime(&parts)))
    }
  }
}
