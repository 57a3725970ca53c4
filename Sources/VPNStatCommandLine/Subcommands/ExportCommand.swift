import VPNStatEngine
import VPNStatModel
import VPNStatRender
import VPNStatStore

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
    let (read, session) = try ReaderSample.takeWithSession(
      &sampler, source: &source, nextLengths: CommandServices.lengths(parsed), health: true)
    let health = read.health
    let sample = read.sample
    var (ledger, warnings) = (read.ledger, read.warnings)
    if ledger == nil {
      // No database: the kernel's counters of the current instances, which Prometheus' rate()
      // handles across resets the way it handles any counter reset.
      ledger = Ledger(kernelCountersOf: sampler.observations(sample))
      warnings.append("no database at \(location.path): exporting the kernel's counters of the current instances")
    }
    // The sampler, the sample, the ledger and the store are freed by the exit.
    defer { context.leaveToExit((sampler, read, ledger, source)) }
    for warning in warnings { context.warn(warning) }
    HistoryCommand.warn(about: sample, context)
    // Bytes: metrics are for programs, in UTF-8 whatever the locale.
    try context.write(pieces: {
      OpenMetrics.write(
        ledger: ledger ?? Ledger(), session: session, health: health, at: sample.taken.wall,
        format: parsed[format] ?? .openmetrics, to: $0)
    })
    return .success
  }
}
