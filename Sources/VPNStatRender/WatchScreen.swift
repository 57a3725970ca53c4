import VPNStatModel

/// What the live view shows besides the snapshot: the person's choices.
package struct WatchViewState: Hashable, Sendable {
  /// The class shown (nil: all).
  package var classFilter: InterfaceClass?
  /// Figures in bits instead of bytes (`--bits`, toggled by `b`).
  package var bits = false
  package var showHelp = false
  package var interval: Duration = .seconds(1)

  package init(
    classFilter: InterfaceClass? = nil, bits: Bool = false, showHelp: Bool = false, interval: Duration = .seconds(1)
  ) {
    self.classFilter = classFilter
    self.bits = bits
    self.showHelp = showHelp
    self.interval = interval
  }

  /// `c`: all → each class present → all.
  package mutating func cycleClass(present: [InterfaceClass]) {
    let order = InterfaceClass.allCases.filter { present.contains($0) }
    guard let current = classFilter, let index = order.firstIndex(of: current) else {
      classFilter = order.first
      return
    }
    classFilter = index + 1 < order.count ? order[index + 1] : nil
  }
}

/// `vpnstat watch` on a terminal: a pure function of a snapshot, the rate history, the view
/// state and the terminal's size. Every line fits the width; nothing raw from a name gets out.
package enum WatchScreen {
  struct Column {
    var header: String
    var alignRight: Bool
    /// Lower goes first when the terminal is narrow.
    var priority: Int
    var cell: (InterfaceReport) -> String
    var groupCell: (ClassSummary) -> String
  }

  /// A line of the screen and the style it is shown in; colour is applied to whole lines at the end.
  typealias StyledLine = (text: String, style: TextStyle)

  package static func render(
    _ snapshot: StatusSnapshot, history: RateHistory, state: WatchViewState, size: TerminalSize,
    options: DisplayOptions
  ) -> [String] {
    let width = max(size.columns, 1)
    let height = max(size.rows, 1)
    let ellipsis = options.ascii ? TerminalText.asciiEllipsis : "…"
    let color = options.color
    var options = options
    // The screen shows units (never raw bytes) and lets the `b` key choose bits; colour is
    // applied to whole lines at the end.
    options.color = false
    options.rawBytes = false
    options.bits = state.bits
    // Positions in the snapshot, not copies of its (large) reports: a thousand of them are
    // counted and grouped at every refresh, and only a screenful is ever read in full.
    let reports = snapshot.interfaces
    let shown = reports.indices.filter { state.classFilter == nil || reports[$0].interfaceClass == state.classFilter }
    let hasLedger = shown.contains { reports[$0].ledger != nil }

    var lines = [titleLine(snapshot, state: state, width: width, options: options)]
    lines += sessionLines(snapshot.session, options: options)
    if state.showHelp { lines += helpLines(hasLedger: hasLedger) }
    lines.append(("", .plain))

    // Decide which rows fit first, then measure only those: with a thousand interfaces only a
    // screenful is ever formatted.
    var rows = Self.rows(snapshot, shown: shown)
    // Room for rows: below the header line, above the estimate note.
    let bodyLimit = max(height - lines.count - 2, 0)
    var hidden = 0
    if rows.count > bodyLimit {
      hidden = rows.count - max(bodyLimit - 1, 0)
      rows = Array(rows.prefix(max(bodyLimit - 1, 0)))
    }
    let table = Table(
      rows: rows, columns: columns(hasLedger: hasLedger, options: options), reports: reports, width: width,
      ellipsis: ellipsis, options: options)
    lines += table.lines(history: history, at: snapshot.generatedAt)
    if shown.isEmpty {
      let filterName = state.classFilter?.rawValue ?? "all"
      lines.append((state.classFilter == nil ? "no interfaces" : "no \(filterName) interfaces (press c)", .dim))
    }
    if hidden > 0 {
      lines.append(("… \(hidden) more lines (enlarge the terminal, or press c to filter)", .dim))
    }
    lines.append(("≈ estimates: interface counters include protocol overhead and are per interface, not per app", .dim))
    return fitted(lines, width: width, height: height, ellipsis: ellipsis, color: color, options: options)
  }

  /// The first line: what is shown and how often, the time, and the keys at the right when they fit.
  static func titleLine(_ snapshot: StatusSnapshot, state: WatchViewState, width: Int, options: DisplayOptions)
    -> StyledLine
  {
    let filterName = state.classFilter?.rawValue ?? "all"
    let title =
      "vpnstat watch · \(snapshot.source.rawValue) · every \(intervalText(state.interval)) · \(snapshot.generatedAt.localClockTime(in: options.calendar, withSeconds: true))"
    let keys = "q quit · c class: \(filterName) · b \(state.bits ? "bits" : "bytes") · ? help"
    guard TerminalText.width(title) + 3 + TerminalText.width(keys) <= width else { return (title, .bold) }
    return (
      title + String(repeating: " ", count: width - TerminalText.width(title) - TerminalText.width(keys)) + keys,
      .bold
    )
  }

  /// The session's headline in the colour of its state and its details; without a database, why there is none.
  static func sessionLines(_ session: SessionReport?, options: DisplayOptions) -> [StyledLine] {
    guard let session else {
      return [("session: no database (run vpnstat record, or give --db) · figures are the kernel's", .dim)]
    }
    let style: TextStyle =
      switch session.state {
      case .active, .unlimited: .green
      case .paused, .expired: .red
      case .none: .plain
      }
    return [(SessionText.headline(session, calendar: options.calendar), style)]
      + SessionText.details(session, options: options).map { ($0, .plain) }
  }

  /// The `?` overlay: the keys, and what the figure columns shown count.
  static func helpLines(hasLedger: Bool) -> [StyledLine] {
    let help =
      [
        "q, Ctrl-C  quit", "c          cycle the class shown (all, then each class present)",
        "b          figures in bits or bytes", "?          this help",
        "RX/S TX/S are rates over the last interval;",
      ]
      + (hasLedger
        ? [
          "TOTAL RX, TOTAL TX are the ledger's totals, bridged across resets (interface",
          "recreated, reboot) and 32-bit wraps; RESETS counts the resets.",
        ]
        : [
          "RX, TX are the kernel's counters of the current instance: they restart when the",
          "interface is recreated (a database keeps totals across that: vpnstat record).",
        ])
      + ["wg: under a WireGuard tunnel, its latest handshake and its peers' encrypted transfer."]
    return [("", .plain)] + help.map { ("  " + $0, .yellow) }
  }

  /// The figure columns: rates always, then the ledger's totals when there is a ledger, else the
  /// kernel's counters.
  static func columns(hasLedger: Bool, options: DisplayOptions) -> [Column] {
    var columns: [Column] = [
      Column(header: "STATE", alignRight: false, priority: 3, cell: { $0.state.rawValue }, groupCell: { _ in "" }),
      Column(
        header: "RX/S", alignRight: true, priority: 9, cell: { options.rate($0.rate?.rxBytesPerSecond) },
        groupCell: { options.rate($0.rate?.rxBytesPerSecond) }),
      Column(
        header: "TX/S", alignRight: true, priority: 8, cell: { options.rate($0.rate?.txBytesPerSecond) },
        groupCell: { options.rate($0.rate?.txBytesPerSecond) }),
    ]
    if hasLedger {
      columns += [
        Column(
          header: "TOTAL RX", alignRight: true, priority: 5, cell: { options.estimate($0.ledger?.traffic.rxBytes) },
          groupCell: { options.estimate($0.totals?.traffic.rxBytes) }),
        Column(
          header: "TOTAL TX", alignRight: true, priority: 4, cell: { options.estimate($0.ledger?.traffic.txBytes) },
          groupCell: { options.estimate($0.totals?.traffic.txBytes) }),
        Column(
          header: "RESETS", alignRight: true, priority: 2, cell: { $0.ledger.map { String($0.resets) } ?? "–" },
          groupCell: { $0.totals.map { String($0.resets) } ?? "" }),
      ]
    } else {
      columns += [
        Column(
          header: "RX", alignRight: true, priority: 5, cell: { options.estimate($0.counters.traffic.rxBytes) },
          groupCell: { options.estimate($0.counters.rxBytes) }),
        Column(
          header: "TX", alignRight: true, priority: 4, cell: { options.estimate($0.counters.traffic.txBytes) },
          groupCell: { options.estimate($0.counters.txBytes) }),
      ]
    }
    return columns
  }

  /// A row of the table.
  enum Row {
    case group(InterfaceClass, Int, ClassSummary)
    /// The report at this position in the snapshot.
    case member(Int)
    /// The line under a WireGuard tunnel: its own handshake and encrypted transfer.
    case wireguard(WireGuardStatus)
  }

  /// Every row of the interfaces shown: a class, then its members, each WireGuard tunnel with its line.
  static func rows(_ snapshot: StatusSnapshot, shown: [Int]) -> [Row] {
    let reports = snapshot.interfaces
    let summaries = snapshot.classes
    var rows: [Row] = []
    for interfaceClass in InterfaceClass.allCases {
      let members = shown.filter { reports[$0].interfaceClass == interfaceClass }
      guard !members.isEmpty, let summary = summaries[interfaceClass] else { continue }
      rows.append(.group(interfaceClass, members.count, summary))
      for member in members {
        rows.append(.member(member))
        if let wireguard = reports[member].wireguard { rows.append(.wireguard(wireguard)) }
      }
    }
    return rows
  }

  /// The rows that fit, laid out: the name column, the columns kept at this width (lowest
  /// priority dropped first) and the room left for the sparkline.
  struct Table {
    let rows: [Row]
    let columns: [Column]
    let reports: [InterfaceReport]
    let width: Int
    let ellipsis: String
    let options: DisplayOptions
    var nameWidth: Int
    /// The columns kept, by position in `columns`, and their widths.
    var kept: [Int]
    var keptWidths: [Int]
    /// Each row's texts in the kept columns.
    var cellTexts: [[String]]
    var sparkWidth: Int {
      max(0, min(60, width - fixedWidth - 2))
    }
    var fixedWidth: Int { nameWidth + keptWidths.reduce(0) { $0 + $1 + 2 } }

    init(
      rows: [Row], columns: [Column], reports: [InterfaceReport], width: Int, ellipsis: String,
      options: DisplayOptions
    ) {
      self.rows = rows
      self.columns = columns
      self.reports = reports
      self.width = width
      self.ellipsis = ellipsis
      self.options = options
      nameWidth = 0
      kept = Array(columns.indices)
      keptWidths = []
      cellTexts = []
      // Through static functions: a method called in an initializer is handed a copy of `self`
      // (its arrays counted up and down), once per row and column.
      nameWidth = min(
        max(rows.map { TerminalText.width(Self.label($0, reports: reports, options: options)) }.max() ?? 9, 10),
        max(10, width / 3))
      let allTexts = rows.map { row in columns.map { Self.text($0, row, reports: reports) } }
      func widths(_ indices: [Int]) -> [Int] {
        indices.map { c in
          allTexts.reduce(TerminalText.width(columns[c].header)) { max($0, TerminalText.width($1[c])) }
        }
      }
      // Drop columns, lowest priority first, until the fixed part leaves at least 6 cells of
      // sparkline (or nothing more can go).
      keptWidths = widths(kept)
      while fixedWidth + 8 > width, kept.count > 1,
        let lowest = kept.indices.min(by: { columns[kept[$0]].priority < columns[kept[$1]].priority })
      {
        kept.remove(at: lowest)
        keptWidths = widths(kept)
      }
      let keptColumns = kept
      cellTexts = allTexts.map { texts in keptColumns.map { texts[$0] } }
    }

    func label(_ row: Row) -> String { Self.label(row, reports: reports, options: options) }

    static func label(_ row: Row, reports: [InterfaceReport], options: DisplayOptions) -> String {
      switch row {
      case .group(let interfaceClass, let count, _): "\(interfaceClass.rawValue) (\(count))"
      case .member(let at): "  " + options.name(reports[at].name)
      case .wireguard: ""
      }
    }

    static func text(_ column: Column, _ row: Row, reports: [InterfaceReport]) -> String {
      switch row {
      case .group(_, _, let summary): column.groupCell(summary)
      case .member(let at): column.cell(reports[at])
      case .wireguard: ""
      }
    }

    func line(_ first: String, _ rest: [String], spark: String) -> String {
      var out = TerminalText.pad(TerminalText.truncate(first, to: nameWidth, ellipsis: ellipsis), to: nameWidth)
      for (i, text) in rest.enumerated() {
        out += "  " + TerminalText.pad(text, to: keptWidths[i], alignRight: columns[kept[i]].alignRight)
      }
      if sparkWidth > 0, !spark.isEmpty { out += "  " + spark }
      return TerminalText.truncate(out.trimmingTrailingSpaces, to: width, ellipsis: ellipsis)
    }

    /// The header and a line per row: classes bold, interfaces that are not up dim, each with
    /// its sparkline, a WireGuard tunnel's line under it.
    func lines(history: RateHistory, at now: Timestamp) -> [StyledLine] {
      let sparkWidth = self.sparkWidth
      var lines: [StyledLine] = [
        (line("INTERFACE", kept.map { columns[$0].header }, spark: sparkWidth > 0 ? "RECENT" : ""), .bold)
      ]
      for (i, row) in rows.enumerated() {
        switch row {
        case .group:
          lines.append((line(label(row), cellTexts[i], spark: ""), .bold))
        case .member(let at):
          lines.append(
            (
              line(label(row), cellTexts[i], spark: history.sparkline(for: reports[at].name, width: sparkWidth)),
              reports[at].state == .up ? .plain : .dim
            ))
        case .wireguard(let status):
          lines.append(
            (
              "    " + WireGuardText.summary(status, at: now, options: options),
              status.device == nil ? .yellow : .cyan
            ))
        }
      }
      return lines
    }
  }

  /// The lines cut to the terminal: the note and the title matter most, so the middle goes if
  /// it must; every line sanitised, cut to the width and styled.
  static func fitted(
    _ lines: [StyledLine], width: Int, height: Int, ellipsis: String, color: Bool, options: DisplayOptions
  ) -> [String] {
    var lines = lines
    if lines.count > height {
      let note = lines.removeLast()
      lines = Array(lines.prefix(max(height - 1, 0))) + (height >= 2 ? [note] : [])
      if lines.count > height { lines = Array(lines.prefix(height)) }
    }
    return lines.map { line, style in
      // Every symbol has an ASCII form of its width, so the layout holds in ASCII too.
      let fitted = TerminalText.truncate(options.terminal(TerminalText.sanitize(line)), to: width, ellipsis: ellipsis)
      return style.apply(fitted, color: color)
    }
  }

  static func intervalText(_ interval: Duration) -> String {
    let ms = interval.nanoseconds / 1_000_000
    return ms % 1000 == 0 ? "\(ms / 1000)s" : "\(ms)ms"
  }

  /// One plain line per interface, for pipes and files: no escape codes, fields separated by
  /// spaces, every figure marked as an estimate.
  package static func plainLines(_ snapshot: StatusSnapshot, options: DisplayOptions) -> [String] {
    var options = options
    options.color = false
    options.rawBytes = true
    let time = snapshot.generatedAt.rfc3339
    var lines: [String] = []
    if let session = snapshot.session {
      lines.append("\(time) \(SessionText.headline(session, calendar: options.calendar))")
    }
    for report in snapshot.interfaces {
      var line = "\(time) \(report.interfaceClass.rawValue) \(report.name.escaped) \(report.state.rawValue)"
      line += " rx/s=\(options.rate(report.rate?.rxBytesPerSecond).replacingSpaces)"
      line += " tx/s=\(options.rate(report.rate?.txBytesPerSecond).replacingSpaces)"
      line += " rx=≈\(report.counters.traffic.rxBytes) tx=≈\(report.counters.traffic.txBytes)"
      if let ledger = report.ledger {
        line += " total_rx=≈\(ledger.traffic.rxBytes) total_tx=≈\(ledger.traffic.txBytes) resets=\(ledger.resets)"
      }
      if let wireguard = report.wireguard { line += WireGuardText.plainFields(wireguard) }
      lines.append(line)
    }
    return lines.map(options.terminal)
  }
}

extension String {
  /// "≈ 12 B/s" → "≈12B/s": one token per field in plain output.
  var replacingSpaces: String { split(separator: " ").joined() }
}
