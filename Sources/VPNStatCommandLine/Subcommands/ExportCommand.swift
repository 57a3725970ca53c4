import VPNStatEngine
import VPNStatModel
import VPNStatRender

/// `vpnstat export`: the ledger as OpenMetrics text, for a scrape or a one-off.
enum ExportCommand: Subcommand {
  static let format = Option<OpenMetrics.Format>.oneOf(
    "format", valueName: "format",
    help: "The text format (default openmetrics; prometheus is what node_exporter's textfile collector reads).")

  static let spec = CommandSpec(
    name: "export",
    abstract: "Print metrics: per interface and class, and the session window (OpenMetrics by default).",
    options: [
      format.spec, CommonOptions.source.spec, CommonOptions.classOverride.spec, CommonOptions.db.spec,
      CommonOptions.maxRate.spec, CommonOptions.sessionLength.spec, CommonOptions.pauseLength.spec,
      CommonOptions.sysfsRoot.spec,
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    var sampler = CommandServices.sampler(parsed, context)
    let location = CommandServices.storeLocation(parsed, context)
    var source = try CommandServices.reportSource(location, context)
    let export = try MetricsExport.take(
      &sampler, source: &source, location: location, nextLengths: CommandServices.lengths(parsed))
    // The sampler, the sample, the ledger and the store are freed by the exit.
    defer { context.leaveToExit((sampler, export, source)) }
    for warning in export.warnings { context.warn(warning) }
    HistoryCommand.warn(about: export.read.sample, context)
    // Bytes: metrics are for programs, in UTF-8 whatever the locale.
    try context.write(pieces: {
      OpenMetrics.write(
        ledger: export.ledger, session: export.session, health: export.read.health, at: export.read.sample.taken.wall,
        format: parsed[format] ?? .openmetrics, to: $0)
    })
    return .success
  }
}
