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

/// Usage over time, per class or per interface, at one granularity: what `vpnstat history` shows.
public struct TrafficHistory: Sendable {
  public enum Grouping: String, Sendable, CaseIterable {
    case `class`
    case interface
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

  /// The rows of one class or one interface, oldest first.
  public struct Series: Sendable {
    public var interfaceClass: InterfaceClass
    /// Set when grouped by interface.
    public var name: InterfaceName?
    public var rows: [Row]
  }

  public var granularity: TrafficGranularity
  public var grouping: Grouping
  public var generatedAt: Timestamp
  public var series: [Series]
  /// The calendar the buckets' hours, days and months follow (and their labels are read in).
  public var calendar: any LocalCalendar

  /// Builds the history of the last `count` buckets up to the one holding `now`. Each series
  /// starts at its first bucket with traffic, so a young database shows no run of empty rows:
  /// the rows made are the buckets between that one and now, never `count` of them up front.
  public static func make(
    buckets: [TrafficBucket], granularity: TrafficGranularity, count: Int, now: Timestamp,
    grouping: Grouping, selection: InterfaceSelection, calendar: any LocalCalendar
  ) -> TrafficHistory {
    let first = granularity.start(ofLast: count, at: now, in: calendar)
    let last = granularity.start(of: now, in: calendar)
    struct Key: Hashable {
      var interfaceClass: InterfaceClass
      var name: InterfaceName?
    }
    var sums: [Key: [Int64: Row]] = [:]
    // Buckets outside the range (a clock that was set back, a damaged database) are left out.
    for bucket in buckets
    where (first...last).contains(bucket.start) && selection.includes(bucket.name, bucket.interfaceClass) {
      let key = Key(interfaceClass: bucket.interfaceClass, name: grouping == .interface ? bucket.name : nil)
      var row =
        sums[key, default: [:]][bucket.start]
        ?? Row(start: bucket.start, end: granularity.next(after: bucket.start, in: calendar))
      row.traffic += bucket.traffic
      sums[key, default: [:]][bucket.start] = row
    }
    var series: [Series] = []
    for (key, rowsByStart) in sums {
      guard let firstWithData = rowsByStart.keys.min() else { continue }
      var rows: [Row] = []
      // Rows fall on bucket boundaries of the current time zone; a bucket stored under another
      // one matches none, as before.
      var start = granularity.start(of: Timestamp(seconds: firstWithData), in: calendar)
      if start < firstWithData { start = granularity.next(after: start, in: calendar) }
      // Every step moves forward (a calendar that failed would not): the loop ends at `last`.
      while start <= last {
        let end = granularity.next(after: start, in: calendar)
        rows.append(rowsByStart[start] ?? Row(start: start, end: end))
        guard end > start else { break }
        start = end
      }
      series.append(Series(interfaceClass: key.interfaceClass, name: key.name, rows: rows))
    }
    series.sort { a, b in
      if a.interfaceClass != b.interfaceClass { return a.interfaceClass < b.interfaceClass }
      return (a.name ?? InterfaceName("")) < (b.name ?? InterfaceName(""))
    }
    return TrafficHistory(
      granularity: granularity, grouping: grouping, generatedAt: now, series: series, calendar: calendar)
  }
}
