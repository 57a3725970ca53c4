import VPNStatKernel
import VPNStatModel
import VPNStatRender

/// `vpnstat flows` for people: the refreshing terminal screen (fitted to its size) and the
/// plain per-report blocks written when stdout is not a terminal. Pure functions of a snapshot.
package enum FlowView {
  /// How a person asked to see flows.
  package struct Options: Sendable {
    package var display: DisplayOptions
    /// At most this many flows, hosts and processes (`--top`).
    package var top: Int?
    package init(display: DisplayOptions = DisplayOptions(), top: Int? = nil) {
      self.display = display
      self.top = top
    }
  }

  /// The screen: no line wider than `width`, no more than `height` lines. Sections shrink to
  /// fit, flows keep most of the room; names and commands are sanitized.
  package static func render(_ snapshot: FlowSnapshot, width: Int, height: Int, options: Options)
    -> String
  {
    let width = max(width, 20)
    let height = max(height, 8)
    let color = options.display.color
    // In ASCII a cut is marked with one column too, and every symbol keeps its width.
    let ellipsis = options.display.ascii ? TerminalText.asciiEllipsis : "…"
    func fit(_ line: String) -> String { TerminalText.truncate(line, to: width, ellipsis: ellipsis) }
    var lines = header(snapshot, options: options).map(fit)
    for warning in snapshot.warnings {
      lines.append(TextStyle.yellow.apply(fit("warning: " + TerminalText.sanitize(warning)), color: color))
    }
    let footer = notes(snapshot).map { TextStyle.dim.apply(fit($0), color: color) }
    // Each table needs a blank line and a header row besides its rows.
    var room = height - lines.count - footer.count - 1 - 6
    let top = options.top ?? Int.max
    let processRows = min(snapshot.processes.count, top, max(1, room / 4))
    room -= processRows
    let hostRows = min(snapshot.hosts.count, top, max(1, room / 3))
    room -= hostRows
    let flowRows = min(snapshot.flows.count, top, max(1, room))
    lines.append("")
    lines += processTable(snapshot, rows: processRows, options: options).render(
      color: color, maxWidth: width, ellipsis: ellipsis)
    lines.append("")
    lines += flowTable(snapshot, rows: flowRows, options: options).render(
      color: color, maxWidth: width, ellipsis: ellipsis)
    lines.append("")
    lines += hostTable(snapshot, rows: hostRows, options: options).render(
      color: color, maxWidth: width, ellipsis: ellipsis)
    lines.append("")
    lines += footer
    return lines.prefix(height).map(options.display.terminal).joined(separator: "\n") + "\n"
  }

  /// One report as plain text for pipes and logs: the header, then every process, flow and host
  /// (or `--top` of each), then the notes, then a blank line.
  package static func renderPlain(_ snapshot: FlowSnapshot, options: Options) -> String {
    let top = options.top ?? Int.max
    var lines = header(snapshot, options: options)
    for warning in snapshot.warnings { lines.append("warning: " + TerminalText.sanitize(warning)) }
    lines.append("")
    lines += processTable(snapshot, rows: min(top, snapshot.processes.count), options: options)
      .render(color: false)
    lines.append("")
    lines += flowTable(snapshot, rows: min(top, snapshot.flows.count), options: options).render(
      color: false)
    lines.append("")
    lines += hostTable(snapshot, rows: min(top, snapshot.hosts.count), options: options).render(
      color: false)
    lines.append("")
    lines += notes(snapshot)
    return lines.joined(separator: "\n") + "\n\n"
  }

  static func header(_ snapshot: FlowSnapshot, options: Options) -> [String] {
    let display = options.display
    let what: String
    switch snapshot.origin {
    case .interface(let name, let index):
      what = display.name(name) + (index.map { " (ifindex \($0))" } ?? " (gone)")
    case .file(let path):
      what = "file " + TerminalText.sanitize(path)
    }
    var first =
      "flows on \(what), link-type \(snapshot.linkType.name), \(snapshot.generatedAt.rfc3339)"
    first += ", interval \(seconds(snapshot.intervalSeconds))"
    var second =
      "captured \(Units.grouped(snapshot.captured.packets)) packets, \(display.estimate(snapshot.captured.bytes)) (IP)"
    if snapshot.intervalSeconds > 0 {
      second +=
        ", \(display.rate(Double(snapshot.capturedInterval.bytes) / snapshot.intervalSeconds))"
    }
    if let drops = snapshot.drops {
      second += ", dropped \(drops.dropped), if-dropped \(drops.interfaceDropped)"
    }
    if let coverage = snapshot.coverage {
      second += ", coverage \(percent(coverage))"
    }
    if snapshot.restarts > 0 { second += ", reopened \(snapshot.restarts)×" }
    return [first, second]
  }

  static func notes(_ snapshot: FlowSnapshot) -> [String] {
    var text = "≈ capture estimate: IP bytes on this interface; drops counted"
    if snapshot.processesLookedUp { text += "; closed sockets = unknown" }
    return [text]
  }

  static func seconds(_ value: Double) -> String {
    let millis = Int64((value * 1000).rounded())
    let whole = millis / 1000
    let fraction = millis % 1000
    return "\(whole).\(fraction < 10 ? "00" : fraction < 100 ? "0" : "")\(fraction) s"
  }

  static func percent(_ value: Double) -> String {
    let tenths = Int64((value * 1000).rounded())
    return "\(tenths / 10).\(tenths % 10) %"
  }

  static func endpoint(_ address: IPAddress, _ port: UInt16, known: Bool) -> String {
    let text = address.isIPv4 ? address.description : "[" + address.description + "]"
    return known ? text + ":\(port)" : text
  }

  static func owner(_ owner: SocketOwner?) -> (pid: String, command: String) {
    guard let owner else { return ("–", "unknown") }
    return (String(owner.pid), owner.command.map(TerminalText.sanitize) ?? "?")
  }

  static func rateCells(
    _ interval: TrafficCounts, _ snapshot: FlowSnapshot, _ display: DisplayOptions
  ) -> [TextTable.Cell] {
    let seconds = snapshot.intervalSeconds
    return [
      TextTable.Cell(display.rate(seconds > 0 ? Double(interval.rxBytes) / seconds : nil)),
      TextTable.Cell(display.rate(seconds > 0 ? Double(interval.txBytes) / seconds : nil)),
    ]
  }

  static func totalCells(_ total: TrafficCounts, _ display: DisplayOptions) -> [TextTable.Cell] {
    [
      TextTable.Cell(display.estimate(total.rxBytes)),
      TextTable.Cell(display.estimate(total.txBytes)),
    ]
  }

  // Rates first and totals last: a narrow terminal cuts the totals, not who is sending.
  static var rateColumns: [TextTable.Column] {
    [TextTable.Column("RX/S", alignRight: true), TextTable.Column("TX/S", alignRight: true)]
  }
  static var totalColumns: [TextTable.Column] {
    [TextTable.Column("RX", alignRight: true), TextTable.Column("TX", alignRight: true)]
  }

  static func processTable(_ snapshot: FlowSnapshot, rows: Int, options: Options) -> TextTable {
    var table = TextTable(
      columns: [TextTable.Column("PID", alignRight: true), TextTable.Column("COMMAND")]
        + rateColumns
        + [TextTable.Column("FLOWS", alignRight: true)] + totalColumns)
    for process in snapshot.processes.prefix(rows) {
      let (pid, command) = owner(process.key)
      table.add(
        [TextTable.Cell(pid), TextTable.Cell(command, process.key == nil ? .dim : .bold)]
          + rateCells(process.interval, snapshot, options.display) + [
            TextTable.Cell(String(process.flows))
          ]
          + totalCells(process.total, options.display))
    }
    return table
  }

  static func flowTable(_ snapshot: FlowSnapshot, rows: Int, options: Options) -> TextTable {
    var table = TextTable(
      columns: [TextTable.Column("PROTO"), TextTable.Column("LOCAL"), TextTable.Column("REMOTE")]
        + rateColumns
        + [TextTable.Column("PID", alignRight: true), TextTable.Column("COMMAND")] + totalColumns)
    for report in snapshot.flows.prefix(rows) {
      let flow = report.flow
      let (pid, command) = owner(flow.owner)
      table.add(
        [
          TextTable.Cell(PacketParser.protocolName(flow.ipProtocol)),
          TextTable.Cell(endpoint(flow.localAddress, flow.localPort, known: flow.portsKnown)),
          TextTable.Cell(
            endpoint(flow.remoteAddress, flow.remotePort, known: flow.portsKnown), .cyan),
        ] + rateCells(report.interval, snapshot, options.display) + [
          TextTable.Cell(pid), TextTable.Cell(command, flow.owner == nil ? .dim : .plain),
        ] + totalCells(flow.counts, options.display))
    }
    return table
  }

  static func hostTable(_ snapshot: FlowSnapshot, rows: Int, options: Options) -> TextTable {
    var table = TextTable(
      columns: [TextTable.Column("REMOTE HOST")] + rateColumns + [
        TextTable.Column("FLOWS", alignRight: true)
      ]
        + totalColumns)
    for host in snapshot.hosts.prefix(rows) {
      table.add(
        [TextTable.Cell(host.key.description, .cyan)]
          + rateCells(host.interval, snapshot, options.display)
          + [TextTable.Cell(String(host.flows))] + totalCells(host.total, options.display))
    }
    return table
  }
}
