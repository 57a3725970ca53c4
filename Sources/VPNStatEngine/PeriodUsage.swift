import VPNStatModel
import VPNStatStore

/// A period's traffic, for data caps and alerts: what the ledger booked into the daily buckets
/// since the period began, plus — for a reader, whose own sample advanced the ledger in memory
/// and is never written — how far that sample moved the totals past the stored ones.
public enum PeriodUsage {
  /// The traffic of `interfaceClass` (or of the interface `name`; nil: any) from `start` (a
  /// local midnight, Unix seconds) on. `ledger`: the stored ledger as this process advanced it.
  public static func measure(
    _ store: Store, since start: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName? = nil,
    ledger: Ledger? = nil
  ) throws -> TrafficCounts {
    var used = try store.usage(since: start, of: interfaceClass, name: name)
    if let ledger {
      var advanced = TrafficCounts.zero
      for entry in ledger.entries.values
      where (interfaceClass == nil || entry.interfaceClass == interfaceClass) && (name == nil || entry.name == name) {
        advanced += entry.totals.traffic
      }
      used += advanced - (try store.ledgerTotals(of: interfaceClass, name: name))
    }
    return used
  }

  /// The same for a process that keeps the ledger (`LedgerKeeper`). While it writes, the saved
  /// daily buckets plus what it booked per day since its last checkpoint: its buckets are saved
  /// only every save interval, and a cap crossed between checkpoints must count at the sample
  /// that crosses it, in the period the traffic fell in. While it reads, as any reader.
  public static func measure(
    _ keeper: LedgerKeeper, since start: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName? = nil
  ) throws -> TrafficCounts {
    guard let memory = keeper.memory else {
      return try measure(keeper.store, since: start, of: interfaceClass, name: name, ledger: keeper.ledger)
    }
    return try keeper.store.usage(since: start, of: interfaceClass, name: name)
      + memory.unsavedDailyTraffic(since: start, of: interfaceClass, name: name)
  }

  /// Where the data cap stands at `now`: the tunnel class's traffic in the cap's current period.
  public static func status(
    of cap: DataCap, _ store: Store, at now: Timestamp, ledger: Ledger? = nil
  ) throws -> DataCapStatus {
    let start = cap.period.start(of: now, in: store.calendar)
    let used = try measure(store, since: start, of: .tunnel, ledger: ledger)
    return cap.status(used: used, at: now, in: store.calendar)
  }

  /// Where the data cap stands at `now` for a process that keeps the ledger.
  public static func status(of cap: DataCap, _ keeper: LedgerKeeper, at now: Timestamp) throws -> DataCapStatus {
    let start = cap.period.start(of: now, in: keeper.store.calendar)
    let used = try measure(keeper, since: start, of: .tunnel)
    return cap.status(used: used, at: now, in: keeper.store.calendar)
  }
}
