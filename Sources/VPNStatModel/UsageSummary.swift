/// Today, yesterday, this month and last month of each class (or interface), with what the
/// current day and month come to at their pace so far: the first answer to "how much today and
/// this month?" (`vpnstat report`). Made from two histories of the same traffic — the last two
/// days and the last two months (billing months when they start on another day than the 1st) —
/// so its figures are `history`'s, row for row.
public struct UsageSummary: Sendable {
  /// Which period a line is.
  public enum Period: String, Sendable, CaseIterable {
    case today, yesterday
    case thisMonth = "this month"
    case lastMonth = "last month"

    /// Whether the period holds "now" (it has a projection).
    public var isCurrent: Bool { self == .today || self == .thisMonth }
  }

  /// One period of one series: its bounds and traffic, and for a current one the estimate of
  /// its whole (nil before its first second has passed).
  public struct Line: Hashable, Sendable {
    public var period: Period
    public var row: TrafficHistory.Row
    public var estimate: PeriodEstimate?
  }

  /// One class (or interface) with traffic in the last two months.
  public struct Series: Sendable {
    public var interfaceClass: InterfaceClass
    /// Set when grouped by interface.
    public var name: InterfaceName?
    /// The interfaces whose traffic it sums, by name.
    public var members: [InterfaceName]
    /// Today, yesterday, this month, last month: always all four (zero where nothing moved).
    public var lines: [Line]
  }

  public var series: [Series]
  public var generatedAt: Timestamp
  /// 1 for calendar months; else months start on that day.
  public var monthStartDay: Int
  public var calendar: any LocalCalendar

  /// Nothing recorded: no series, at `now`.
  public static func empty(at now: Timestamp, monthStartDay: Int, calendar: any LocalCalendar) -> UsageSummary {
    UsageSummary(series: [], generatedAt: now, monthStartDay: monthStartDay, calendar: calendar)
  }

  /// The summary from the history of the last two days and of the last two months (made at the
  /// same `now`), and the same months grouped by interface for each series' members. A series
  /// is a class (or interface) with any traffic in those two months; a period it has no row for
  /// is zero.
  public static func make(days: TrafficHistory, months: TrafficHistory, monthsByInterface: TrafficHistory)
    -> UsageSummary
  {
    struct Key: Hashable {
      var interfaceClass: InterfaceClass
      var name: InterfaceName?
    }
    let rows = months.rows
    let calendar = months.calendar
    let today = days.lastRow
    let yesterday = days.granularity.start(ofLast: 2, at: Timestamp(seconds: today), in: calendar)
    let thisMonth = months.lastRow
    let lastMonth = rows.start(ofLast: 2, at: Timestamp(seconds: thisMonth), in: calendar)
    var members: [InterfaceClass: [InterfaceName]] = [:]
    for series in monthsByInterface.series where series.rows.contains(where: { !$0.traffic.isZero }) {
      if let name = series.name { members[series.interfaceClass, default: []].append(name) }
    }
    func line(_ period: Period, start: Int64, in history: TrafficHistory, _ series: TrafficHistory.Series?) -> Line {
      let end = history.rows.next(after: start, in: calendar)
      let row = series?.rows.first { $0.start == start } ?? TrafficHistory.Row(start: start, end: end)
      return Line(
        period: period, row: row, estimate: period.isCurrent ? PeriodEstimate.of(row, at: months.generatedAt) : nil)
    }
    var result: [Series] = []
    for monthSeries in months.series where monthSeries.rows.contains(where: { !$0.traffic.isZero }) {
      let key = Key(interfaceClass: monthSeries.interfaceClass, name: monthSeries.name)
      let daySeries = days.series.first { Key(interfaceClass: $0.interfaceClass, name: $0.name) == key }
      result.append(
        Series(
          interfaceClass: key.interfaceClass, name: key.name,
          members: key.name.map { [$0] } ?? members[key.interfaceClass, default: []],
          lines: [
            line(.today, start: today, in: days, daySeries),
            line(.yesterday, start: yesterday, in: days, daySeries),
            line(.thisMonth, start: thisMonth, in: months, monthSeries),
            line(.lastMonth, start: lastMonth, in: months, monthSeries),
          ]))
    }
    return UsageSummary(
      series: result, generatedAt: months.generatedAt, monthStartDay: months.monthStartDay, calendar: calendar)
  }
}
