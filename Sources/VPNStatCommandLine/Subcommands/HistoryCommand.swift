import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat history`: usage per 5 minutes, hour, day or month from the recorded buckets.
enum HistoryCommand: Subcommand {
  /// One view: its option, its buckets, the default N and how long the database keeps them.
  struct View: Sendable {
    var granularity: TrafficGranularity
    var option: Option<Int>
  }

  /// `--hours [N]`: N from 1 to the buckets the database keeps — asking for more could show
  /// nothing more, and an unbounded N cost time and memory.
  static func view(
    _ long: String, _ granularity: TrafficGranularity, _ buckets: String, defaultCount: Int, kept: String
  )
    -> View
  {
    let upper = granularity.retainedBuckets
    let isDefault = granularity == .day ? ", and the default view" : ""
    return View(
      granularity: granularity,
      option: .count(
        long, in: 1...upper, implied: defaultCount,
        help: "The last N \(buckets) (default \(defaultCount)\(isDefault); 1 to \(upper): the database keeps \(kept)).")
    )
  }

  static let views = [
    view("five-minutes", .fiveMinutes, "5-minute buckets", defaultCount: 24, kept: "48 hours"),
    view("hours", .hour, "hours", defaultCount: 24, kept: "7 days"),
    view("days", .day, "days", defaultCount: 30, kept: "62 days"),
    view("months", .month, "months", defaultCount: 12, kept: "25 months"),
  ]
  static let defaultView = views[2]

  static let by = Option<TrafficHistory.Grouping>.oneOf(
    "by", valueName: "grouping", help: "Rows per class or per interface (default: class; interface with -i).")

  static let spec = CommandSpec(
    name: "history", abstract: "Show recorded usage per 5 minutes, hour, day or month.",
    options: views.map(\.option.spec) + [
      by.spec, CommonOptions.interface.spec, CommonOptions.only.spec, CommonOptions.json.spec,
      CommonOptions.bytes.spec, CommonOptions.noColor.spec, CommonOptions.db.spec,
    ] + CommonOptions.figures)

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let given = views.filter { parsed.has($0.option) }
    if given.count > 1 {
      throw UsageError("choose one of --five-minutes, --hours, --days, --months", commandPath: parsed.commandPath)
    }
    let view = given.first ?? defaultView
    let count = parsed[view.option] ?? view.option.implied ?? 1
    let selection = CommonOptions.selection(parsed)
    let grouping = parsed[by] ?? (selection.names.isEmpty ? .class : .interface)
    let location = CommonOptions.storeLocation(parsed, context)
    guard let store = try context.openStore(location, intent: .read) else {
      throw GeneralFailure(.unavailable, "no database at \(location.path); vpnstat record creates it")
    }
    let now = context.clock.now().wall
    let since = view.granularity.start(ofLast: count, at: now, in: context.calendar)
    let history = TrafficHistory.make(
      buckets: try store.buckets(view.granularity, since: since), granularity: view.granularity, count: count,
      now: now, grouping: grouping, selection: selection, calendar: context.calendar)
    if parsed.has(CommonOptions.json) {
      try context.write(HistoryJSON.render(history) + [0x0A])
    } else {
      let width = TerminalSize.of(context.standardOutput)?.columns ?? 100
      try context.write(HistoryTable.render(history, options: CommonOptions.display(parsed, context), width: width))
    }
    return .success
  }
}
