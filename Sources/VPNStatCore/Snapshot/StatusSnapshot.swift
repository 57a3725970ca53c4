/// Bytes per second, both directions, over the interval between two samples of one instance.
public struct TrafficRate: Hashable, Sendable {
  public var rxBytesPerSecond: Double
  public var txBytesPerSecond: Double
  public init(rxBytesPerSecond: Double, txBytesPerSecond: Double) {
    self.rxBytesPerSecond = rxBytesPerSecond
    self.txBytesPerSecond = txBytesPerSecond
  }
}

/// The ledger's view of one interface name: cumulative totals bridged across resets and wraps
/// since vpnstat first saw the name, and what it had to bridge.
public struct LedgerTotals: Hashable, Sendable {
  public var rxBytes: UInt64
  public var txBytes: UInt64
  public var rxPackets: UInt64
  public var txPackets: UInt64
  public var resets: UInt64
  public var wraps: UInt64
  public var discarded: UInt64
  public var firstSeenAt: Timestamp

  public init(
    rxBytes: UInt64 = 0, txBytes: UInt64 = 0, rxPackets: UInt64 = 0, txPackets: UInt64 = 0,
    resets: UInt64 = 0, wraps: UInt64 = 0, discarded: UInt64 = 0, firstSeenAt: Timestamp
  ) {
    self.rxBytes = rxBytes
    self.txBytes = txBytes
    self.rxPackets = rxPackets
    self.txPackets = txPackets
    self.resets = resets
    self.wraps = wraps
    self.discarded = discarded
    self.firstSeenAt = firstSeenAt
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

  public init(
    name: InterfaceName, index: Int32, interfaceClass: InterfaceClass, classBy: ClassEvidence,
    state: LinkState, counters: InterfaceCounters, width: CounterWidth, rate: TrafficRate? = nil,
    ledger: LedgerTotals? = nil
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
  }
}

/// The sums over one class's interfaces.
public struct ClassSummary: Hashable, Sendable {
  public var interfaces = 0
  public var rxBytes: UInt64 = 0
  public var txBytes: UInt64 = 0
  public var rxPackets: UInt64 = 0
  public var txPackets: UInt64 = 0
  /// Sums of the ledger totals; nil when there is no ledger.
  public var totals: LedgerTotals?
  /// Sum of the members' rates; nil when no member has one.
  public var rate: TrafficRate?
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
    for report in interfaces {
      var summary = result[report.interfaceClass] ?? ClassSummary()
      summary.interfaces += 1
      summary.rxBytes &+= report.counters.rxBytes
      summary.txBytes &+= report.counters.txBytes
      summary.rxPackets &+= report.counters.rxPackets
      summary.txPackets &+= report.counters.txPackets
      if let ledger = report.ledger {
        var totals = summary.totals ?? LedgerTotals(firstSeenAt: ledger.firstSeenAt)
        totals.rxBytes &+= ledger.rxBytes
        totals.txBytes &+= ledger.txBytes
        totals.rxPackets &+= ledger.rxPackets
        totals.txPackets &+= ledger.txPackets
        totals.resets &+= ledger.resets
        totals.wraps &+= ledger.wraps
        totals.discarded &+= ledger.discarded
        totals.firstSeenAt = min(totals.firstSeenAt, ledger.firstSeenAt)
        summary.totals = totals
      }
      if let rate = report.rate {
        var sum = summary.rate ?? TrafficRate(rxBytesPerSecond: 0, txBytesPerSecond: 0)
        sum.rxBytesPerSecond += rate.rxBytesPerSecond
        sum.txBytesPerSecond += rate.txBytesPerSecond
        summary.rate = sum
      }
      result[report.interfaceClass] = summary
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

extension StatusSnapshot {
  /// Builds the report of one sample: classifies each interface (through the catalog's cache),
  /// applies the selection, and adds rates against `previous` where the instance is the same.
  public static func make(
    sample: CounterSample, catalog: inout InterfaceCatalog, selection: InterfaceSelection,
    previous: CounterSample? = nil, ledger: Ledger? = nil
  ) -> StatusSnapshot {
    var previousByName: [InterfaceName: InterfaceSample] = [:]
    if let previous {
      for entry in previous.interfaces { previousByName[entry.name] = entry }
    }
    var reports: [InterfaceReport] = []
    reports.reserveCapacity(sample.interfaces.count)
    for entry in sample.interfaces where selection.includes(name: entry.name) {
      let described = catalog.entry(for: entry)
      guard selection.includes(entry.name, described.interfaceClass) else { continue }
      var report = InterfaceReport(
        name: entry.name, index: entry.index, interfaceClass: described.interfaceClass,
        classBy: described.evidence, state: LinkState(entry.link), counters: entry.counters,
        width: entry.width, ledger: ledger?.entries[entry.name]?.totals)
      if let previous, let before = previousByName[entry.name] {
        let seconds = Double(sample.taken.boottime - previous.taken.boottime) / 1e9
        if seconds > 0 {
          let delta =
            CounterDelta.between(
              LedgerBaseline(before, taken: previous.taken), LedgerBaseline(entry, taken: sample.taken))
            ?? CounterDelta(rxBytes: 0, txBytes: 0, rxPackets: 0, txPackets: 0, kind: .growth)
          report.rate = TrafficRate(
            rxBytesPerSecond: Double(delta.rxBytes) / seconds,
            txBytesPerSecond: Double(delta.txBytes) / seconds)
        }
      }
      reports.append(report)
    }
    reports.sort { ($0.interfaceClass, $0.name) < ($1.interfaceClass, $1.name) }
    return StatusSnapshot(
      generatedAt: sample.taken.wall, source: sample.source, fallbackReason: sample.fallbackReason,
      interfaces: reports,
      problems: sample.problems.filter { selection.includes(name: $0.name) })
  }
}
