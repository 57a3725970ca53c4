import VPNStatCore

/// `vpnstat history`: usage per 5 minutes, hour, day or month from the recorded buckets.
enum HistoryCommand: Subcommand {
  static let spec = CommandSpec(
    name: "history", abstract: "Show recorded usage per 5 minutes, hour, day or month.",
    options: views.map(countOption) + [
      OptionSpec(
        "by", .value("grouping"), help: "Rows per class or per interface (default: class; interface with -i).",
        accepts: { TrafficHistory.Grouping(rawValue: $0) != nil }),
      CommonOptions.interface, CommonOptions.only, CommonOptions.json, CommonOptions.bytes,
      CommonOptions.noColor, CommonOptions.db,
    ])

  /// One view: its option, its buckets, what they are called, the default N and how long the
  /// database keeps them.
  struct View {
    var option: String
    var granularity: TrafficGranularity
    var buckets: String
    var defaultCount: Int
    var kept: String
  }

  static let views = [
    View(
      option: "five-minutes", granularity: .fiveMinutes, buckets: "5-minute buckets", defaultCount: 24, kept: "48 hours"
    ),
    View(option: "hours", granularity: .hour, buckets: "hours", defaultCount: 24, kept: "7 days"),
    View(option: "days", granularity: .day, buckets: "days", defaultCount: 30, kept: "62 days"),
    View(option: "months", granularity: .month, buckets: "months", defaultCount: 12, kept: "25 months"),
  ]
  static let defaultView = views[2]

  /// `--hours [N]`: N from 1 to the buckets the database keeps — asking for more could show
  /// nothing more, and an unbounded N cost time and memory.
  static func countOption(_ view: View) -> OptionSpec {
    let range = 1...view.granularity.retainedBuckets
    let isDefault = view.option == defaultView.option ? ", and the default view" : ""
    return OptionSpec(
      view.option, .optionalValue("n"),
      help:
        "The last N \(view.buckets) (default \(view.defaultCount)\(isDefault); 1 to \(range.upperBound): the database keeps \(view.kept)).",
      accepts: { parseCount($0, in: range) != nil }, expected: "a number from 1 to \(range.upperBound)")
  }

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let given = views.filter { parsed.has($0.option) }
    if given.count > 1 {
      throw UsageError(
        "choose one of --five-minutes, --hours, --days, --months", commandPath: parsed.commandPath)
    }
    let view = given.first ?? defaultView
    let granularity = view.granularity
    let range = 1...granularity.retainedBuckets
    let count =
      try parsed.value(view.option, expected: "a number from 1 to \(range.upperBound)") {
        $0.isEmpty ? view.defaultCount : parseCount($0, in: range)
      } ?? view.defaultCount
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
