import VPNStatEngine
import VPNStatModel
import VPNStatRender

/// `vpnstat status`: one report of every interface by class, as a table or as JSON.
enum StatusCommand: Subcommand {
  static let rate = Option.duration(
    "rate", implied: .seconds(1), help: "Sample twice, DURATION apart (default 1s), and show rates.")

  static let spec = CommandSpec(
    name: "status", abstract: "Show traffic per interface and class, and the session window.",
    discussion: """
      RX and TX are the kernel's counters for the interface's current instance (since it was
      created: a tunnel's restart at every reconnect). TOTAL RX and TOTAL TX, shown when there
      is a database, are the ledger's totals since vpnstat first saw the name, bridged across
      every reset and wrap it saw, and include the traffic since the last save. MANAGER says who
      manages each tunnel (none: link-down is how it is stopped). For today and this month, run
      vpnstat report.
      """,
    options: [
      CommonOptions.json.spec, CommonOptions.source.spec, CommonOptions.interface.spec, CommonOptions.only.spec,
      CommonOptions.classOverride.spec, CommonOptions.bytes.spec, CommonOptions.noColor.spec, rate.spec,
      CommonOptions.db.spec, CommonOptions.sessionLength.spec, CommonOptions.pauseLength.spec,
      CommonOptions.maxRate.spec, CommonOptions.sysfsRoot.spec, CommonOptions.wgQuickDirectory.spec,
      CommonOptions.systemdUnit.spec,
    ] + CommonOptions.figures)

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let location = CommandServices.storeLocation(parsed, context)
    let source = try CommandServices.reportSource(location, context)
    let absence = parsed.has(CommonOptions.db) ? source.absence(at: location) : nil
    // Handed over, not shared: a second holder of what was published would make the report's
    // advance of its ledger copy the whole table first.
    var reader = try CommandServices.statusReader(parsed, context, source: consume source)
    let report = try reader.report(
      StatusRequest(
        selection: CommandServices.selection(parsed), rateInterval: parsed[rate],
        nextLengths: CommandServices.lengths(parsed)))
    var snapshot = report.snapshot
    if let absence { snapshot.warnings.append(absence) }
    // The reader (its samples, catalog and ledger) and the report are freed by the exit.
    defer { context.leaveToExit((reader, report)) }
    for name in report.missing { context.warn("no interface named '\(name.terminalText)'") }
    if parsed.has(CommonOptions.json) {
      try context.write(pieces: { StatusJSON.writeLine(snapshot, to: $0) })
    } else {
      try context.write(StatusTable.render(snapshot, options: CommandServices.display(parsed, context)))
    }
    return !report.missing.isEmpty && snapshot.interfaces.isEmpty ? .unavailable : .success
  }
}
