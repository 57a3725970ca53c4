import VPNStatCore

/// `vpnstat watch`: the live view a person keeps open, or a stream of lines for a script.
enum WatchCommand: Subcommand {
  static let spec = CommandSpec(
    name: "watch", abstract: "Live rates, totals and the session countdown (full screen on a terminal).",
    discussion: """
      On a terminal: a full-screen view refreshed every interval; keys q quit, c cycle the class,
      b bytes/bits, ? help. Piped: one plain line per interface per interval. With --json: one
      JSON object per line (the status schema with rates), flushed as each is made.
      """,
    options: [
      OptionSpec.duration(
        "interval", short: "n",
        help: "Time between refreshes (default 1s; fractions allowed, e.g. 500ms)."),
      OptionSpec("count", .value("n"), help: "Stop after N refreshes.", accepts: { parsePositiveInt($0) != nil }),
      CommonOptions.json, CommonOptions.source, CommonOptions.interface, CommonOptions.only,
      CommonOptions.classOverride, CommonOptions.noColor, CommonOptions.db, CommonOptions.sessionLength,
      CommonOptions.pauseLength, CommonOptions.maxRate, CommonOptions.sysfsRoot,
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let interval =
      try parsed.value("interval", expected: "a duration such as 1s or 500ms", parseDuration) ?? .seconds(1)
    let count = try parsed.value("count", expected: "a positive number", parsePositiveInt)
    let mode: LiveView.Mode =
      parsed.has("json")
      ? .json
      : (context.standardOutput.isTerminal && context.standardError.isTerminal
        && FileDescriptor.standardInput.isTerminal
        ? .terminal(color: context.colorEnabled(parsed)) : .plain)
    let store = try Store.open(CommonOptions.storeLocation(parsed, context), intent: .read)
    var view = LiveView(
      sampler: try CommonOptions.sampler(parsed), store: store, selection: try CommonOptions.selection(parsed),
      interval: interval, count: count, mode: mode, nextLengths: try CommonOptions.lengths(parsed))
    try view.run()
    return .success
  }
}
