import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// Options several subcommands share, declared once so they read and behave the same everywhere.
/// What commands build from them is `CommandServices`.
enum CommonOptions {
  static let json = Flag("json", help: "Print JSON (the documents are in vpnstat-json(7)).")
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
    values: .listOf(classNames), parse: parseClasses)
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

  /// The classes' names, as `InterfaceClass.allCases` gives them (`CommandTableTests` holds the
  /// two to each other): written out, where a map of the cases and the words joined were some
  /// 17,000 instructions of every command that names them (`status`, `watch`, `export` …).
  static let classNames = ["tunnel", "wifi", "cellular", "ethernet", "loopback", "other"]
  static let classAlternatives = "tunnel, wifi, cellular, ethernet, loopback or other"

  /// The options of every command that shows sizes or rates to people: units and bits.
  static let figures = [units.spec, bits.spec]

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
}
