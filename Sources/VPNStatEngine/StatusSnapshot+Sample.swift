import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore

extension StatusSnapshot {
  /// Builds the report of one sample: classifies each interface (through the catalog's cache),
  /// applies the selection, and adds rates against `previous` where the instance is the same.
  package static func make(
    sample: CounterSample, catalog: inout InterfaceCatalog, selection: InterfaceSelection,
    previous: CounterSample? = nil, ledger: Ledger? = nil
  ) -> StatusSnapshot {
    // The previous sample's entry for the same name: two samples of one reader list the links
    // in the same order, so it is usually at the same position; a table is made only if not.
    var previousByName: [InterfaceName: InterfaceSample]?
    func previousEntry(_ at: Int, _ name: InterfaceName) -> InterfaceSample? {
      guard let previous else { return nil }
      if at < previous.interfaces.count, previous.interfaces[at].name == name { return previous.interfaces[at] }
      if previousByName == nil {
        var table: [InterfaceName: InterfaceSample] = [:]
        table.reserveCapacity(previous.interfaces.count)
        for entry in previous.interfaces { table[entry.name] = entry }
        previousByName = table
      }
      return previousByName?[name]
    }
    // The chosen interfaces in report order first (class, then name), then each report built
    // once in its place: a report is large, and sorting or copying a thousand of them costs more
    // than the rest of the snapshot.
    var chosen: [(at: Int, interfaceClass: InterfaceClass, evidence: ClassEvidence)] = []
    chosen.reserveCapacity(sample.interfaces.count)
    catalog.reserve(sample.interfaces.count)
    for at in sample.interfaces.indices where selection.includes(name: sample.interfaces[at].name) {
      let described = catalog.verdict(of: sample.interfaces, at: at)
      guard selection.includes(sample.interfaces[at].name, described.interfaceClass) else { continue }
      chosen.append((at, described.interfaceClass, described.evidence))
    }
    chosen.sort { a, b in
      a.interfaceClass != b.interfaceClass
        ? a.interfaceClass < b.interfaceClass : sample.interfaces[a.at].name < sample.interfaces[b.at].name
    }
    var reports: [InterfaceReport] = []
    reports.reserveCapacity(chosen.count)
    for (at, interfaceClass, evidence) in chosen {
      let entry = sample.interfaces[at]
      var rate: TrafficRate?
      if let previous, let before = previousEntry(at, entry.name) {
        let seconds = Double(sample.taken.boottime - previous.taken.boottime) / 1e9
        if seconds > 0 {
          let delta =
            CounterDelta.between(
              LedgerBaseline(before, taken: previous.taken), LedgerBaseline(entry, taken: sample.taken))
            ?? CounterDelta(.zero, kind: .growth)
          rate = TrafficRate(
            rxBytesPerSecond: Double(delta.traffic.rxBytes) / seconds,
            txBytesPerSecond: Double(delta.traffic.txBytes) / seconds)
        }
      }
      reports.append(
        InterfaceReport(
          name: entry.name, index: entry.index, interfaceClass: interfaceClass, classBy: evidence,
          state: LinkState(entry.link), counters: entry.counters,
          width: entry.width, rate: rate, ledger: ledger?.entries[entry.name]?.totals))
    }
    return StatusSnapshot(
      generatedAt: sample.taken.wall, source: sample.source, fallbackReason: sample.fallbackReason,
      interfaces: reports,
      problems: sample.problems.filter { selection.includes(name: $0.name) })
  }

  /// Looks up who manages each tunnel-class interface (one walk of /proc, at most one `nmcli`),
  /// and the session's tunnel with them.
  package mutating func addManagers(_ detector: any ManagerDetecting, sample: CounterSample) {
    // The tunnels' positions and link kinds alone (by index: iterating the reports would copy
    // each); a thousand other interfaces make no table.
    let positions = interfaces.indices.filter { interfaces[$0].interfaceClass == .tunnel }
    var links: [(name: InterfaceName, kind: String?)] = []
    if !positions.isEmpty {
      let tunnels = Set(positions.map { interfaces[$0].name })
      for entry in sample.interfaces where tunnels.contains(entry.name) { links.append((entry.name, entry.link.kind)) }
    }
    let found = detector.managers(of: links)
    for index in positions { interfaces[index].manager = found[interfaces[index].name] }
    if let tunnel = session?.tunnel { session?.manager = found[tunnel] }
  }
}
