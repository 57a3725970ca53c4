import VPNStatCore

#if canImport(Glibc)
  import Glibc
#endif

/// `vpnstat status`: one report of every interface by class, as a table or as JSON.
enum StatusCommand: Subcommand {
  static let spec = CommandSpec(
    name: "status", abstract: "Show traffic per interface and class, and the session window.",
    options: [
      CommonOptions.json, CommonOptions.source, CommonOptions.interface, CommonOptions.only,
      CommonOptions.classOverride, CommonOptions.bytes, CommonOptions.noColor,
      OptionSpec(
        "rate", .optionalValue("duration"),
        help: "Sample twice, DURATION apart (default 1s), and show rates.",
        accepts: { parseDuration($0) != nil }, expected: durationExpectation),
      CommonOptions.db, CommonOptions.sessionLength, CommonOptions.pauseLength, CommonOptions.maxRate,
      CommonOptions.sysfsRoot,
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let selection = try CommonOptions.selection(parsed)
    let rateInterval: Duration? =
      parsed.has("rate")
      ? (try parsed.value("rate", expected: "a duration such as 500ms, 1s, 2m") {
        $0.isEmpty ? .seconds(1) : parseDuration($0)
      })
      : nil
    var sampler = try CommonOptions.sampler(parsed)
    let store = try Store.open(CommonOptions.storeLocation(parsed, context), intent: .read)

    var previous: CounterSample?
    if let rateInterval {
      previous = try sampler.sample()
      sleep(for: rateInterval)
    }
    let (sample, ledger, warnings) = try CommonOptions.sample(&sampler, store: store)
    var snapshot = StatusSnapshot.make(
      sample: sample, catalog: &sampler.catalog, selection: selection, previous: previous, ledger: ledger)
    snapshot.warnings += warnings
    snapshot.session = try CommonOptions.sessionReport(store, parsed, sampler: &sampler, sample: sample, ledger: ledger)
    if store == nil, parsed.has("db") {
      snapshot.warnings.append(
        "no database at \(CommonOptions.storeLocation(parsed, context).path) (vpnstat record creates one)")
    }
    for name in selection.names.sorted() where !sample.interfaces.contains(where: { $0.name == name }) {
      context.warn("no interface named '\(name.terminalText)'")
    }
    if parsed.has("json") {
      var bytes = StatusJSON.render(snapshot)
      bytes.append(0x0A)
      try context.write(bytes)
    } else {
      try context.write(StatusTable.render(snapshot, options: CommonOptions.display(parsed, context)))
    }
    let missing = selection.names.contains { name in !sample.interfaces.contains { $0.name == name } }
    return missing && snapshot.interfaces.isEmpty ? .unavailable : .success
  }
}

/// Sleeps the calling thread for `duration`, resuming after signals until the time is up.
func sleep(for duration: Duration) {
  var request = timespec(
    tv_sec: Int(duration.components.seconds),
    tv_nsec: Int(duration.components.attoseconds / 1_000_000_000))
  var remaining = timespec()
  while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}
