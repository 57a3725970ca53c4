import VPNStatKernel
import VPNStatModel

extension StatusSnapshot {
  /// Adds WireGuard's own view — listen port, peers, handshakes, the encrypted transfer — to
  /// every interface in the report that is a WireGuard tunnel. Which ones may be is decided from
  /// the facts already known (kind or DEVTYPE `wireguard`, or a tun); `source` is asked only when
  /// there is such an interface, so a machine without WireGuard opens no socket for it.
  public mutating func addWireGuard(
    sample: CounterSample, catalog: inout InterfaceCatalog, source: inout any WireGuardSource
  ) {
    var sampled: [InterfaceName: InterfaceSample] = [:]
    for entry in sample.interfaces { sampled[entry.name] = entry }
    var positions: [Int] = []
    var candidates: [WireGuardCandidate] = []
    for (position, report) in interfaces.enumerated() {
      guard let entry = sampled[report.name], entry.index == report.index,
        let candidate = WireGuardCandidate(
          name: report.name, index: report.index, facts: catalog.entry(for: entry).facts)
      else { continue }
      positions.append(position)
      candidates.append(candidate)
    }
    guard !candidates.isEmpty else { return }
    let statuses = source.read(candidates)
    for (position, status) in zip(positions, statuses) { interfaces[position].wireguard = status }
  }
}
