import VPNStatModel
import VPNStatStore

/// The traffic buckets as one process sees them now: the stored ones, plus what its own ledger
/// holds and the database does not have yet, in the buckets the next save books it into. For a
/// reader that is how far its sample moved the totals past the stored ones (`UnsavedTraffic
/// (reading:past:)`: the current bucket of each granularity); for a writer between checkpoints,
/// what it booked per bucket since its last one. Every reader of buckets — `history` in every
/// form, `report`, `alert`, a data cap's usage (the gate, `session`, `watch`, the enforcer) —
/// reads them through this, so every command gives the figure `status`'s totals give.
package struct RecordedTraffic {
  package let store: Store
  /// What the stored buckets lack.
  package let unsaved: UnsavedTraffic

  /// Runs `read` on the buckets as a reader whose sample advanced `ledger` (the stored ledger as
  /// it loaded it; nil: no sample, the stored buckets alone) sees them. One read transaction
  /// holds the stored ledger compared with and every bucket `read` reads, so a save committed
  /// meanwhile is counted once: in the buckets, and not again in the sample.
  package static func reading<T>(_ store: Store, ledger: Ledger?, _ read: (RecordedTraffic) throws -> T) throws -> T {
    try store.snapshot {
      let unsaved = try ledger.map {
        UnsavedTraffic(reading: $0, past: try store.loadLedger(), calendar: store.calendar)
      }
      return try read(RecordedTraffic(store: store, unsaved: unsaved ?? UnsavedTraffic()))
    }
  }

  /// The same for a process that keeps the ledger (`LedgerKeeper`): while it writes, the stored
  /// buckets and what it booked since its last checkpoint, in the bucket each booking fell in;
  /// while it reads, as any reader.
  package static func reading<T>(_ keeper: LedgerKeeper, _ read: (RecordedTraffic) throws -> T) throws -> T {
    guard let memory = keeper.memory else {
      return try reading(keeper.store, ledger: keeper.ledger, read)
    }
    return try keeper.store.snapshot { try read(RecordedTraffic(store: keeper.store, unsaved: memory.unsavedTraffic)) }
  }

  /// The buckets of `granularity` from `since` (Unix seconds) on: the stored ones, then the
  /// unsaved ones (a bucket may appear in both; whoever sums them adds them).
  package func buckets(_ granularity: TrafficGranularity, since: Int64) throws -> [TrafficBucket] {
    try store.buckets(granularity, since: since) + unsaved.buckets(granularity, since: since)
  }

  /// The traffic in the daily buckets from `start` (a local midnight, Unix seconds) on, of
  /// `interfaceClass` or of the interface `name` (nil: any): a period's usage.
  package func usage(since start: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName? = nil) throws
    -> TrafficCounts
  {
    try store.usage(since: start, of: interfaceClass, name: name)
      + unsaved.traffic(.day, since: start, of: interfaceClass, name: name)
  }
}

/// A period's traffic, for data caps and alerts: the daily buckets since the period began, as
/// the process measuring sees them (`RecordedTraffic`).
package enum PeriodUsage {
  /// The traffic of `interfaceClass` (or of the interface `name`; nil: any) from `start` (a
  /// local midnight, Unix seconds) on. `ledger`: the stored ledger as this process advanced it.
  package static func measure(
    _ store: Store, since start: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName? = nil,
    ledger: Ledger? = nil
  ) throws -> TrafficCounts {
    try RecordedTraffic.reading(store, ledger: ledger) { try $0.usage(since: start, of: interfaceClass, name: name) }
  }

  /// The same for a process that keeps the ledger (`LedgerKeeper`).
  package static func measure(
    _ keeper: LedgerKeeper, since start: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName? = nil
  ) throws -> TrafficCounts {
    try RecordedTraffic.reading(keeper) { try $0.usage(since: start, of: interfaceClass, name: name) }
  }

  /// Where the data cap stands at `now`: the tunnel class's traffic in the cap's current period.
  package static func status(
    of cap: DataCap, _ store: Store, at now: Timestamp, ledger: Ledger? = nil
  ) throws -> DataCapStatus {
    let start = cap.period.start(of: now, in: store.calendar)
    let used = try measure(store, since: start, of: .tunnel, ledger: ledger)
    return cap.status(used: used, at: now, in: store.calendar)
  }

  /// Where the data cap stands at `now` for a process that keeps the ledger.
  package static func status(of cap: DataCap, _ keeper: LedgerKeeper, at now: Timestamp) throws -> DataCapStatus {
    let start = cap.period.start(of: now, in: keeper.store.calendar)
    let used = try measure(keeper, since: start, of: .tunnel)
    return cap.status(used: used, at: now, in: keeper.store.calendar)
  }
}
