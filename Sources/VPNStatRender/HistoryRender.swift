import VPNStatModel

/// `vpnstat history` as a table: one block per class or interface, a row per bucket with a bar,
/// the sum, and for the period holding "now" its average rate and projected total (estimates).
package enum HistoryTable {
  package static func render(_ history: TrafficHistory, options: DisplayOptions, width: Int = 80) -> String {
    guard !history.series.isEmpty else {
      return "No traffic recorded in this range (vpnstat record fills the database).\n"
        + StatusTable.estimateNote(color: options.color).joined(separator: "\n") + "\n"
    }
    let ranked = history.order == .top
    var lines: [String] = []
    for series in history.series {
      var columns = [
        TextTable.Column(columnTitle(history)), TextTable.Column("RX", alignRight: true),
        TextTable.Column("TX", alignRight: true), TextTable.Column("TOTAL", alignRight: true), TextTable.Column(""),
      ]
      if ranked { columns.insert(TextTable.Column("#", alignRight: true), at: 0) }
      var table = TextTable(columns: columns)
      let peak = max(series.rows.map(\.traffic.bytes).max() ?? 0, 1)
      var cells: [[TextTable.Cell]] = []
      for (rank, row) in series.rows.enumerated() {
        var rowCells = [
          TextTable.Cell(label(row.start, history)), TextTable.Cell(options.estimate(row.traffic.rxBytes)),
          TextTable.Cell(options.estimate(row.traffic.txBytes)), TextTable.Cell(options.estimate(row.traffic.bytes)),
        ]
        if ranked { rowCells.insert(TextTable.Cell("\(rank + 1)"), at: 0) }
        cells.append(rowCells)
      }
      // The bar takes what the other columns leave, between 10 and 40 cells.
      let used = cells.reduce(0) { max($0, $1.reduce(0) { $0 + TerminalText.width($1.text) + 2 }) }
      let barWidth = max(10, min(40, width - used - 2))
      for (i, row) in series.rows.enumerated() {
        table.add(cells[i] + [TextTable.Cell(bar(row.traffic.bytes, of: peak, width: barWidth), .cyan)])
      }
      if !ranked {
        var sum = TrafficCounts.zero
        for row in series.rows {
          sum.rxBytes &+= row.traffic.rxBytes
          sum.txBytes &+= row.traffic.txBytes
        }
        table.add([
          TextTable.Cell("sum", .bold), TextTable.Cell(options.estimate(sum.rxBytes), .bold),
          TextTable.Cell(options.estimate(sum.txBytes), .bold), TextTable.Cell(options.estimate(sum.bytes), .bold),
        ])
      }
      lines.append(TextStyle.bold.apply(title(series, options: options), color: options.color))
      lines += table.render(color: options.color, maxWidth: width).map { "  " + $0 }
      if let current = series.current {
        lines.append("  " + estimateLine(current, history, options: options))
      }
      lines.append("")
    }
    lines += StatusTable.estimateNote(color: options.color)
    return lines.joined(separator: "\n") + "\n"
  }

  /// `this day so far: average ≈ 1.2 MiB/s received, ≈ 80 KiB/s sent; projected ≈ 98 GiB by 2026-12-01 00:00 (estimate)`.
  static func estimateLine(_ current: PeriodEstimate, _ history: TrafficHistory, options: DisplayOptions) -> String {
    let end = Timestamp(seconds: current.row.end).localDateTime(in: history.calendar)
    return
      "this \(periodName(history)) so far: average \(options.rate(current.averageRate.rxBytesPerSecond)) received, \(options.rate(current.averageRate.txBytesPerSecond)) sent; projected \(options.estimate(current.projected.bytes)) by \(end) (estimate)"
  }

  /// What one row is: "5 minutes", "hour", "day", "month".
  static func periodName(_ history: TrafficHistory) -> String {
    switch history.granularity {
    case .fiveMinutes: "5 minutes"
    case .hour: "hour"
    case .day: "day"
    case .month: "month"
    }
  }

  static func title(_ series: TrafficHistory.Series, options: DisplayOptions) -> String {
    series.name.map { "\(options.name($0)) (\(series.interfaceClass.rawValue))" } ?? series.interfaceClass.rawValue
  }

  static func columnTitle(_ history: TrafficHistory) -> String {
    switch history.granularity {
    case .month: history.monthStartDay == 1 ? "MONTH" : "MONTH FROM"
    case .day: "DAY"
    case .hour, .fiveMinutes: "TIME"
    }
  }

  /// A horizontal bar in eighths of a cell.
  static func bar(_ value: UInt64, of peak: UInt64, width: Int) -> String {
    let eighths = Int((Double(value) / Double(peak) * Double(width * 8)).rounded())
    let blocks = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
    return String(repeating: "█", count: eighths / 8) + blocks[eighths % 8]
  }

  /// A row's label: `2026-11`, `2026-11-15` (a month from the 15th), `2026-11-29 Sun`,
  /// `2026-11-29 13:00`.
  static func label(_ start: Int64, _ history: TrafficHistory) -> String {
    let parts = history.calendar.civil(start)
    func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
    let date = "\(parts.year)-\(two(parts.month))"
    switch history.granularity {
    case .month: return history.monthStartDay == 1 ? date : date + "-\(two(parts.day))"
    case .day:
      let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
      return date + "-\(two(parts.day)) \(weekdays[parts.weekday])"
    case .hour, .fiveMinutes: return date + "-\(two(parts.day)) \(two(parts.hour)):\(two(parts.minute))"
    }
  }
}

/// `vpnstat history --graph`: a vertical bar chart per series, one column per bucket, received
/// at the bottom of each column and sent above it, like `vnstat -hg`.
package enum HistoryGraph {
  /// Lines of chart for each series, at most `width` cells wide (the newest buckets that fit)
  /// and `height` rows tall.
  package static func render(_ history: TrafficHistory, options: DisplayOptions, width: Int = 80, height: Int = 10)
    -> String
  {
    guard !history.series.isEmpty else { return HistoryTable.render(history, options: options, width: width) }
    let height = max(3, min(height, 40))
    var lines: [String] = []
    for series in history.series {
      let scale = 12  // the width of the axis labels
      let rows = Array(series.rows.suffix(max(1, width - scale - 2)))
      let peak = max(rows.map(\.traffic.bytes).max() ?? 0, 1)
      lines.append(TextStyle.bold.apply(HistoryTable.title(series, options: options), color: options.color))
      // Each column's received and total height in cells.
      let columns = rows.map { row -> (rx: Int, total: Int) in
        let total = Int((Double(row.traffic.bytes) / Double(peak) * Double(height)).rounded())
        let rx = Int((Double(row.traffic.rxBytes) / Double(peak) * Double(height)).rounded())
        // Any traffic shows: at least one cell.
        let shown = row.traffic.bytes > 0 ? max(total, 1) : 0
        return (min(rx, shown), shown)
      }
      for level in stride(from: height, through: 1, by: -1) {
        let axis: String
        switch level {
        case height: axis = options.estimate(peak)
        case (height + 1) / 2: axis = options.estimate(peak / 2)
        default: axis = ""
        }
        var line = TerminalText.pad(axis, to: scale, alignRight: true) + " ┤"
        var styled = ""
        for column in columns {
          styled += column.rx >= level ? "█" : column.total >= level ? "▒" : " "
        }
        line += TextStyle.cyan.apply(styled, color: options.color)
        lines.append(line.trimmingTrailingSpaces)
      }
      lines.append(
        TerminalText.pad("0", to: scale, alignRight: true) + " └" + String(repeating: "─", count: rows.count))
      lines.append(String(repeating: " ", count: scale + 2) + axisLabels(rows, history))
      lines.append(
        TerminalText.truncate(
          String(repeating: " ", count: scale + 2) + "█ received  ▒ sent  (" + unit(history) + ")", to: width))
      lines.append("")
    }
    lines += StatusTable.estimateNote(color: options.color)
    return lines.joined(separator: "\n") + "\n"
  }

  /// Tick labels under the columns, each starting over its column, evenly spaced, never
  /// touching.
  static func axisLabels(_ rows: [TrafficHistory.Row], _ history: TrafficHistory) -> String {
    let step = (rows.first.map { tick($0.start, history).count } ?? 2) + 1
    var line = ""
    for (i, row) in rows.enumerated() where i % step == 0 && i >= line.count {
      line += String(repeating: " ", count: i - line.count) + tick(row.start, history)
    }
    return line
  }

  /// A short tick: `13` (hour), `15` (day), `11` (month), `13:05` (5 minutes).
  static func tick(_ start: Int64, _ history: TrafficHistory) -> String {
    let parts = history.calendar.civil(start)
    func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
    switch history.granularity {
    case .fiveMinutes: return "\(two(parts.hour)):\(two(parts.minute))"
    case .hour: return two(parts.hour)
    case .day: return two(parts.day)
    case .month: return two(parts.month)
    }
  }

  static func unit(_ history: TrafficHistory) -> String {
    switch history.granularity {
    case .fiveMinutes: "per 5 minutes, by time"
    case .hour: "per hour, by hour of the day"
    case .day: "per day, by day of the month"
    case .month:
      history.monthStartDay == 1
        ? "per month, by month" : "per month from the \(UsagePeriod.ordinal(history.monthStartDay)), by month"
    }
  }
}

/// `vpnstat history --json`.
package enum HistoryJSON {
  package static func render(_ history: TrafficHistory) -> [UInt8] {
    var json = JSONWriter()
    json.beginObject()
    json.envelope(generatedAt: history.generatedAt, estimateNotes: StatusSnapshot.estimateNotes)
    json.field("granularity", history.granularity.name)
    json.field("by", history.grouping.rawValue)
    json.field("order", history.order.rawValue)
    json.field("month_start_day", history.monthStartDay)
    json.field("since", history.since?.rfc3339)
    json.field("until", history.until?.rfc3339)
    json.key("series")
    json.beginArray()
    for series in history.series {
      json.beginObject()
      json.field("class", series.interfaceClass.rawValue)
      json.name(series.name, key: "interface", encodingKey: "name_encoding")
      json.key("buckets")
      json.beginArray()
      for row in series.rows {
        json.beginObject()
        bounds(row, into: &json)
        json.trafficCounts(row.traffic)
        json.endObject()
      }
      json.endArray()
      json.key("current")
      if let current = series.current {
        json.beginObject()
        bounds(current.row, into: &json)
        json.field("elapsed_seconds", current.elapsedSeconds)
        json.trafficCounts(current.row.traffic)
        json.field("average_rx_bytes_per_second", current.averageRate.rxBytesPerSecond)
        json.field("average_tx_bytes_per_second", current.averageRate.txBytesPerSecond)
        json.field("projected_rx_bytes", current.projected.rxBytes)
        json.field("projected_tx_bytes", current.projected.txBytes)
        json.field("estimate", true)
        json.endObject()
      } else {
        json.null()
      }
      json.endObject()
    }
    json.endArray()
    json.endObject()
    return json.bytes
  }

  static func bounds(_ row: TrafficHistory.Row, into json: inout JSONWriter) {
    json.field("start", Timestamp(seconds: row.start).rfc3339)
    json.field("end", Timestamp(seconds: row.end).rfc3339)
  }
}
