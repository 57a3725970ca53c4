/// Traffic of one interface name in one bucket.
public struct TrafficBucket: Hashable, Sendable {
  public var name: InterfaceName
  public var start: Int64
  public var interfaceClass: InterfaceClass
  public var traffic: TrafficCounts

  public init(name: InterfaceName, start: Int64, interfaceClass: InterfaceClass, traffic: TrafficCounts) {
    self.name = name
    self.start = start
    self.interfaceClass = interfaceClass
    self.traffic = traffic
  }
}

/// How a history's rows divide time: the buckets of one granularity, or — for months that start
/// on another day than the 1st — billing months summed from the daily buckets (the monthly ones
/// follow calendar months).
public struct HistoryRows: Hashable, Sendable {
  public var granularity: TrafficGranularity
  /// 1…28; rows are billing months from the daily buckets when it is not 1 and months are shown.
  public var monthStartDay: Int

  public init(_ granularity: TrafficGranularity, monthStartDay: Int = 1) {
    self.granularity = granularity
    self.monthStartDay = granularity == .month ? monthStartDay : 1
  }

  /// Months that start on another day: rows are billing months.
  public var billingMonths: Bool { granularity == .month && monthStartDay != 1 }

  /// The stored buckets the rows are summed from.
  public var source: TrafficGranularity { billingMonths ? .day : granularity }

  private var period: UsagePeriod { UsagePeriod(.month, monthStartDay: monthStartDay) }

  /// The start of the row holding `time`.
  public func start(of time: Timestamp, in calendar: any LocalCalendar) -> Int64 {
    billingMonths ? period.start(of: time, in: calendar) : granularity.start(of: time, in: calendar)
  }

  /// The start of the row after the one starting at `start`.
  public func next(after start: Int64, in calendar: any LocalCalendar) -> Int64 {
    billingMonths ? period.next(after: start, in: calendar) : granularity.next(after: start, in: calendar)
  }

  /// The start of the first of the last `count` rows, the last holding `now`.
  public func start(ofLast count: Int, at now: Timestamp, in calendar: any LocalCalendar) -> Int64 {
    guard billingMonths else { return granularity.start(ofLast: count, at: now, in: calendar) }
    // Out-of-range months carry over: one conversion for any number of steps.
    var parts = calendar.civil(period.start(of: now, in: calendar))
    parts.month -= Int64(max(0, min(max(count, 1) - 1, 100_000)))
    return max(0, calendar.instant(parts))
  }

  /// The row a stored bucket's traffic belongs to: its own start for the granularity's buckets
  /// (a bucket stored under another time zone matches no row, as it falls on no row boundary),
  /// the billing month holding the day for billing months.
  func row(of bucketStart: Int64, in calendar: any LocalCalendar) -> Int64 {
    billingMonths ? period.start(of: Timestamp(seconds: bucketStart), in: calendar) : bucketStart
  }
}

/// The current period of a series so far, and what it would come to at the same pace: the
/// average rate since the period began and the projected total, both estimates.
public struct PeriodEstimate: Hashable, Sendable {
  /// The period (its bounds) and its traffic so far.
  public var row: TrafficHistory.Row
  /// Seconds of the period that have passed.
  public var elapsedSeconds: Double
  /// Traffic so far over the time passed.
  public var averageRate: TrafficRate
  /// The traffic so far, scaled to the whole period.
  public var projected: TrafficCounts

  /// The estimate for `row` at `now` (inside it); nil before its first second has passed.
  public static func of(_ row: TrafficHistory.Row, at now: Timestamp) -> PeriodEstimate? {
    let elapsed = now.secondsDouble - Double(row.start)
    let length = Double(row.end - row.start)
    guard elapsed >= 1, elapsed < length else { return nil }
    func scaled(_ value: UInt64) -> UInt64 {
      let projected = (Double(value) * length / elapsed).rounded()
      return projected < 1.8e19 ? UInt64(projected) : .max
    }
    let t = row.traffic
    return PeriodEstimate(
      row: row, elapsedSeconds: elapsed,
      averageRate: TrafficRate(
        rxBytesPerSecond: Double(t.rxBytes) / elapsed, txBytesPerSecond: Double(t.txBytes) / elapsed),
      projected: TrafficCounts(
        rxBytes: scaled(t.rxBytes), txBytes: scaled(t.txBytes), rxPackets: scaled(t.rxPackets),
        txPackets: scaled(t.txPackets)))
  }
}

/// Usage over time, per class or per interface, at one granularity: what `vpnstat history` shows.
public struct TrafficHistory: Sendable {
  public enum Grouping: String, Sendable, CaseIterable {
    case `class`
    case interface
  }

  /// In time order, or the busiest first (`--top`).
  public enum Order: String, Sendable {
    case time
    case top
  }

  /// One bucket of one series.
  public struct Row: Hashable, Sendable {
    public var start: Int64
    public var end: Int64
    public var traffic = TrafficCounts.zero

    public init(start: Int64, end: Int64, traffic: TrafficCounts = .zero) {
      self.start = start
      self.end = end
      self.traffic = traffic
    }
  }

  /// The rows of one class or one interface, oldest first (busiest first for `--top`).
  public struct Series: Sendable {
    public var interfaceClass: InterfaceClass
    /// Set when grouped by interface.
    public var name: InterfaceName?
    public var rows: [Row]
    /// The period holding "now", when the rows reach it: its average rate and projection.
    public var current: PeriodEstimate?
  }

  public var granularity: TrafficGranularity
  /// 1 for calendar months; else months (and their labels) start on that day.
  public var monthStartDay: Int = 1
  public var order: Order = .time
  public var grouping: Grouping
  public var generatedAt: Timestamp
  public var series: [Series]
  /// The calendar the buckets' hours, days and months follow (and their labels are read in).
  public var calendar: any LocalCalendar
  /// The range asked for with `--since`/`--until`, when one was: [since, until).
  public var since: Timestamp?
  public var until: Timestamp?
  /// The start of the first row asked for and of the last one: the range a chart spans, also
  /// where no series has traffic yet.
  public var firstRow: Int64 = 0
  public var lastRow: Int64 = 0

  /// How the rows divide time.
  public var rows: HistoryRows { HistoryRows(granularity, monthStartDay: monthStartDay) }

  /// Builds the history of the last `count` buckets up to the one holding `now`. Each series
  /// starts at its first bucket with traffic, so a young database shows no run of empty rows:
  /// the rows made are the buckets between that one and now, never `count` of them up front.
  public static func make(
    buckets: [TrafficBucket], granularity: TrafficGranularity, count: Int, now: Timestamp,
    grouping: Grouping, selection: InterfaceSelection, calendar: any LocalCalendar, monthStartDay: Int = 1
  ) -> TrafficHistory {
    let rows = HistoryRows(granularity, monthStartDay: monthStartDay)
    return make(
      buckets: buckets, rows: rows, from: rows.start(ofLast: count, at: now, in: calendar), until: nil, now: now,
      grouping: grouping, selection: selection, calendar: calendar)
  }

  /// Builds the history of the rows from the one holding `from` (Unix seconds) to the last one
  /// starting before `until` (nil: the one holding `now`; never one after it), each series from
  /// its first row with traffic. The row holding `now`, when shown, gets its estimate.
  public static func make(
    buckets: [TrafficBucket], rows: HistoryRows, from: Int64, until: Int64?, now: Timestamp, grouping: Grouping,
    selection: InterfaceSelection, calendar: any LocalCalendar
  ) -> TrafficHistory {
    let nowRow = rows.start(of: now, in: calendar)
    let first = rows.start(of: Timestamp(seconds: from), in: calendar)
    // The last row starts before `until` and is never after the one holding now.
    let last = until.map { min(nowRow, $0 - 1) } ?? nowRow
    struct Key: Hashable {
      var interfaceClass: InterfaceClass
      var name: InterfaceName?
    }
    var sums: [Key: [Int64: Row]] = [:]
    // Every interface's bucket of one day maps to the same row: one calendar conversion each.
    var rowOf: [Int64: Int64] = [:]
    for bucket in buckets where selection.includes(bucket.name, bucket.interfaceClass) {
      let start = rowOf[bucket.start] ?? rows.row(of: bucket.start, in: calendar)
      rowOf[bucket.start] = start
      // Buckets outside the range (a clock that was set back, a damaged database) are left out.
      guard start >= first, start <= last else { continue }
      let key = Key(interfaceClass: bucket.interfaceClass, name: grouping == .interface ? bucket.name : nil)
      var row = sums[key, default: [:]][start] ?? Row(start: start, end: rows.next(after: start, in: calendar))
      row.traffic += bucket.traffic
      sums[key, default: [:]][start] = row
    }
    var series: [Series] = []
    for (key, rowsByStart) in sums {
      guard let firstWithData = rowsByStart.keys.min() else { continue }
      var made: [Row] = []
      // Rows fall on boundaries of the current time zone; a bucket stored under another one
      // matches none, as before.
      var start = rows.start(of: Timestamp(seconds: firstWithData), in: calendar)
      if start < firstWithData { start = rows.next(after: start, in: calendar) }
      // Every step moves forward (a calendar that failed would not): the loop ends at `last`.
      while start <= last {
        let end = rows.next(after: start, in: calendar)
        made.append(rowsByStart[start] ?? Row(start: start, end: end))
        guard end > start else { break }
        start = end
      }
      let current = made.last.flatMap { $0.start == nowRow ? PeriodEstimate.of($0, at: now) : nil }
      series.append(Series(interfaceClass: key.interfaceClass, name: key.name, rows: made, current: current))
    }
    series.sort { a, b in
      if a.interfaceClass != b.interfaceClass { return a.interfaceClass < b.interfaceClass }
      return (a.name ?? InterfaceName("")) < (b.name ?? InterfaceName(""))
    }
    return TrafficHistory(
      granularity: rows.granularity, monthStartDay: rows.monthStartDay, grouping: grouping, generatedAt: now,
      series: series, calendar: calendar, since: nil, until: nil, firstRow: first,
      lastRow: rows.start(of: Timestamp(seconds: max(last, first)), in: calendar))
  }

  /// The `count` busiest rows of each series (most bytes, both directions; the earlier first
  /// on a tie), busiest first: `--top`. Rows without traffic never make the list.
  public func top(_ count: Int) -> TrafficHistory {
    var ranked = self
    ranked.order = .top
    ranked.series = series.map { series in
      var series = series
      series.rows = Array(
        series.rows.filter { !$0.traffic.isZero }.sorted { a, b in
          a.traffic.bytes != b.traffic.bytes ? a.traffic.bytes > b.traffic.bytes : a.start < b.start
        }.prefix(max(count, 0)))
      series.current = nil
      return series
    }
    return ranked
  }
}
