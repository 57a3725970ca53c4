import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// How commands get the session as it stands now: the stored record at the trusted "now", with
/// the tunnel's state from a sample and the usage from the ledger.
public enum SessionView {
  /// The report for `store` at `reading`. `sample` tells whether the tunnel is up; `ledger` (when
  /// just advanced) gives the current tunnel-class totals.
  public static func report(
    _ store: Store, reading: ClockReading, sample: CounterSample?, catalog: inout InterfaceCatalog,
    ledger: Ledger?, nextLengths: SessionLengths
  ) throws -> SessionReport {
    let record = try store.sessionRecord()
    let now = try store.trustedNow(reading)
    let totals = try ledger?.totals(of: .tunnel) ?? store.tunnelTotals()
    let cap = try record.dataCap.map { try PeriodUsage.status(of: $0, store, at: now, ledger: ledger) }
    return SessionReport.make(
      record, now: now, tunnelUp: tunnelUp(record, sample: sample, catalog: &catalog),
      nextLengths: nextLengths, tunnelTotals: totals, lastStop: try store.stops(limit: 1).first, dataCap: cap)
  }

  /// Whether the session's tunnel is up: the one an enforcer opened the window for, else any
  /// tunnel-class interface.
  static func tunnelUp(_ record: SessionRecord, sample: CounterSample?, catalog: inout InterfaceCatalog) -> Bool {
    guard let sample else { return false }
    for entry in sample.interfaces where LinkState(entry.link) == .up {
      if let tunnel = record.tunnel {
        if entry.name == tunnel { return true }
      } else if catalog.entry(for: entry).interfaceClass == .tunnel {
        return true
      }
    }
    return false
  }
}
