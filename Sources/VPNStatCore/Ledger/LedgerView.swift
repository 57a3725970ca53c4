/// How one-shot and live reports get their ledger: advanced and saved when the database may be
/// written, advanced in memory only when it may not (or is busy), so a report always shows
/// what it can and says when its totals were not saved.
public enum LedgerView {
  public static func advance(
    _ store: Store, sampler: inout TrafficSampler, sample: CounterSample, warnings: inout [String]
  ) throws -> Ledger {
    let observations = sampler.observations(sample)
    do {
      let result = try store.advanceLedger(observations, now: sample.taken.wall)
      if !result.persisted {
        warnings.append("\(store.location.path) is read-only here: totals include this sample but were not saved")
      }
      return result.ledger
    } catch StoreError.busy {
      var ledger = try store.loadLedger()
      _ = ledger.advance(observations)
      warnings.append("\(store.location.path) is busy: totals include this sample but were not saved")
      return ledger
    }
  }
}
