import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// What commands build from their options (`CommonOptions`) and their context: the interface
/// selection, a sampler, the database's location, who manages tunnels, WireGuard's reader,
/// display options, the lengths of a new window — and the requests of the engine's use cases.
enum CommandServices {
  /// The period `--per` and `--month-start-day` (or the configuration file) name.
  static func period(_ parsed: ParsedCommand) -> UsagePeriod {
    UsagePeriod(parsed[CommonOptions.per] ?? .month, monthStartDay: parsed[CommonOptions.monthStartDay] ?? 1)
  }

  static func selection(_ parsed: ParsedCommand) -> InterfaceSelection {
    InterfaceSelection(
      names: Set(parsed.all(CommonOptions.interface)), classes: Set(parsed.all(CommonOptions.only).joined()))
  }

  /// Refuses (69) names given with `-i` that no interface has now and the ledger never saw: a
  /// typo must not read as no traffic (a cron `alert` that never fires). A name the ledger knows
  /// is not one: the interface existed, and its figures are what was booked. Without a sample
  /// (the counters unreadable) only the ledger can say, so nothing is refused.
  static func requireKnown(_ selection: InterfaceSelection, sample: CounterSample?, ledger: Ledger?) throws {
    guard !selection.names.isEmpty, let sample else { return }
    var known = Set(sample.interfaces.map(\.name))
    if let ledger { known.formUnion(ledger.entries.keys) }
    let unknown = selection.names.subtracting(known)
    guard !unknown.isEmpty else { return }
    let names = unknown.map(\.terminalText).sorted()
    let listed = known.map(\.terminalText).sorted()
    let shown = listed.prefix(12).joined(separator: ", ") + (listed.count > 12 ? ", … (\(listed.count) in all)" : "")
    throw GeneralFailure(
      .unavailable,
      "no interface \(names.joined(separator: ", ")): none has that name now and none had it in the ledger (known: \(listed.isEmpty ? "none" : shown))"
    )
  }

  static func classifier(_ parsed: ParsedCommand) -> Classifier {
    var overrides: [InterfaceName: InterfaceClass] = [:]
    for override in parsed.all(CommonOptions.classOverride) { overrides[override.name] = override.interfaceClass }
    return Classifier(overrides: overrides)
  }

  static func display(_ parsed: ParsedCommand, _ context: CommandContext) -> DisplayOptions {
    DisplayOptions(
      color: context.colorEnabled(noColor: parsed.has(CommonOptions.noColor)),
      rawBytes: parsed.has(CommonOptions.bytes), bits: parsed.has(CommonOptions.bits),
      units: parsed[CommonOptions.units], ascii: context.asciiOnly, calendar: context.calendar)
  }

  static func storeLocation(_ parsed: ParsedCommand, _ context: CommandContext) -> StoreLocation {
    StoreLocation.resolve(option: parsed[CommonOptions.db], environment: context.environment)
  }

  /// A sampler for the command's reader, sysfs root, class overrides and cap.
  static func sampler(
    _ parsed: ParsedCommand, _ context: CommandContext, recorded: InterfaceSelection = InterfaceSelection()
  ) -> TrafficSampler {
    let root = parsed[CommonOptions.sysfsRoot] ?? .system
    let kind = parsed[CommonOptions.source] ?? (parsed.has(CommonOptions.sysfsRoot) ? .sysfs : .netlink)
    return TrafficSampler(
      reader: CounterReader(kind, root: root), catalog: InterfaceCatalog(root: root, classifier: classifier(parsed)),
      recorded: recorded, capBytesPerSecond: parsed[CommonOptions.maxRate] ?? Ledger.defaultCapBytesPerSecond,
      clock: context.clock)
  }

  /// Who manages tunnels, found as the command's options say. A command that acts on what it
  /// finds (`connect`, `disconnect`, `enforce`: wg-quick runs a configuration's hooks as root)
  /// refuses a `--wg-quick-dir` others may write, with 77.
  static func managerDetector(_ parsed: ParsedCommand, survey: TunProcessSurvey? = nil, acting: Bool = false) throws
    -> ManagerDetector
  {
    var directories = [ManagerDetector.defaultWgQuickDirectory]
    if let directory = parsed[CommonOptions.wgQuickDirectory] {
      if acting, let problem = DirectoryTrust.problem(directory) {
        throw UntrustedFile(role: "wg-quick directory", path: directory, problem: problem)
      }
      directories.insert(directory, at: 0)
    }
    var units: [InterfaceName: String] = [:]
    for override in parsed.all(CommonOptions.systemdUnit) { units[override.name] = override.unit }
    return ManagerDetector(wgQuickDirectories: directories, units: units, survey: survey)
  }
  /// The reader of WireGuard's own figures (the kernel's netlink family, wireguard-go's control
  /// socket), with its bounds: what `status` and `watch` show under a WireGuard tunnel.
  /// `survey`: the walk of /proc a one-off command shares with its manager detector.
  static func wireGuard(survey: TunProcessSurvey? = nil) -> any WireGuardSource { WireGuardReader(survey: survey) }

  /// The lengths a new window gets: options, then the configuration file, then the built-in ones.
  static func lengths(_ parsed: ParsedCommand) -> SessionLengths {
    let builtIn = SessionLengths.builtIn
    return SessionLengths(
      session: parsed[CommonOptions.sessionLength] ?? builtIn.session,
      pause: parsed[CommonOptions.pauseLength] ?? builtIn.pause)
  }

  /// The `status` use case as the command's options build it: its sampler over `source`, and —
  /// sharing one walk of /proc, at most — WireGuard's reader and the tunnels' manager detector.
  static func statusReader(_ parsed: ParsedCommand, _ context: CommandContext, source: consuming LedgerSource) throws
    -> StatusReader
  {
    let survey = TunProcessSurvey()
    return StatusReader(
      sampler: sampler(parsed, context), source: source, wireGuard: wireGuard(survey: survey),
      managers: try managerDetector(parsed, survey: survey))
  }

  /// What a one-shot report (`status`, `export`) reads the database through
  /// (`LedgerSource.forReport`).
  static func reportSource(_ location: StoreLocation, _ context: CommandContext) throws -> LedgerSource {
    try LedgerSource.forReport(location, bootID: context.clock.now().bootID, calendar: context.calendar) {
      try context.openStore(location, intent: .read)
    }
  }
}
