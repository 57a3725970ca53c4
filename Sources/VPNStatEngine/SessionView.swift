import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// How commands get the session as it stands now: the stored record at the trusted "now", with
/// the tunnel's state from a sample and the usage from the ledger.
public enum SessionView {
  /// The report for `store` at `reading`. `sample` tells whether the tunnel is up; `ledger` (when
  /// just advanced) gives the current tunnel-class totals; the enforcers running on the database
  /// say whether anything holds the tunnel; with `detector`, the tunnel's manager is looked up
  /// (when the tunnel exists in `sample`).
  /// `keeper`: the ledger of a process that keeps it (the recorder), for the totals and a data
  /// cap's usage in place of `ledger`.
  public static func report(
    _ store: Store, reading: ClockReading, sample: CounterSample?, catalog: inout InterfaceCatalog,
    ledger: Ledger?, keeper: LedgerKeeper? = nil, nextLengths: SessionLengths, detector: (any ManagerDetecting)? = nil
  ) throws -> SessionReport {
    let record = try store.sessionRecord()
    // Reports never store the trusted clock (the recorder would write it with every sample):
    // writers store it with their checkpoints and decisions.
    let now = try store.trustedNow(reading, writing: false)
    let ledger = keeper?.ledger ?? ledger
    let totals = try ledger?.totals(of: .tunnel) ?? store.tunnelTotals()
    let cap = try record.dataCap.map { cap in
      try keeper.map { try PeriodUsage.status(of: cap, $0, at: now) }
        ?? PeriodUsage.status(of: cap, store, at: now, ledger: ledger)
    }
    let enforcers = EnforcerPresenceFile.running(on: store.location)
    var report = SessionReport.make(
      record, now: now, tunnelUp: tunnelUp(record, sample: sample, catalog: &catalog),
      nextLengths: nextLengths, tunnelTotals: totals, lastStop: try store.stops(limit: 1).first,
      enforcer: enforcers.first { $0.tunnel == record.tunnel } ?? enforcers.first, dataCap: cap)
    if let detector, let tunnel = record.tunnel, let entry = sample?.interfaces.first(where: { $0.name == tunnel }) {
      report.manager = detector.manager(of: tunnel, kind: entry.link.kind)
    }
    return report
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
