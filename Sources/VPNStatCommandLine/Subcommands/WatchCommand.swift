import VPNStatEngine
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat watch`: the live view a person keeps open, or a stream of lines for a script.
enum WatchCommand: Subcommand {
  static let interval = Option.duration(
    "interval", short: "n", help: "Time between refreshes (default 1s; fractions allowed, e.g. 500ms).")
  static let count = Option.count("count", in: 1...1_000_000_000, help: "Stop after N refreshes (1 to 1000000000).")

  static let spec = CommandSpec(
    name: "watch", abstract: "Live rates, totals and the session countdown (full screen on a terminal).",
    discussion: """
      On a terminal: a full-screen view refreshed every interval; keys q quit, c cycle the class,
      b bytes/bits, ? help. Piped, or with TERM=dumb: one plain line per interface per interval.
      With --json: one JSON object per line (the status schema with rates), flushed as each is
      made.
      """,
    options: [
      interval.spec, count.spec, CommonOptions.json.spec, CommonOptions.source.spec, CommonOptions.interface.spec,
      CommonOptions.only.spec, CommonOptions.classOverride.spec, CommonOptions.noColor.spec, CommonOptions.db.spec,
      CommonOptions.sessionLength.spec, CommonOptions.pauseLength.spec, CommonOptions.maxRate.spec,
      CommonOptions.sysfsRoot.spec,
    ] + CommonOptions.figures)

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let every = parsed[interval] ?? .seconds(1)
    let mode: LiveView.Mode =
      parsed.has(CommonOptions.json)
      ? .json
      : (context.canDrawScreen && context.standardError.isTerminal && context.standardInput.isTerminal
        ? .terminal : .plain)
    let store = try context.openStore(CommandServices.storeLocation(parsed, context), intent: .read)
    var view = LiveView(
      sampler: CommandServices.sampler(parsed, context), store: store, selection: CommandServices.selection(parsed),
      interval: every, nextLengths: CommandServices.lengths(parsed), options: CommandServices.display(parsed, context))
    view.wireGuard = CommandServices.wireGuard()
    try LiveViewLoop.run(
      &view, mode: mode, interval: every, count: parsed[count], output: context.standardOutput,
      input: context.standardInput)
    return .success
  }
}
