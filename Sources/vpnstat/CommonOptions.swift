import VPNStatCore

/// Options several subcommands share, declared once so they read and behave the same everywhere.
enum CommonOptions {
  static let json = OptionSpec("json", help: "Print JSON (the schema is in vpnstat(1)).")
  static let source = OptionSpec(
    "source", .value("reader"),
    help: "Counter reader: netlink (default), sysfs or getifaddrs (32-bit, wraps at 4 GiB).",
    accepts: { CounterSourceKind(rawValue: $0) != nil })
  static let interface = OptionSpec(
    "interface", short: "i", .value("name"), repeatable: true,
    help: "Only this interface (escaped form as printed: \\\\ for a backslash, \\xHH for a byte).")
  static let only = OptionSpec(
    "only", .value("class"), repeatable: true,
    help: "Only interfaces of this class: tunnel, wifi, cellular, ethernet, loopback, other (comma-separated allowed).")
  static let classOverride = OptionSpec(
    "class", .value("name=class"), repeatable: true,
    help: "Classify interface NAME as CLASS, overriding the evidence.",
    accepts: { parseClassOverride($0) != nil }, expected: classExpectation)
  static let bytes = OptionSpec("bytes", help: "Show raw byte counts instead of IEC units.")
  static let noColor = OptionSpec("no-color", help: "No colour (also when NO_COLOR is set).")
  static let sysfsRoot = OptionSpec(
    "sysfs-root", .value("dir"),
    help: "Read interfaces from DIR instead of /sys/class/net (implies --source sysfs).")

  static let classAlternatives = InterfaceClass.allCases.map(\.rawValue).joined(separator: ", ")
  static let classExpectation = "NAME=CLASS with CLASS one of \(classAlternatives)"

  static func sourceKind(_ parsed: ParsedCommand) throws -> CounterSourceKind {
    let kind = try parsed.value(
      "source", expected: "netlink, sysfs or getifaddrs", CounterSourceKind.init(rawValue:))
    if let kind { return kind }
    return parsed.has("sysfs-root") ? .sysfs : .netlink
  }

  static func sysfsRoot(_ parsed: ParsedCommand) -> SysfsRoot {
    parsed.value("sysfs-root").map { SysfsRoot(SystemPath($0)) } ?? .system
  }

  static func selection(_ parsed: ParsedCommand) throws -> InterfaceSelection {
    let names = Set(parsed.all("interface").map(InterfaceName.init(parsingEscaped:)))
    var classes = Set<InterfaceClass>()
    for value in parsed.all("only") {
      for word in value.split(separator: ",") {
        guard let interfaceClass = InterfaceClass(rawValue: String(word)) else {
          throw UsageError(
            "invalid value '\(TerminalText.sanitize(String(word)))' for '--only': expected \(classAlternatives)",
            commandPath: parsed.commandPath)
        }
        classes.insert(interfaceClass)
      }
    }
    return InterfaceSelection(names: names, classes: classes)
  }

  /// `NAME=CLASS` (the last `=` separates them), or nil.
  static func parseClassOverride(_ value: String) -> (InterfaceName, InterfaceClass)? {
    guard let equals = value.lastIndex(of: "="), equals != value.startIndex,
      let interfaceClass = InterfaceClass(rawValue: String(value[value.index(after: equals)...]))
    else { return nil }
    return (InterfaceName(parsingEscaped: String(value[..<equals])), interfaceClass)
  }

  static func classifier(_ parsed: ParsedCommand) throws -> Classifier {
    var overrides: [InterfaceName: InterfaceClass] = [:]
    for (name, interfaceClass) in try parsed.all("class", expected: classExpectation, parseClassOverride) {
      overrides[name] = interfaceClass
    }
    return Classifier(overrides: overrides)
  }

  static func display(_ parsed: ParsedCommand, _ context: CommandContext) -> DisplayOptions {
    DisplayOptions(color: context.colorEnabled(parsed), rawBytes: parsed.has("bytes"))
  }
}

extension CommonOptions {
  static let db = OptionSpec(
    "db", .value("path"),
    help:
      "The database (default: $VPNSTAT_DB, else /var/lib/vpnstat/vpnstat.db for root, $XDG_STATE_HOME/vpnstat/vpnstat.db or ~/.local/state/vpnstat/vpnstat.db otherwise)."
  )
  static let maxRate = OptionSpec(
    "max-rate", .value("rate"),
    help:
      "Plausible maximum where the link speed is unknown, e.g. 10Gbit (default 100Gbit); faster deltas are discarded.",
    accepts: { parseRate($0) != nil })

  static func storeLocation(_ parsed: ParsedCommand, _ context: CommandContext) -> StoreLocation {
    StoreLocation.resolve(option: parsed.value("db"), environment: context.environment)
  }

  static func capBytesPerSecond(_ parsed: ParsedCommand) throws -> Double {
    try parsed.value("max-rate", expected: "a rate such as 10Gbit or 1GiB", parseRate)
      ?? Ledger.defaultCapBytesPerSecond
  }

  /// A sampler for the command's reader, sysfs root, class overrides and cap.
  static func sampler(_ parsed: ParsedCommand, recorded: InterfaceSelection = InterfaceSelection()) throws
    -> TrafficSampler
  {
    let root = sysfsRoot(parsed)
    return TrafficSampler(
      reader: CounterReader(try sourceKind(parsed), root: root),
      catalog: InterfaceCatalog(root: root, classifier: try classifier(parsed)), recorded: recorded,
      capBytesPerSecond: try capBytesPerSecond(parsed), clock: SystemTimeSource())
  }
}

extension CommonOptions {
  static let sessionLength = OptionSpec.duration(
    "session-length",
    help: "Length of a free session (default 15m; 2m in debug builds).")
  static let pauseLength = OptionSpec.duration(
    "pause-length",
    help: "Length of the pause after it (default 45m; 1m in debug builds).")

  /// The lengths a new window gets: options, then the configuration file, then the built-in ones.
  static func lengths(_ parsed: ParsedCommand) throws -> SessionLengths {
    let builtIn = SessionLengths.builtIn
    return SessionLengths(
      session: try parsed.value("session-length", expected: "a duration such as 15m", parseDuration) ?? builtIn.session,
      pause: try parsed.value("pause-length", expected: "a duration such as 45m", parseDuration) ?? builtIn.pause)
  }

  /// One sample and, with a database, the ledger as of that sample (advanced in memory: readers
  /// never write it), with the warnings a report shows about both.
  static func sample(_ sampler: inout TrafficSampler, store: Store?) throws -> (
    sample: CounterSample, ledger: Ledger?, warnings: [String]
  ) {
    var warnings: [String] = []
    if let problem = sampler.clock.bootIDProblem { warnings.append(problem) }
    guard let store else { return (try sampler.sample(), nil, warnings) }
    var view = LedgerView(store: store)
    let (sample, ledger) = try view.sample(&sampler)
    if let warning = try store.health().warning(at: sample.taken.wall) { warnings.append(warning) }
    return (sample, ledger, warnings)
  }

  /// The session report for a command that sampled, when there is a database.
  static func sessionReport(
    _ store: Store?, _ parsed: ParsedCommand, sampler: inout TrafficSampler, sample: CounterSample, ledger: Ledger?
  ) throws -> SessionReport? {
    guard let store else { return nil }
    return try SessionView.report(
      store, reading: sample.taken, sample: sample, catalog: &sampler.catalog, ledger: ledger,
      nextLengths: try lengths(parsed))
  }
}
