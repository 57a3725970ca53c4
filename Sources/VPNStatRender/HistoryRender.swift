import VPNStatModel

/// `vpnstat history` as a table: one block per class or interface, a row per bucket with a bar.
public enum HistoryTable {
  public static func render(_ history: TrafficHistory, options: DisplayOptions, width: Int = 80) -> String {
    guard !history.series.isEmpty else {
      return "No traffic recorded in this range (vpnstat record fills the database).\n"
        + StatusTable.estimateNote(color: options.color).joined(separator: "\n") + "\n"
    }
    var lines: [String] = []
    for series in history.series {
      let title =
        series.name.map { "\(options.name($0)) (\(series.interfaceClass.rawValue))" } ?? series.interfaceClass.rawValue
      var table = TextTable(columns: [
        TextTable.Column(history.granularity == .month ? "MONTH" : history.granularity == .day ? "DAY" : "TIME"),
        TextTable.Column("RX", alignRight: true), TextTable.Column("TX", alignRight: true),
        TextTable.Column("TOTAL", alignRight: true), TextTable.Column(""),
      ])
      let peak = max(series.rows.map(\.traffic.bytes).max() ?? 0, 1)
      var cells: [[TextTable.Cell]] = []
      for row in series.rows {
        cells.append([
          TextTable.Cell(label(row.start, history.granularity, calendar: history.calendar)),
          TextTable.Cell(options.estimate(row.traffic.rxBytes)),
          TextTable.Cell(options.estimate(row.traffic.txBytes)), TextTable.Cell(options.estimate(row.traffic.bytes)),
        ])
      }
      // The bar takes what the other columns leave, between 10 and 40 cells.
      let used = cells.reduce(0) { max($0, $1.reduce(0) { $0 + TerminalText.width($1.text) + 2 }) }
      let barWidth = max(10, min(40, width - used - 2))
      for (i, row) in series.rows.enumerated() {
        table.add(cells[i] + [TextTable.Cell(bar(row.traffic.bytes, of: peak, width: barWidth), .cyan)])
      }
      var sum = TrafficHistory.Row(start: 0, end: 0)
      for row in series.rows {
        sum.traffic.rxBytes &+= row.traffic.rxBytes
        sum.traffic.txBytes &+= row.traffic.txBytes
      }
      table.add([
        TextTable.Cell("sum", .bold), TextTable.Cell(options.estimate(sum.traffic.rxBytes), .bold),
        TextTable.Cell(options.estimate(sum.traffic.txBytes), .bold),
        TextTable.Cell(options.estimate(sum.traffic.bytes), .bold),
      ])
      lines.append(TextStyle.bold.apply(title, color: options.color))
      lines += table.render(color: options.color, maxWidth: width).map { "  " + $0 }
      lines.append("")
    }
    lines += StatusTable.estimateNote(color: options.color)
    return lines.joined(separator: "\n") + "\n"
  }

  /// A horizontal bar in eighths of a cell.
  static func bar(_ value: UInt64, of peak: UInt64, width: Int) -> String {
    let eighths = Int((Double(value) / Double(peak) * Double(width * 8)).rounded())
    let blocks = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
    return String(repeating: "█", count: eighths / 8) + blocks[eighths % 8]
  }

  static func label(_ start: Int64, _ granularity: TrafficGranularity, calendar: any LocalCalendar) -> String {
    let parts = calendar.civil(start)
    func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
    let date = "\(parts.year)-\(two(parts.month))"
    switch granularity {
    case .month: return date
    case .day:
      let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
      return date + "-\(two(parts.day)) \(weekdays[parts.weekday])"
    case .hour, .fiveMinutes: return date + "-\(two(parts.day)) \(two(parts.hour)):\(two(parts.minute))"
    }
  }
}

/// `vpnstat history --json`.
public enum HistoryJSON {
  public static func render(_ history: TrafficHistory) -> [UInt8] {
    var json = JSONWriter()
    json.beginObject()
    json.envelope(generatedAt: history.generatedAt, estimateNotes: StatusSnapshot.estimateNotes)
    json.key("granularity")
    json.string(history.granularity.name)
    json.key("by")
    json.string(history.grouping.rawValue)
    json.key("series")
    json.beginArray()
    for series in history.series {
      json.beginObject()
      json.key("class")
      json.string(series.interfaceClass.rawValue)
      json.name(series.name, key: "interface", encodingKey: "name_encoding")
      json.key("buckets")
      json.beginArray()
      for row in series.rows {
        json.beginObject()
        json.key("start")
        json.string(Timestamp(seconds: row.start).rfc3339)
        json.key("end")
        json.string(Timestamp(seconds: row.end).rfc3339)
        json.trafficCounts(row.traffic)
        json.endObject()
      }
      json.endArray()
      json.endObject()
    }
    json.endArray()
    json.endObject()
    return json.bytes
  }
}
