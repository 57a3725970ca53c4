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
    // Where the previous sample has the same name: two samples of one reader list the links in
    // the same order, so it is usually at the same position; a table is made only if not.
    var previousByName: [InterfaceName: Int]?
    func previousPosition(_ at: Int, _ name: InterfaceName) -> Int? {
      guard let previous else { return nil }
      if at < previous.interfaces.count, previous.interfaces[at].name == name { return at }
      if previousByName == nil {
        var table: [InterfaceName: Int] = [:]
        table.reserveCapacity(previous.interfaces.count)
        for position in previous.interfaces.indices { table[previous.interfaces[position].name] = position }
        previousByName = table
      }
      return previousByName?[name]
    }
    // The chosen interfaces' report order first (class, then name), then each report built
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
    let order = InterfaceName.order(
      count: chosen.count, rank: { chosen[$0].interfaceClass.rank }, name: { sample.interfaces[chosen[$0].at].name })
    // Rates: the counter rules between the previous sample's reading and this one's. Whether the
    // two are of one boot depends on the readings alone, so it is decided once; each interface
    // is then read field by field where it lies (a baseline made of each copied it).
    let rateWindow = previous.map { Double(sample.taken.boottime - $0.taken.boottime) / 1e9 } ?? 0
    let sameBoot = previous.map {
      BootIdentity.same(
        old: ($0.taken.bootID, $0.taken.wall, $0.taken.boottime),
        new: (sample.taken.bootID, sample.taken.wall, sample.taken.boottime))
    }
    let interfaces = sample.interfaces
    var reports: [InterfaceReport] = []
    reports.reserveCapacity(chosen.count)
    for slot in order {
      let (at, interfaceClass, evidence) = chosen[slot]
      var rate: TrafficRate?
      if let previous, rateWindow > 0, let sameBoot, let before = previousPosition(at, interfaces[at].name) {
        let delta =
          CounterDelta.between(
            old: (
              previous.interfaces[before].index, previous.interfaces[before].counters.traffic,
              previous.interfaces[before].width
            ),
            new: (interfaces[at].index, interfaces[at].counters.traffic, interfaces[at].width), sameBoot: sameBoot)
          ?? CounterDelta(.zero, kind: .growth)
        rate = TrafficRate(
          rxBytesPerSecond: Double(delta.traffic.rxBytes) / rateWindow,
          txBytesPerSecond: Double(delta.traffic.txBytes) / rateWindow)
      }
      reports.append(
        InterfaceReport(
          name: interfaces[at].name, index: interfaces[at].index, interfaceClass: interfaceClass, classBy: evidence,
          state: LinkState(interfaces[at].link), counters: interfaces[at].counters,
          width: interfaces[at].width, rate: rate, ledger: ledger?.entries[interfaces[at].name]?.totals))
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
