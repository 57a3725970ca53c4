/// Bytes per second, both directions, over the interval between two samples of one instance.
public struct TrafficRate: Hashable, Sendable {
  public var rxBytesPerSecond: Double
  public var txBytesPerSecond: Double
  public init(rxBytesPerSecond: Double, txBytesPerSecond: Double) {
    self.rxBytesPerSecond = rxBytesPerSecond
    self.txBytesPerSecond = txBytesPerSecond
  }
}

/// One interface as reported: identity, class and the evidence for it, state, the kernel's
/// counters for the current instance, and what the ledger and a second sample add.
public struct InterfaceReport: Hashable, Sendable {
  public var name: InterfaceName
  public var index: Int32
  public var interfaceClass: InterfaceClass
  public var classBy: ClassEvidence
  public var state: LinkState
  public var counters: InterfaceCounters
  public var width: CounterWidth
  public var rate: TrafficRate?
  public var ledger: LedgerTotals?
  /// Who manages it, for a tunnel whose manager was looked up (nil otherwise).
  public var manager: TunnelManager? {
    get { if case .some(let manager) = managerSlot { manager } else { nil } }
    set { managerSlot = newValue.map { .some($0) } ?? .none }
  }
  /// Out of line: a manager is 129 bytes and few interfaces have one, and a thousand reports are
  /// written into fresh pages — each a page fault (~2 µs on this VM) a smaller report does not
  /// take. Not generic, so making its type asks the runtime for no conformance.
  @usableFromInline var managerSlot: ManagerSlot = .none
  /// Whether a manager was found, asked without making a copy of it (`manager` makes one: a
  /// writer that only asks paid a copy and a release of it for every interface).
  @inlinable public var hasManager: Bool { if case .none = managerSlot { false } else { true } }
  /// For a WireGuard tunnel, what WireGuard itself says (peers, handshakes, encrypted transfer)
  /// or why it could not be read; nil for every other interface.
  public var wireguard: WireGuardStatus?

  /// Inlinable: made in place where a snapshot is made (a thousand at a time), not built here
  /// and copied out.
  @inlinable
  public init(
    name: InterfaceName, index: Int32, interfaceClass: InterfaceClass, classBy: ClassEvidence,
    state: LinkState, counters: InterfaceCounters, width: CounterWidth, rate: TrafficRate? = nil,
    ledger: LedgerTotals? = nil, wireguard: WireGuardStatus? = nil
  ) {
    self.name = name
    self.index = index
    self.interfaceClass = interfaceClass
    self.classBy = classBy
    self.state = state
    self.counters = counters
    self.width = width
    self.rate = rate
    self.ledger = ledger
    self.wireguard = wireguard
  }
}

/// A report's manager, held out of line (`InterfaceReport.manager`).
@usableFromInline
enum ManagerSlot: Hashable, Sendable {
  case none
  indirect case some(TunnelManager)
}

/// The sums over one class's interfaces.
public struct ClassSummary: Hashable, Sendable {
  public var interfaces = 0
  /// The kernel's counters of the current instances, summed.
  public var counters = TrafficCounts.zero
  /// Sums of the ledger totals; nil when there is no ledger.
  public var totals: LedgerTotals?
  /// Sum of the members' rates; nil when no member has one.
  public var rate: TrafficRate?

  public init(
    interfaces: Int = 0, counters: TrafficCounts = .zero, totals: LedgerTotals? = nil, rate: TrafficRate? = nil
  ) {
    self.interfaces = interfaces
    self.counters = counters
    self.totals = totals
    self.rate = rate
  }
}

/// Everything one report shows, computed before any rendering: renderers are pure functions of
/// this value (and, on a terminal, its size).
public struct StatusSnapshot: Sendable {
  public var generatedAt: Timestamp
  public var source: CounterSourceKind
  public var fallbackReason: String?
  public var interfaces: [InterfaceReport]
  public var problems: [SampleProblem]
  public var warnings: [String]
  public var session: SessionReport?

  public init(
    generatedAt: Timestamp, source: CounterSourceKind, fallbackReason: String? = nil,
    interfaces: [InterfaceReport], problems: [SampleProblem] = [], warnings: [String] = [],
    session: SessionReport? = nil
  ) {
    self.generatedAt = generatedAt
    self.source = source
    self.fallbackReason = fallbackReason
    self.interfaces = interfaces
    self.problems = problems
    self.warnings = warnings
    self.session = session
  }

  /// Why every figure is an estimate, in the words both the table and JSON use.
  public static let estimateNotes = [
    "Interface counters include protocol overhead; a tunnel's count its inner traffic, and the link under it carries the encapsulated bytes too.",
    "Counters restart when an interface is recreated; vpnstat bridges the restarts it saw, no others.",
    "Counters are per interface, not per application; per-flow figures need packet capture (vpnstat flows).",
  ]

  /// Per-class sums, for every class that has an interface in the snapshot.
  public var classes: [InterfaceClass: ClassSummary] {
    var result: [InterfaceClass: ClassSummary] = [:]
    for (interfaceClass, summary) in zip(InterfaceClass.allCases, classSummaries) where summary.interfaces > 0 {
      result[interfaceClass] = summary
    }
    return result
  }

  /// Per-class sums of every class, in `InterfaceClass.allCases` order (an empty summary for a
  /// class without interfaces): what a renderer walks, without a table keyed by class — hashing
  /// a class hashes its name, once per interface.
  public var classSummaries: [ClassSummary] {
    var result = [ClassSummary](repeating: ClassSummary(), count: InterfaceClass.allCases.count)
    // By index: `for report in interfaces` would copy every report.
    for at in interfaces.indices {
      let rank = interfaces[at].interfaceClass.rank
      result[rank].interfaces += 1
      result[rank].counters += interfaces[at].counters.traffic
      if let ledger = interfaces[at].ledger { result[rank].totals = result[rank].totals.map { $0 + ledger } ?? ledger }
      if let rate = interfaces[at].rate {
        var sum = result[rank].rate ?? TrafficRate(rxBytesPerSecond: 0, txBytesPerSecond: 0)
        sum.rxBytesPerSecond += rate.rxBytesPerSecond
        sum.txBytesPerSecond += rate.txBytesPerSecond
        result[rank].rate = sum
      }
    }
    return result
  }
}

/// Which interfaces a report covers: names given with `-i` (all when empty) and classes.
public struct InterfaceSelection: Sendable {
  public var names: Set<InterfaceName>
  public var classes: Set<InterfaceClass>
  public init(names: Set<InterfaceName> = [], classes: Set<InterfaceClass> = []) {
    self.names = names
    self.classes = classes
  }
  public func includes(_ name: InterfaceName, _ interfaceClass: InterfaceClass) -> Bool {
    (names.isEmpty || names.contains(name)) && (classes.isEmpty || classes.contains(interfaceClass))
  }
  public func includes(name: InterfaceName) -> Bool { names.isEmpty || names.contains(name) }
}
