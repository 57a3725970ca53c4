import VPNStatEngine
import VPNStatModel
import VPNStatRender
import VPNStatStore

/// `vpnstat alert --limit SIZE --per PERIOD`: whether the traffic of this period has reached a
/// limit, as an exit status for cron and monitoring (vnStat's `--alert`): 1 once reached, 0 before.
enum AlertCommand: Subcommand {
  static let limit = Option<UInt64>(
    "limit", valueName: "size", help: "The limit: bytes per period, received and sent together, e.g. 5GB or 2GiB.",
    expected: sizeExpectation, parse: parseSize)
  static let quiet = Flag("quiet", short: "q", help: "Print nothing; the exit status says it all.")

  static let spec = CommandSpec(
    name: "alert",
    abstract: "Exit 1 when this period's traffic (default: the tunnel class) has reached --limit, 0 before.",
    discussion: """
      The traffic is what the ledger booked into the daily buckets since the period began, plus
      what this command's own sample adds (it only reads the database). Exit status 1 means the
      limit is reached; errors have their own statuses (64, 65, 69 …), never 1.
      """,
    options: [
      limit.spec, CommonOptions.per.spec, CommonOptions.monthStartDay.spec, CommonOptions.interface.spec,
      CommonOptions.only.spec, CommonOptions.json.spec, quiet.spec, CommonOptions.bytes.spec, CommonOptions.db.spec,
      CommonOptions.source.spec, CommonOptions.classOverride.spec, CommonOptions.maxRate.spec,
      CommonOptions.sysfsRoot.spec,
    ] + CommonOptions.figures,
    exclusions: [
      .notBoth(
        [CommonOptions.interface.spec], [CommonOptions.only.spec], "give either -i/--interface or --only, not both")
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    guard let limitBytes = parsed[limit] else {
      throw UsageError("missing --limit SIZE: the limit to check", commandPath: parsed.commandPath)
    }
    let selection = CommandServices.selection(parsed)
    let location = CommandServices.storeLocation(parsed, context)
    guard let store = try context.openStore(location, intent: .read) else {
      throw GeneralFailure(.unavailable, "no database at \(location.path); vpnstat record creates it")
    }
    var sampler = CommandServices.sampler(parsed, context)
    let check = LimitCheck(
      limit: DataCap(limitBytes: limitBytes, period: CommandServices.period(parsed)), selection: selection)
    let result = try check.run(&sampler, store: store, warn: context.warn) {
      try CommandServices.requireKnown(selection, sample: $0, ledger: $1)
    }
    let (status, classes, now) = (result.status, result.classes, result.at)
    let subject =
      selection.names.isEmpty
      ? classes.map(\.rawValue).joined(separator: ", ") + (classes.count == 1 ? " class" : " classes")
      : selection.names.sorted().map(\.terminalText).joined(separator: ", ")
    if parsed.has(CommonOptions.json) {
      try context.write(
        AlertJSON.render(status, names: selection.names.sorted(), classes: classes, generatedAt: now) + [0x0A])
    } else if !parsed.has(quiet) {
      try context.write(
        DataCapText.line(
          status, options: CommandServices.display(parsed, context), label: "\(subject): limit", refuses: false)
          + "\n")
    }
    return status.reached ? .limitReached : .success
  }
}
