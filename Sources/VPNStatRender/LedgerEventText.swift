import VPNStatModel

/// The line `record` (and the enforcer) log for what the ledger bridged or refused:
/// "reset (recreated, ifindex 4 → 5): counted rx 300 / tx 400 bytes from the new start".
package enum LedgerEventText {
  package static func detail(_ event: LedgerEvent) -> String {
    let traffic = event.delta.traffic
    let counted = "rx \(traffic.rxBytes) / tx \(traffic.txBytes) bytes"
    switch event.kind {
    case .reset:
      let why =
        event.indexes.old != event.indexes.new
        ? "recreated, ifindex \(event.indexes.old) → \(event.indexes.new)" : "rebooted"
      return "reset (\(why)): counted \(counted) from the new start"
    case .wrap:
      return "32-bit counter wrapped: counted \(counted) across 2^32"
    case .discarded:
      let what = event.delta.kind == .growth ? "delta" : event.delta.kind.rawValue
      let tenths = (event.seconds * 10).rounded() / 10
      return
        "\(what) of \(counted) in \(tenths) s exceeds the plausible \(Units.rate(event.plausibleBytesPerSecond, bits: true))"
    }
  }

  /// The whole log line: the interface, then the detail.
  package static func line(_ event: LedgerEvent) -> String {
    "\(event.name.terminalText): \(detail(event))"
  }
}
