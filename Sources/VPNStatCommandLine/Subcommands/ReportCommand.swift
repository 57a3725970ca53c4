import VPNStatEngine
import VPNStatModel
import VPNStatRender
import VPNStatStore

/// `vpnstat report`: how much today, yesterday, this month and last month, per class, with the
/// current day's and month's projections and the session window on one screen — the first
/// command a person runs (vnStat's bare `vnstat`). Its figures are `history`'s, which are
/// `status`'s: the saved buckets plus this command's own sample of the traffic since.
enum ReportCommand: Subcommand {
  static let spec = CommandSpec(
    name: "report",
    abstract: "How much today, yesterday, this month and last month, per class, with projections: start here.",
    discussion: """
      Every class but loopback, unless -i or --only says otherwise. The figures are what the
      recorder saved plus the traffic since its last save, read from the kernel now (as in
      status and history). With no database it says what to run, and shows the kernel's
      counters meanwhile. PROJECTED is the day's and the month's total at their pace so far.
      With --json, the same figures as one object (vpnstat-json(7)'s report document).
      """,
    options: [
      CommonOptions.json.spec, CommonOptions.interface.spec, CommonOptions.only.spec, CommonOptions.monthStartDay.spec,
      CommonOptions.bytes.spec, CommonOptions.noColor.spec, CommonOptions.db.spec, CommonOptions.saveInterval.spec,
      CommonOptions.sessionLength.spec, CommonOptions.pauseLength.spec, CommonOptions.source.spec,
      CommonOptions.classOverride.spec, CommonOptions.maxRate.spec, CommonOptions.sysfsRoot.spec,
    ] + CommonOptions.figures)

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    var selection = CommandServices.selection(parsed)
    if selection.names.isEmpty && selection.classes.isEmpty {
      selection.classes = Set(InterfaceClass.allCases.filter { $0 != .loopback })
    }
    let display = CommandServices.display(parsed, context)
    let location = CommandServices.storeLocation(parsed, context)
    var sampler = CommandServices.sampler(parsed, context)
    let store = try context.openStore(location, intent: .read)
    guard let store, !(try store.loadLedger().entries.isEmpty) else {
      // Nothing recorded: say what to run, and meanwhile what the kernel counts.
      let sample = try sampler.sample()
      HistoryCommand.warn(about: sample, context)
      try CommandServices.requireKnown(selection, sample: sample, ledger: nil)
      let snapshot = StatusSnapshot.make(
        sample: sample, catalog: &sampler.catalog, selection: selection, previous: nil, ledger: nil)
      if parsed.has(CommonOptions.json) {
        let empty = UsageSummary.empty(
          at: sample.taken.wall, monthStartDay: parsed[CommonOptions.monthStartDay] ?? 1, calendar: context.calendar)
        try context.write(ReportJSON.render(empty, session: nil, savedAt: nil, recorded: false) + [0x0A])
        return .success
      }
      // The recorder for the database this report reads: the default one, or the one named.
      let record = "vpnstat record" + (parsed.has(CommonOptions.db) ? " --db \(Self.shellWord(location.path))" : "")
      try context.write(
        UsageReportText.nothingRecorded(
          snapshot, database: location.path, exists: store != nil, record: record, options: display))
      return .success
    }
    // Counters that cannot be read leave the saved figures (said on stderr).
    let sampled = try HistoryCommand.readerSample(&sampler, store: store, context)
    try CommandServices.requireKnown(selection, sample: sampled?.sample, ledger: sampled?.ledger)
    let reading = sampled?.sample.taken ?? context.clock.now()
    let now = reading.wall
    let calendar = context.calendar
    let grouping: TrafficHistory.Grouping = selection.names.isEmpty ? .class : .interface
    let days = HistoryRows(.day)
    let months = HistoryRows(.month, monthStartDay: parsed[CommonOptions.monthStartDay] ?? 1)
    let summary = try RecordedTraffic.reading(store, ledger: sampled?.ledger) { traffic in
      func history(_ rows: HistoryRows, _ grouping: TrafficHistory.Grouping) throws -> TrafficHistory {
        let from = rows.start(ofLast: 2, at: now, in: calendar)
        return TrafficHistory.make(
          buckets: try traffic.buckets(rows.source, since: from), rows: rows, from: from, until: nil, now: now,
          grouping: grouping, selection: selection, calendar: calendar)
      }
      return UsageSummary.make(
        days: try history(days, grouping), months: try history(months, grouping),
        monthsByInterface: try history(months, .interface))
    }
    let session = try SessionView.report(
      SessionRequest(
        reading: reading, sample: sampled?.sample, ledger: sampled?.ledger, nextLengths: CommandServices.lengths(parsed)
      ),
      store: store, catalog: &sampler.catalog)
    let saveInterval = parsed[CommonOptions.saveInterval] ?? .seconds(60)
    let saved = try store.lastSaved()
    if parsed.has(CommonOptions.json) {
      try context.write(ReportJSON.render(summary, session: session, savedAt: saved, recorded: true) + [0x0A])
      return .success
    }
    let notes = saved.map { freshness(saved: $0, now: now, saveInterval: saveInterval, calendar) }
    try context.write(
      UsageReportText.render(summary, session: session, notes: notes.map { [$0] } ?? [], options: display))
    return .success
  }

  /// `path` as one word a shell reads back: as it is when it holds nothing a shell treats
  /// specially, else in single quotes.
  static func shellWord(_ path: String) -> String {
    let plain = path.utf8.allSatisfy { byte in
      (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        || Array("/._-+=:,@%".utf8).contains(byte)
    }
    return plain && !path.isEmpty
      ? path : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
  }

  /// How current the saved figures are: the last save, and — when it is older than three save
  /// intervals — that the recorder may not be running (the traffic since is still counted, in
  /// today, where its next save books it).
  static func freshness(saved: Timestamp, now: Timestamp, saveInterval: Duration, _ calendar: any LocalCalendar)
    -> String
  {
    let age = now - saved
    let since = "the traffic since is read from the kernel now and counted in today"
    guard age > saveInterval * 3 else {
      return "saved at \(saved.localTime(near: now, in: calendar)); \(since)."
    }
    let ago = Units.duration(seconds: max(0, age.nanoseconds) / 1_000_000_000)
    return
      "nothing saved since \(saved.localDateTime(in: calendar)) (\(ago) ago): is vpnstat record running? (systemctl status vpnstat-record); \(since)."
  }
}
