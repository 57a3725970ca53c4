/// One end of a report's range as a person gives it: an instant (RFC 3339, `2026-11-29T12:00:00Z`
/// or with an offset) or a date on the local calendar (`2026-11-29`). A date names the whole
/// day: as a start it begins at its local midnight, as an end it includes the day.
public enum TimeBound: Hashable, Sendable {
  case instant(Timestamp)
  case date(year: Int64, month: Int64, day: Int64)

  /// Parses either form; nil for anything else (also for a day the month does not have).
  public init?(parsing text: String) {
    if let instant = Timestamp(rfc3339: text) {
      self = .instant(instant)
      return
    }
    let b = Array(text.utf8)
    guard b.count == 10, b[4] == 0x2D, b[7] == 0x2D else { return nil }
    func number(_ range: Range<Int>) -> Int64? {
      var value: Int64 = 0
      for i in range {
        guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
        value = value * 10 + Int64(b[i] - 0x30)
      }
      return value
    }
    guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), year >= 1970,
      (1...12).contains(month), day >= 1
    else { return nil }
    // The day must exist: it survives a round trip through the proleptic Gregorian calendar.
    let days = daysFromCivil(year: year, month: month, day: day)
    let (y, m, d) = civilDate(fromDays: days)
    guard y == year, m == month, d == day else { return nil }
    // A local day whose midnights (its start, the next day's as an end) may fall past the last
    // instant a Timestamp holds, in any time zone, is refused: it trapped (SIGILL) as an end.
    guard days <= Self.latestDays else { return nil }
    self = .date(year: year, month: month, day: day)
  }

  /// The latest date a bound may be, as people read it: 2262-04-10. Its end, the next local
  /// midnight, is at most 2262-04-11T14:00Z (UTC−14), before the last instant a Timestamp holds
  /// (2262-04-11T23:47:16Z).
  public static let latestDate = "2262-04-10"
  static let latestDays = daysFromCivil(year: 2262, month: 4, day: 10)

  /// The bound as the start of a range, in Unix seconds: the instant, or the date's local midnight.
  public func start(in calendar: any LocalCalendar) -> Int64 {
    switch self {
    case .instant(let time): return time.seconds
    case .date(let year, let month, let day):
      return calendar.instant(CivilTime(year: year, month: month, day: day))
    }
  }

  /// The bound as the (exclusive) end of a range: the instant, or the next day's local midnight,
  /// so that the date is included.
  public func end(in calendar: any LocalCalendar) -> Int64 {
    switch self {
    case .instant(let time): return time.seconds + (time.nanoseconds > time.seconds * 1_000_000_000 ? 1 : 0)
    case .date(let year, let month, let day):
      return calendar.instant(CivilTime(year: year, month: month, day: day + 1))
    }
  }
}
