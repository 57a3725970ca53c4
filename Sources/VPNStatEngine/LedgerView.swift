import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// The ledger as a reader sees it (`status`, `watch`, `export`, `session`): the stored one,
/// advanced in memory with this process's own samples and link notifications, and never written
/// back. One writer of record (the recorder, the enforcer) keeps the database; any number of
/// readers cannot move it, nor each other.
package struct LedgerView {
  package let store: Store
  package private(set) var ledger = Ledger()
  private var loadedVersion: Int64?

  package init(store: Store) { self.store = store }

  /// Takes a sample and returns it with the ledger it advances. The stored ledger is (re)loaded
  /// first when another process committed since the last load, and the kernel is read after it:
  /// every stored baseline is then older than the sample, so a counter that went back is never
  /// mistaken for a reset.
  package mutating func sample(_ sampler: inout TrafficSampler) throws -> (sample: CounterSample, ledger: Ledger) {
    let version = try store.dataVersion()
    if version != loadedVersion {
      ledger = try store.loadLedger()
      loadedVersion = version
    }
    let sample = try sampler.sample()
    _ = ledger.advance(sampler.observations(sample))
    return (sample, ledger)
  }

  /// Books link notifications (a tunnel deleted between samples keeps its last bytes here).
  package mutating func book(_ observations: [LedgerObservation]) {
    _ = ledger.advance(observations)
  }
}
