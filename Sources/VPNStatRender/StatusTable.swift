import VPNStatModel

/// How a person wants figures shown.
package struct DisplayOptions: Sendable {
  /// ANSI colour (off for pipes, `NO_COLOR` and `--no-color`).
  package var color: Bool
  /// Raw byte counts instead of units (`--bytes`): sizes always, rates unless in `bits`.
  package var rawBytes: Bool
  /// Figures in bits instead of bytes (`--bits`, `watch`'s `b` key).
  package var bits: Bool
  /// IEC or SI prefixes (`--units`); nil: IEC for bytes, SI for bits, as link speeds are.
  package var units: UnitSystem?
  /// Text for a terminal that shows only ASCII (a locale that is not UTF-8): names escaped as
  /// `\xHH`, symbols in ASCII (see `TerminalText.ascii`).
  package var ascii: Bool
  /// The calendar local times ("until 12:45") are shown in.
  package var calendar: any LocalCalendar

  package init(
    color: Bool = false, rawBytes: Bool = false, bits: Bool = false, units: UnitSystem? = nil, ascii: Bool = false,
    calendar: any LocalCalendar = FixedOffsetCalendar.utc
  ) {
    self.color = color
    self.rawBytes = rawBytes
    self.bits = bits
    self.units = units
    self.ascii = ascii
    self.calendar = calendar
  }

  /// The options for figures shown against a limit of `bytes`: unless units were chosen, the
  /// prefixes the limit reads round in (`UnitSystem.natural`), so `--limit 10GB` shows as
  /// 10.0 GB, and the traffic beside it in GB too.
  package func matching(limit bytes: UInt64) -> DisplayOptions {
    guard units == nil, let natural = UnitSystem.natural(for: bytes) else { return self }
    var options = self
    options.units = natural
    return options
  }

  /// A byte figure, marked as an estimate.
  package func estimate(_ bytes: UInt64) -> String {
    "≈ " + (rawBytes ? String(bytes) : scaled(bytes))
  }

  /// An exact byte figure (a limit, an axis tick) in the chosen units: `2.00 GiB`, `2147483648 B`.
  package func size(_ bytes: UInt64) -> String { rawBytes ? "\(bytes) B" : scaled(bytes) }

  private func scaled(_ bytes: UInt64) -> String { Units.size(bytes, units: units ?? (bits ? .si : .iec), bits: bits) }
  package func estimate(_ bytes: UInt64?) -> String { bytes.map(estimate) ?? "–" }

  package func rate(_ bytesPerSecond: Double?) -> String {
    guard let bytesPerSecond else { return "–" }
    if rawBytes, !bits { return "≈ \(Units.whole(bytesPerSecond)) B/s" }
    return "≈ " + Units.rate(bytesPerSecond, units: units, bits: bits)
  }

  /// An interface name as this terminal can show it: `terminalText`, or with `ascii` every byte
  /// beyond ASCII as `\xHH` too (the escaped form `-i` takes back).
  package func name(_ name: InterfaceName) -> String {
    ascii ? TerminalText.escapingNonASCII(name.terminalText) : name.terminalText
  }

  /// A finished line or text as this terminal can show it.
  package func terminal(_ text: String) -> String { ascii ? TerminalText.ascii(text) : text }
}

/// `vpnstat status` as a table: interfaces grouped by class (tunnel first), each class with its
/// sums, and the footer that says why every figure is an estimate.
package enum StatusTable {
  package static func render(_ snapshot: StatusSnapshot, options: DisplayOptions) -> String {
    let shown = Shown(snapshot)
    var table = TextTable(columns: shown.columns)
    let classes = snapshot.classes
    for interfaceClass in InterfaceClass.allCases {
      let members = snapshot.interfaces.filter { $0.interfaceClass == interfaceClass }
      guard let summary = classes[interfaceClass], !members.isEmpty else { continue }
      table.add(shown.classRow(interfaceClass, summary, options: options))
      for report in members {
        table.add(shown.interfaceRow(report, options: options))
        if let wireguard = report.wireguard {
          let style: TextStyle = wireguard.device == nil ? .yellow : .cyan
          for line in WireGuardText.lines(wireguard, at: snapshot.generatedAt, options: options) {
            table.addLine(TextTable.Cell("    " + line, style))
          }
        }
      }
    }
    var lines: [String] = []
    if let session = snapshot.session {
      lines.append(
        TextStyle.bold.apply(SessionText.headline(session, calendar: options.calendar), color: options.color))
      lines += SessionText.details(session, options: options)
      lines.append("")
    }
    if snapshot.interfaces.isEmpty {
      lines.append("No interfaces matched.")
    } else {
      lines += table.render(color: options.color)
    }
    lines.append("")
    lines += footer(snapshot, color: options.color)
    return lines.joined(separator: "\n") + "\n"
  }

  /// The optional columns a snapshot fills: rates once there is a previous sample, the ledger's
  /// totals when there is a ledger, the manager when one was looked for.
  struct Shown {
    var rates: Bool
    var ledger: Bool
    var managers: Bool

    init(_ snapshot: StatusSnapshot) {
      ledger = snapshot.interfaces.contains { $0.ledger != nil }
      rates = snapshot.interfaces.contains { $0.rate != nil }
      managers = snapshot.interfaces.contains { $0.hasManager }
    }

    var columns: [TextTable.Column] {
      var columns = [
        TextTable.Column("INTERFACE"), TextTable.Column("STATE"),
        TextTable.Column("RX", alignRight: true), TextTable.Column("TX", alignRight: true),
      ]
      if rates {
        columns += [TextTable.Column("RX/S", alignRight: true), TextTable.Column("TX/S", alignRight: true)]
      }
      columns += [
        TextTable.Column("RX PKTS", alignRight: true), TextTable.Column("TX PKTS", alignRight: true),
      ]
      if ledger {
        columns += [
          TextTable.Column("TOTAL RX", alignRight: true), TextTable.Column("TOTAL TX", alignRight: true),
          TextTable.Column("RESETS", alignRight: true),
        ]
      }
      columns.append(TextTable.Column("CLASS BY"))
      if managers { columns.append(TextTable.Column("MANAGER")) }
      return columns
    }

    /// A class's sums, bold but for the packet counts.
    func classRow(_ interfaceClass: InterfaceClass, _ summary: ClassSummary, options: DisplayOptions)
      -> [TextTable.Cell]
    {
      var cells = [
        TextTable.Cell("\(interfaceClass.rawValue) (\(summary.interfaces))", .bold),
        TextTable.Cell(""), TextTable.Cell(options.estimate(summary.counters.rxBytes), .bold),
        TextTable.Cell(options.estimate(summary.counters.txBytes), .bold),
      ]
      if rates {
        cells += [
          TextTable.Cell(options.rate(summary.rate?.rxBytesPerSecond), .bold),
          TextTable.Cell(options.rate(summary.rate?.txBytesPerSecond), .bold),
        ]
      }
      cells += [
        TextTable.Cell(Units.grouped(summary.counters.rxPackets)),
        TextTable.Cell(Units.grouped(summary.counters.txPackets)),
      ]
      if ledger {
        cells += [
          TextTable.Cell(options.estimate(summary.totals?.traffic.rxBytes), .bold),
          TextTable.Cell(options.estimate(summary.totals?.traffic.txBytes), .bold),
          TextTable.Cell(summary.totals.map { String($0.resets) } ?? "–"),
        ]
      }
      if managers { cells.append(TextTable.Cell("")) }
      return cells
    }

    /// One interface, its state in the colour of the state.
    func interfaceRow(_ report: InterfaceReport, options: DisplayOptions) -> [TextTable.Cell] {
      var row = [
        TextTable.Cell("  " + options.name(report.name)),
        TextTable.Cell(report.state.rawValue, report.state == .up ? .green : report.state == .down ? .red : .yellow),
        TextTable.Cell(options.estimate(report.counters.traffic.rxBytes)),
        TextTable.Cell(options.estimate(report.counters.traffic.txBytes)),
      ]
      if rates {
        row += [
          TextTable.Cell(options.rate(report.rate?.rxBytesPerSecond)),
          TextTable.Cell(options.rate(report.rate?.txBytesPerSecond)),
        ]
      }
      row += [
        TextTable.Cell(Units.grouped(report.counters.traffic.rxPackets)),
        TextTable.Cell(Units.grouped(report.counters.traffic.txPackets)),
      ]
      if ledger {
        row += [
          TextTable.Cell(options.estimate(report.ledger?.traffic.rxBytes)),
          TextTable.Cell(options.estimate(report.ledger?.traffic.txBytes)),
          TextTable.Cell(report.ledger.map { String($0.resets) } ?? "–"),
        ]
      }
      row.append(TextTable.Cell(report.classBy.rawValue, .dim))
      if managers { row.append(TextTable.Cell(report.manager?.kind.rawValue ?? "")) }
      return row
    }
  }

  /// What RX and TOTAL RX count, under a table that has both.
  static let columnNote =
    "RX, TX: since the interface was created; TOTAL RX, TX: since vpnstat first saw it, across resets."

  /// The two-line estimate note every table ends with.
  static func estimateNote(color: Bool) -> [String] {
    [
      TextStyle.dim.apply(
        "≈ estimates: counters include protocol overhead and are per interface, not per app;",
        color: color),
      TextStyle.dim.apply(
        "  they restart when an interface is recreated (vpnstat bridges the restarts it saw).",
        color: color),
    ]
  }

  /// The estimate note, what the columns count, then the reader and any problems.
  static func footer(_ snapshot: StatusSnapshot, color: Bool) -> [String] {
    var lines = estimateNote(color: color)
    if snapshot.interfaces.contains(where: { $0.ledger != nil }) {
      lines.append(TextStyle.dim.apply("  " + columnNote, color: color))
    }
    if snapshot.interfaces.contains(where: { $0.wireguard?.device != nil }) {
      lines.append(TextStyle.dim.apply("  " + WireGuardText.note, color: color))
    }
    // How each manager was found; a tunnel no manager runs says so in its MANAGER cell alone
    // (`none`): that is not a problem, and a line under every table would read like one.
    for report in snapshot.interfaces {
      guard let manager = report.manager, manager.kind != .none else { continue }
      lines.append(
        TextStyle.dim.apply("\(report.name.terminalText): \(TunnelManagerText.describe(manager))", color: color))
    }
    var source = "source: \(snapshot.source.rawValue)"
    if let reason = snapshot.fallbackReason { source += " (\(TerminalText.sanitize(reason)))" }
    lines.append(TextStyle.dim.apply(source, color: color))
    for problem in snapshot.problems {
      lines.append(
        TextStyle.yellow.apply(
          "warning: \(problem.name.terminalText): \(TerminalText.sanitize(problem.message))",
          color: color))
    }
    for warning in snapshot.warnings {
      lines.append(TextStyle.yellow.apply("warning: \(TerminalText.sanitize(warning))", color: color))
    }
    return lines
  }
}
