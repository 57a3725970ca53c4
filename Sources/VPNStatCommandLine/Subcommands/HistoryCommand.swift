import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat history`: usage per 5 minutes, hour, day or month from the recorded buckets, as a
/// table, a bar chart, JSON or an SVG picture; the busiest days; ranges; billing months.
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
    view("days", .day, "days", defaultCount: 30, kept: "775 days"),
    view("months", .month, "months", defaultCount: 12, kept: "25 months"),
  ]
  static let defaultView = views[2]

  static let by = Option<TrafficHistory.Grouping>.oneOf(
    "by", valueName: "grouping", help: "Rows per class or per interface (default: class; interface with -i).")
  static let top = Option.count(
    "top", in: 1...TrafficGranularity.day.retainedBuckets,
    help: "The N busiest days (most bytes, both directions), busiest first (1 to 775: the days kept).")
  static let boundExpectation =
    "an RFC 3339 instant such as 2026-11-29T12:00:00Z, or a date from 1970-01-01 to \(TimeBound.latestDate)"
  static let since = Option<TimeBound>(
    "since", valueName: "when", help: "From WHEN: an RFC 3339 instant or a local date YYYY-MM-DD (its midnight).",
    expected: boundExpectation,
    parse: TimeBound.init(parsing:))
  static let until = Option<TimeBound>(
    "until", valueName: "when", help: "Up to WHEN (excluded): an RFC 3339 instant, or a local date (included).",
    expected: boundExpectation,
    parse: TimeBound.init(parsing:))
  static let graph = Flag("graph", help: "Draw a bar chart per series (received and sent), one column per bucket.")
  static let svg = Option<String>(
    "svg", valueName: "file",
    help:
      "Write bar charts as SVG to FILE (- or /dev/stdout for standard output; a device or FIFO is written into, a regular file replaced atomically): hours, days and months (or the view given), the session and the data cap marked.",
    expected: "a file name or -", values: .file, parse: { $0.isEmpty ? nil : $0 })

  static let spec = CommandSpec(
    name: "history", abstract: "Show recorded usage per 5 minutes, hour, day or month; the busiest days; charts.",
    options: views.map(\.option.spec) + [
      top.spec, since.spec, until.spec, CommonOptions.monthStartDay.spec, by.spec, CommonOptions.interface.spec,
      CommonOptions.only.spec, CommonOptions.json.spec, graph.spec, svg.spec, CommonOptions.bytes.spec,
      CommonOptions.noColor.spec, CommonOptions.db.spec, CommonOptions.source.spec, CommonOptions.classOverride.spec,
      CommonOptions.maxRate.spec, CommonOptions.sysfsRoot.spec,
    ] + CommonOptions.figures,
    exclusions: [
      .atMostOne(of: views.map(\.option.spec), "choose one of --five-minutes, --hours, --days, --months"),
      .atMostOne(of: [CommonOptions.json.spec, graph.spec, svg.spec], "choose one of --json, --graph, --svg"),
      .notBoth(
        views.map { Exclusion.Member($0.option.spec, onlyWithValue: true) },
        [Exclusion.Member(since.spec), Exclusion.Member(until.spec)],
        "give either a count or --since/--until, not both"),
      .notBoth(
        [top.spec], views.filter { $0.granularity != .day }.map(\.option.spec),
        "--top ranks days: use it alone or with --days"),
      .notBoth([top.spec], [graph.spec, svg.spec], "--top is a list: it cannot be drawn with --graph or --svg"),
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let location = CommandServices.storeLocation(parsed, context)
    guard let store = try context.openStore(location, intent: .read) else {
      throw GeneralFailure(.unavailable, "no database at \(location.path); vpnstat record creates it")
    }
    // The traffic since the last save is in the current rows, as `status` counts it in the
    // totals: this command's own sample, past the stored ledger.
    var sampler = CommandServices.sampler(parsed, context)
    let sampled = try readerSample(&sampler, store: store, context)
    let query = try Query(parsed, now: sampled?.sample.taken.wall ?? context.clock.now().wall, context.calendar)
    try CommandServices.requireKnown(query.selection, sample: sampled?.sample, ledger: sampled?.ledger)
    let display = CommandServices.display(parsed, context)
    if let file = parsed[svg] {
      // One panel for the view given; hours, days and months otherwise.
      let shown = query.given.map { [$0] } ?? Array(views.dropFirst())
      let panels = try RecordedTraffic.reading(store, ledger: sampled?.ledger) { traffic in
        try shown.map { try query.history($0, traffic) }
      }
      let session = try SessionView.report(
        SessionRequest(
          reading: sampled?.sample.taken ?? context.clock.now(), sample: sampled?.sample, ledger: sampled?.ledger,
          nextLengths: CommandServices.lengths(parsed)),
        store: store, catalog: &sampler.catalog)
      let picture = HistorySVG.render(panels, session: session, options: display, generatedAt: query.now)
      if file.hasSuffix("/") {
        throw UsageError(
          "--svg needs a file name, not a directory: \(TerminalText.sanitize(file))", commandPath: parsed.commandPath)
      }
      try context.writeFile(Array(picture.utf8), named: file)
      return .success
    }
    var result = try RecordedTraffic.reading(store, ledger: sampled?.ledger) {
      try query.history(query.given ?? defaultView, $0)
    }
    if let n = parsed[top] { result = result.top(n) }
    if parsed.has(CommonOptions.json) {
      try context.write(HistoryJSON.render(result) + [0x0A])
    } else {
      let width = TerminalSize.of(context.standardOutput)?.columns ?? 100
      try context.write(
        parsed.has(graph)
          ? HistoryGraph.render(result, options: display, width: width)
          : HistoryTable.render(result, options: display, width: width))
    }
    return .success
  }

  /// Which rows the command line asks for: the view, the count or the range, the grouping and
  /// the selection, at `now`.
  struct Query {
    let parsed: ParsedCommand
    /// The view given (at most one: the spec excludes more).
    let given: View?
    let selection: InterfaceSelection
    let grouping: TrafficHistory.Grouping
    let since: Int64?
    let until: Int64?
    let now: Timestamp
    let calendar: any LocalCalendar
    /// A count given as a number, not only the view's default.
    let explicitCount: Bool

    init(_ parsed: ParsedCommand, now: Timestamp, _ calendar: any LocalCalendar) throws {
      self.parsed = parsed
      given = views.first { parsed.has($0.option) }
      selection = CommandServices.selection(parsed)
      grouping = parsed[by] ?? (selection.names.isEmpty ? .class : .interface)
      since = parsed[HistoryCommand.since].map { $0.start(in: calendar) }
      until = parsed[HistoryCommand.until].map { $0.end(in: calendar) }
      if let since, let until, since >= until {
        throw UsageError("--since must be before --until", commandPath: parsed.commandPath)
      }
      self.now = now
      self.calendar = calendar
      explicitCount = given.map { parsed.value($0.option.spec.long)?.isEmpty == false } ?? false
    }

    /// The history of one view: the last N rows, or the range asked for.
    func history(_ view: View, _ traffic: RecordedTraffic) throws -> TrafficHistory {
      let rows = HistoryRows(view.granularity, monthStartDay: parsed[CommonOptions.monthStartDay] ?? 1)
      let count = parsed[view.option] ?? view.option.implied ?? 1
      // Without --since: the last N rows (all the days kept, for --top without a count).
      let from =
        since
        ?? (parsed.has(top) && !explicitCount
          ? rows.start(ofLast: view.granularity.retainedBuckets, at: now, in: calendar)
          : rows.start(ofLast: count, at: now, in: calendar))
      var made = TrafficHistory.make(
        buckets: try traffic.buckets(rows.source, since: rows.start(of: Timestamp(seconds: from), in: calendar)),
        rows: rows, from: from, until: until, now: now, grouping: grouping, selection: selection,
        calendar: calendar)
      made.since = since.map { Timestamp(seconds: $0) }
      made.until = until.map { Timestamp(seconds: $0) }
      return made
    }
  }

  /// Says on stderr which interfaces' counters could not be read (in a `--sysfs-root` tree, a
  /// file that is broken or not a regular file): they are left out of the figures, not hidden.
  static func warn(about sample: CounterSample, _ context: CommandContext) {
    for problem in sample.problems { context.warn("\(problem.name.terminalText): \(problem.message)") }
  }

  /// A reader's sample of the kernel over the stored ledger, for the traffic not saved yet; nil,
  /// with a warning, when the counters cannot be read (then the saved buckets alone are shown).
  static func readerSample(_ sampler: inout TrafficSampler, store: Store, _ context: CommandContext) throws -> (
    sample: CounterSample, ledger: Ledger
  )? {
    do {
      let read = try ReaderSample.take(&sampler, store: store)
      for warning in read.warnings { context.warn(warning) }
      warn(about: read.sample, context)
      return read.ledger.map { (read.sample, $0) }
    } catch let error as StoreError {
      throw error
    } catch {
      context.warn("cannot read the interfaces' counters (\(error)): showing what was saved, without the traffic since")
      return nil
    }
  }
}
