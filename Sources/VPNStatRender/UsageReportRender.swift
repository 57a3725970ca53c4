import VPNStatModel

/// `vpnstat report` in words: today, yesterday, this month and last month per class, what the
/// current day and month come to at their pace, the session window, and what to do when
/// nothing is being recorded.
package enum UsageReportText {
  /// The report. `notes`: lines about how current the figures are (the command knows when the
  /// database was last saved), printed after the estimate note.
  package static func render(
    _ summary: UsageSummary, session: SessionReport?, notes: [String], options: DisplayOptions
  ) -> String {
    var lines: [String] = []
    if summary.series.isEmpty {
      lines.append("No traffic recorded yet in the last two months.")
    } else {
      var table = TextTable(columns: [
        TextTable.Column(""), TextTable.Column("FROM"), TextTable.Column("RX", alignRight: true),
        TextTable.Column("TX", alignRight: true), TextTable.Column("TOTAL", alignRight: true),
        TextTable.Column("PROJECTED", alignRight: true),
      ])
      for series in summary.series {
        table.addLine(TextTable.Cell(title(series, options: options), .bold))
        for line in series.lines {
          let current = line.period.isCurrent
          table.add([
            TextTable.Cell("  " + line.period.rawValue, current ? .bold : .plain),
            TextTable.Cell(date(line.row.start, summary.calendar), .dim),
            TextTable.Cell(options.estimate(line.row.traffic.rxBytes)),
            TextTable.Cell(options.estimate(line.row.traffic.txBytes)),
            TextTable.Cell(options.estimate(line.row.traffic.bytes), current ? .bold : .plain),
            TextTable.Cell(line.estimate.map { options.estimate($0.projected.bytes) } ?? ""),
          ])
        }
      }
      lines += table.render(color: options.color)
    }
    if let session {
      lines.append("")
      let style: TextStyle = session.canConnect ? .plain : .red
      lines.append(style.apply(SessionText.headline(session, calendar: options.calendar), color: options.color))
      if let cap = session.dataCap { lines.append(DataCapText.line(cap, options: options)) }
    }
    lines.append("")
    lines += StatusTable.estimateNote(color: options.color)
    if !summary.series.isEmpty {
      lines.append(
        TextStyle.dim.apply(
          "  PROJECTED: the day's and the month's total at their pace so far.", color: options.color))
    }
    lines += notes.map { TextStyle.dim.apply($0, color: options.color) }
    return lines.joined(separator: "\n") + "\n"
  }

  /// `tunnel: wg0, wg1`: the class and the interfaces it sums (the first five).
  static func title(_ series: UsageSummary.Series, options: DisplayOptions) -> String {
    if let name = series.name { return "\(options.name(name)) (\(series.interfaceClass.rawValue))" }
    let names = series.members.prefix(5).map(options.name).joined(separator: ", ")
    let more = series.members.count > 5 ? " and \(series.members.count - 5) more" : ""
    return series.members.isEmpty
      ? series.interfaceClass.rawValue : "\(series.interfaceClass.rawValue): \(names)\(more)"
  }

  /// `2026-11-25`: a period's first day.
  static func date(_ start: Int64, _ calendar: any LocalCalendar) -> String {
    String(Timestamp(seconds: start).localDateTime(in: calendar).prefix(10))
  }

  /// With no database (or nothing in it yet): where the figures will come from, what to run
  /// (`record`: the recorder's command line for this database), and meanwhile the kernel's
  /// counters per class, since each interface was created.
  package static func nothingRecorded(
    _ snapshot: StatusSnapshot, database path: String, exists: Bool, record: String, options: DisplayOptions
  ) -> String {
    var lines = [
      exists
        ? "Nothing recorded yet in \(TerminalText.sanitize(path))."
        : "No database at \(TerminalText.sanitize(path)): nothing has been recorded yet.",
      "vpnstat counts today and this month while its recorder runs. Start it, as root:",
      "  systemctl enable --now vpnstat-record   (the unit make install puts in place)",
      "  \(TerminalText.sanitize(record))   (or in a terminal, until Ctrl-C)",
    ]
    let classes = snapshot.classes
    let shown = InterfaceClass.allCases.filter { classes[$0] != nil }
    if !shown.isEmpty {
      lines += ["", "Until then, the kernel's counters, since each interface was created:"]
      var table = TextTable(columns: [
        TextTable.Column(""), TextTable.Column("RX", alignRight: true), TextTable.Column("TX", alignRight: true),
      ])
      for interfaceClass in shown {
        let members = snapshot.interfaces.filter { $0.interfaceClass == interfaceClass }
        let summary = classes[interfaceClass]!
        let names = members.prefix(5).map { options.name($0.name) }.joined(separator: ", ")
        table.add([
          TextTable.Cell("  \(interfaceClass.rawValue): \(names)\(members.count > 5 ? " …" : "")"),
          TextTable.Cell(options.estimate(summary.counters.rxBytes)),
          TextTable.Cell(options.estimate(summary.counters.txBytes)),
        ])
      }
      lines += table.render(color: options.color)
      lines.append("")
      lines += StatusTable.estimateNote(color: options.color)
    }
    return lines.joined(separator: "\n") + "\n"
  }
}

/// `vpnstat report --json`: the report's periods per class (or interface), with the current
/// ones' projections, the session object and when the figures were last saved — a versioned
/// object like every other.
package enum ReportJSON {
  /// `savedAt`: the recorder's last save (nil: none, or no database); `recorded`: whether there
  /// is a database with a ledger to report from (without one the series are empty).
  package static func render(
    _ summary: UsageSummary, session: SessionReport?, savedAt: Timestamp?, recorded: Bool
  ) -> [UInt8] {
    var json = JSONWriter()
    json.beginObject()
    json.envelope(generatedAt: summary.generatedAt, estimateNotes: StatusSnapshot.estimateNotes)
    json.field("recorded", recorded)
    json.field("saved_at", savedAt?.rfc3339(fractionDigits: 3))
    json.field("month_start_day", summary.monthStartDay)
    json.key("series")
    json.beginArray()
    for series in summary.series {
      json.beginObject()
      json.field("class", series.interfaceClass.rawValue)
      json.name(series.name, key: "interface", encodingKey: "name_encoding")
      json.names("members", series.members)
      json.key("periods")
      json.beginArray()
      for line in series.lines {
        json.beginObject()
        json.field("period", jsonName(line.period))
        HistoryJSON.bounds(line.row, into: &json)
        json.trafficCounts(line.row.traffic)
        json.field("projected_rx_bytes", line.estimate?.projected.rxBytes)
        json.field("projected_tx_bytes", line.estimate?.projected.txBytes)
        json.endObject()
      }
      json.endArray()
      json.endObject()
    }
    json.endArray()
    json.key("session")
    if let session { SessionJSON.write(session, into: &json) } else { json.null() }
    json.endObject()
    return json.bytes
  }

  /// The period as JSON names it: `today`, `yesterday`, `this-month`, `last-month`.
  static func jsonName(_ period: UsageSummary.Period) -> String {
    switch period {
    case .today: "today"
    case .yesterday: "yesterday"
    case .thisMonth: "this-month"
    case .lastMonth: "last-month"
    }
  }
}
