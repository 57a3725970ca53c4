import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// Options several subcommands share, declared once so they read and behave the same everywhere,
/// and what commands build from them (a sampler, the database's location, display options).
enum CommonOptions {
  static let json = Flag("json", help: "Print JSON (the schema is in vpnstat(1)).")
  static let bytes = Flag("bytes", help: "Show raw byte counts instead of units.")
  static let noColor = Flag("no-color", help: "No colour (also when NO_COLOR is set).")
  static let units = Option<UnitSystem>.oneOf(
    "units", valueName: "units", configurable: true,
    help: "Prefixes of sizes and rates: powers of 1024 (iec: KiB, MiB) or of 1000 (si: kB, MB).")
  static let bits = Flag(
    "bits", configurable: true, help: "Show sizes and rates in bits (kbit, Mbit/s; SI unless --units iec).")

  static let source = Option<CounterSourceKind>.oneOf(
    "source", valueName: "reader", configurable: true,
    help: "Counter reader (default netlink; getifaddrs has 32-bit counters, which wrap at 4 GiB).")
  static let interface = Option<InterfaceName>(
    "interface", short: "i", valueName: "name", repeatable: true,
    help: "Only this interface (escaped form as printed: \\\\ for a backslash, \\xHH for a byte).",
    expected: "an interface name", values: .interface, parse: { InterfaceName(parsingEscaped: $0) })
  static let only = Option<[InterfaceClass]>(
    "only", valueName: "class", repeatable: true,
    help: "Only interfaces of these classes (comma-separated allowed).", expected: classAlternatives,
    values: .listOf(InterfaceClass.allCases.map(\.rawValue)), parse: parseClasses)
  static let classOverride = Option<ClassOverride>(
    "class", valueName: "name=class", repeatable: true, configurable: true,
    help: "Classify interface NAME as CLASS, overriding the evidence.",
    expected: "NAME=CLASS with CLASS one of \(classAlternatives)", parse: ClassOverride.init(parsing:))
  static let sysfsRoot = Option<SysfsRoot>(
    "sysfs-root", valueName: "dir",
    help: "Read interfaces from DIR instead of /sys/class/net (implies --source sysfs).",
    expected: "a directory", values: .directory, parse: { SysfsRoot(SystemPath($0)) })
  static let db = Option<String>(
    "db", valueName: "path", configurable: true,
    help:
      "The database (default: $VPNSTAT_DB, else the system's /var/lib/vpnstat/vpnstat.db, for every user).",
    expected: "a path", values: .file, parse: { $0.isEmpty ? nil : $0 })
  static let maxRate = Option<Double>(
    "max-rate", valueName: "rate", configurable: true,
    help:
      "Plausible maximum where the link speed is unknown, e.g. 10Gbit (default 100Gbit); faster deltas are discarded.",
    expected: "a rate such as 10Gbit or 1GiB", parse: parseRate)
  static let sessionLength = Option.duration(
    "session-length", configurable: true, help: "Length of a free session (default 15m; 2m in debug builds).")
  static let pauseLength = Option.duration(
    "pause-length", configurable: true, help: "Length of the pause after it (default 45m; 1m in debug builds).")

  static let saveInterval = Option.duration(
    "save-interval", configurable: true,
    help:
      "How often the ledger is saved to the database (default 1m); a deleted interface's last counters, a new interface, a session window's change and stopping are saved at once."
  )
  static let monthStartDay = Option<Int>(
    "month-start-day", valueName: "day", configurable: true,
    help: "The day months start on, 1 to 28 (default 1), like vnStat's MonthRotate: for billing months.",
    expected: "a day from 1 to 28", parse: { parseCount($0, in: UsagePeriod.monthStartDays) })
  static let per = Option<PeriodLength>.oneOf(
    "per", valueName: "period", help: "The limit's period: day, week (from Monday) or month (default month).")
  static let systemdUnit = Option<UnitOverride>(
    "systemd-unit", valueName: "name=unit", repeatable: true, configurable: true,
    help:
      "The systemd unit that manages tunnel NAME, when it is none of wg-quick@NAME, openvpn-client@NAME, openvpn@NAME.",
    expected: "NAME=UNIT, UNIT a systemd service's name (letters, digits, :-_.@\\, not starting with - or .)",
    parse: UnitOverride.init(parsing:))
  static let wgQuickDirectory = Option<String>(
    "wg-quick-dir", valueName: "dir", configurable: true,
    help:
      "Where wg-quick configurations are (default /etc/wireguard): a WireGuard device NAME with DIR/NAME.conf is wg-quick's.",
    expected: "a directory", values: .directory, parse: { $0.isEmpty ? nil : $0 })

  static let classAlternatives = ValueSet.alternatives(InterfaceClass.allCases.map(\.rawValue))

  /// The options of every command that shows sizes or rates to people: units and bits.
  static let figures = [units.spec, bits.spec]

  /// The period `--per` and `--month-start-day` (or the configuration file) name.
  static func period(_ parsed: ParsedCommand) -> UsagePeriod {
    UsagePeriod(parsed[per] ?? .month, monthStartDay: parsed[monthStartDay] ?? 1)
  }

  /// `tunnel,wifi`: one or more classes, comma-separated.
  @Sendable static func parseClasses(_ text: String) -> [InterfaceClass]? {
    let classes = text.split(separator: ",").map { InterfaceClass(rawValue: String($0)) }
    guard !classes.isEmpty, !classes.contains(nil) else { return nil }
    return classes.compactMap { $0 }
  }

  /// `--class NAME=CLASS`.
  struct ClassOverride: Sendable {
    var name: InterfaceName
    var interfaceClass: InterfaceClass
    /// The last `=` separates the name (escaped form) from the class.
    init?(parsing value: String) {
      guard let equals = value.lastIndex(of: "="), equals != value.startIndex,
        let interfaceClass = InterfaceClass(rawValue: String(value[value.index(after: equals)...]))
      else { return nil }
      name = InterfaceName(parsingEscaped: String(value[..<equals]))
      self.interfaceClass = interfaceClass
    }
  }

  /// `--systemd-unit NAME=UNIT`: the last `=` separates the name (escaped form) from the unit.
  struct UnitOverride: Sendable {
    var name: InterfaceName
    var unit: String
    init?(parsing value: String) {
      guard let equals = value.lastIndex(of: "="), equals != value.startIndex else { return nil }
      let unit = String(value[value.index(after: equals)...])
      guard unit.hasSuffix(".service"), unit.count > ".service".count, ManagerName.unitProblem(unit) == nil
      else { return nil }
      name = InterfaceName(parsingEscaped: String(value[..<equals]))
      self.unit = unit
    }
  }

  // MARK: - What commands build from them

  static func selection(_ parsed: ParsedCommand) -> InterfaceSelection {
    InterfaceSelection(names: Set(parsed.all(interface)), classes: Set(parsed.all(only).joined()))
  }

  static func classifier(_ parsed: ParsedCommand) -> Classifier {
    var overrides: [InterfaceName: InterfaceClass] = [:]
    for override in parsed.all(classOverride) { overrides[override.name] = override.interfaceClass }
    return Classifier(overrides: overrides)
  }

  static func display(_ parsed: ParsedCommand, _ context: CommandContext) -> DisplayOptions {
    DisplayOptions(
      color: context.colorEnabled(noColor: parsed.has(noColor)), rawBytes: parsed.has(bytes), bits: parsed.has(bits),
      units: parsed[units], ascii: context.asciiOnly, calendar: context.calendar)
  }

  static func storeLocation(_ parsed: ParsedCommand, _ context: CommandContext) -> StoreLocation {
    StoreLocation.resolve(option: parsed[db], environment: context.environment)
  }

  /// A sampler for the command's reader, sysfs root, class overrides and cap.
  static func sampler(
    _ parsed: ParsedCommand, _ context: CommandContext, recorded: InterfaceSelection = InterfaceSelection()
  ) -> TrafficSampler {
    let root = parsed[sysfsRoot] ?? .system
    let kind = parsed[source] ?? (parsed.has(sysfsRoot) ? .sysfs : .netlink)
    return TrafficSampler(
      reader: CounterReader(kind, root: root), catalog: InterfaceCatalog(root: root, classifier: classifier(parsed)),
      recorded: recorded, capBytesPerSecond: parsed[maxRate] ?? Ledger.defaultCapBytesPerSecond,
      clock: context.clock)
  }

  /// Who manages tunnels, found as the command's options say. A command that acts on what it
  /// finds (`connect`, `disconnect`, `enforce`: wg-quick runs a configuration's hooks as root)
  /// refuses a `--wg-quick-dir` others may write, with 77.
  static func managerDetector(_ parsed: ParsedCommand, survey: TunProcessSurvey? = nil, acting: Bool = false) throws
    -> ManagerDetector
  {
    var directories = [ManagerDetector.defaultWgQuickDirectory]
    if let directory = parsed[wgQuickDirectory] {
      if acting, let problem = DirectoryTrust.problem(directory) {
        throw UntrustedFile(role: "wg-quick directory", path: directory, problem: problem)
      }
      directories.insert(directory, at: 0)
    }
    var units: [InterfaceName: String] = [:]
    for override in parsed.all(systemdUnit) { units[override.name] = override.unit }
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
      session: parsed[sessionLength] ?? builtIn.session, pause: parsed[pauseLength] ?? builtIn.pause)
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
    _ store: Store?, _ parsed: ParsedCommand, sampler: inout TrafficSampler, sample: CounterSample, ledger: Ledger?,
    detector: (any ManagerDetecting)? = nil
  ) throws -> SessionReport? {
    guard let store else { return nil }
    return try SessionView.report(
      store, reading: sample.taken, sample: sample, catalog: &sampler.catalog, ledger: ledger,
      nextLengths: lengths(parsed), detector: detector)
  }
}
