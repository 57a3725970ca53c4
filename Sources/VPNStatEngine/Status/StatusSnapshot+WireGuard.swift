import VPNStatKernel
import VPNStatModel

extension StatusSnapshot {
  /// Adds WireGuard's own view — listen port, peers, handshakes, the encrypted transfer — to
  /// every interface in the report that is a WireGuard tunnel. Which ones may be is decided from
  /// the facts already known (kind or DEVTYPE `wireguard`, or a tun); `source` is asked only when
  /// there is such an interface, so a machine without WireGuard opens no socket for it.
  package mutating func addWireGuard(
    sample: CounterSample, catalog: inout InterfaceCatalog, source: inout any WireGuardSource
  ) {
    // Each report's facts from the catalog, which classified it when the snapshot was made (by
    // ifindex: no table of the reports, no second look at the sample).
    var positions: [Int] = []
    var candidates: [WireGuardCandidate] = []
    for at in interfaces.indices {
      // A link whose kind decided a class other than tunnel is no candidate: the kinds that make
      // one (wireguard, tun) classify as tunnels, and where the kind decides the catalog reads
      // no sysfs fact (devtype, tun flags) that could make one. A thousand such links are passed
      // without a copy of their facts (`WireGuardViewTests.kindDecidedLinksAreNoCandidates`).
      if interfaces[at].classBy == .kind && interfaces[at].interfaceClass != .tunnel { continue }
      let (name, index) = (interfaces[at].name, interfaces[at].index)
      let known = catalog.classified(index: index, name: name)?.facts
      guard let facts = known ?? Self.facts(name, index, sample, &catalog),
        let candidate = WireGuardCandidate(name: name, index: index, facts: facts)
      else { continue }
      positions.append(at)
      candidates.append(candidate)
    }
    guard !candidates.isEmpty else { return }
    let statuses = source.read(candidates)
    for (position, status) in zip(positions, statuses) { interfaces[position].wireguard = status }
  }

  /// The facts of a report the catalog has not classified (a snapshot made with another one).
  private static func facts(
    _ name: InterfaceName, _ index: Int32, _ sample: CounterSample, _ catalog: inout InterfaceCatalog
  ) -> InterfaceFacts? {
    guard let entry = sample.interfaces.first(where: { $0.index == index && $0.name == name }) else { return nil }
    return catalog.entry(for: entry).facts
  }
}
