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
    // The reports by ifindex (small entries: a thousand interfaces make no big table).
    var position: [Int32: Int] = [:]
    position.reserveCapacity(interfaces.count)
    for (at, report) in interfaces.enumerated() { position[report.index] = at }
    var positions: [Int] = []
    var candidates: [WireGuardCandidate] = []
    for entry in sample.interfaces {
      guard let at = position[entry.index], interfaces[at].name == entry.name,
        let candidate = WireGuardCandidate(
          name: entry.name, index: entry.index, facts: catalog.entry(for: entry).facts)
      else { continue }
      positions.append(at)
      candidates.append(candidate)
    }
    guard !candidates.isEmpty else { return }
    let statuses = source.read(candidates)
    for (position, status) in zip(positions, statuses) { interfaces[position].wireguard = status }
  }
}
