import VPNStatCore

/// `vpnstat history`: usage per 5 minutes, hour, day or month from the recorded buckets.
enum HistoryCommand: Subcommand {
  static let spec = CommandSpec(
    name: "history", abstract: "Show recorded usage per 5 minutes, hour, day or month.",
    options: [
      OptionSpec(
        "five-minutes", .optionalValue("n"), help: "The last N 5-minute buckets (default 24).",
        accepts: { parsePositiveInt($0) != nil }),
      OptionSpec(
        "hours", .optionalValue("n"), help: "The last N hours (default 24).", accepts: { parsePositiveInt($0) != nil }),
      OptionSpec(
        "days", .optionalValue("n"), help: "The last N days (default 30; the default view).",
        accepts: { parsePositiveInt($0) != nil }),
      OptionSpec(
        "months", .optionalValue("n"), help: "The last N months (default 12).", accepts: { parsePositiveInt($0) != nil }
      ),
      OptionSpec(
        "by", .value("grouping"), help: "Rows per class or per interface (default: class; interface with -i).",
        accepts: { TrafficHistory.Grouping(rawValue: $0) != nil }),
      CommonOptions.interface, CommonOptions.only, CommonOptions.json, CommonOptions.bytes,
      CommonOptions.noColor, CommonOptions.db,
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let choices: [(String, TrafficGranularity, Int)] = [
      ("five-minutes", .fiveMinutes, 24), ("hours", .hour, 24), ("days", .day, 30), ("months", .month, 12),
    ]
    let given = choices.filter { parsed.has($0.0) }
    if given.count > 1 {
      throw UsageError(
        "choose one of --five-minutes, --hours, --days, --months", commandPath: parsed.commandPath)
    }
    let (option, granularity, defaultCount) = given.first ?? ("days", .day, 30)
    let count =
      try parsed.value(option, expected: "a positive number") { $0.isEmpty ? defaultCount : parsePositiveInt($0) }
      ?? defaultCount
    let selection = try CommonOptions.selection(parsed)
    let grouping =
      try parsed.value("by", expected: "class or interface", TrafficHistory.Grouping.init(rawValue:))
      ?? (selection.names.isEmpty ? .class : .interface)
    let location = CommonOptions.storeLocation(parsed, context)
    guard let store = try Store.open(location, intent: .read) else {
      throw GeneralFailure(.unavailable, "no database at \(location.path); vpnstat record creates it")
    }
    let now = SystemTimeSource().now().wall
    let since = granularity.start(ofLast: count, at: now)
    let history = TrafficHistory.make(
      buckets: try store.buckets(granularity, since: since), granularity: granularity, count: count,
      now: now, grouping: grouping, selection: selection)
    if parsed.has("json") {
      try context.write(HistoryJSON.render(history) + [0x0A])
    } else {
      let width = TerminalSize.of(context.standardOutput)?.columns ?? 100
      try context.write(HistoryTable.render(history, options: CommonOptions.display(parsed, context), width: width))
    }
    return .success
  }
}
