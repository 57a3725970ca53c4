import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore

/// The ledger as a reader sees it (`status`, `watch`, `export`, `session`): the stored one,
/// advanced in memory with this process's own samples and link notifications, and never written
/// back. One writer of record (the recorder, the enforcer) keeps the database; any number of
/// readers cannot move it, nor each other.
package struct LedgerView {
  package let store: Store
  package private(set) var ledger = Ledger()
  /// The stored ledger's version when it was loaded; nil before the first load.
  private var loadedVersion: LedgerVersion?

  package init(store: Store) { self.store = store }

  /// Takes a sample and returns it with the ledger it advances. The stored ledger is (re)loaded
  /// first when it may have changed since the last load (`LedgerVersion`), and the kernel is
  /// read after it: every stored baseline is then older than the sample, so a counter that went
  /// back is never mistaken for a reset.
  package mutating func sample(_ sampler: inout TrafficSampler) throws -> (sample: CounterSample, ledger: Ledger) {
    if try loadedVersion.map({ try !store.ledgerVersion().sameLedger(as: $0) }) ?? true {
      // Stored boot ids of this boot become the clock's own String: advancing then compares each
      // entry's boot by identity, not by its 36 bytes.
      (ledger, loadedVersion) = try store.loadVersionedLedger(sharingBootID: sampler.clock.now().bootID)
    }
    return (try Self.sample(&sampler, advancing: &ledger), ledger)
  }

  /// Takes a sample and advances `ledger` (loaded before it) with it, as a reader does.
  static func sample(_ sampler: inout TrafficSampler, advancing ledger: inout Ledger) throws -> CounterSample {
    let sample = try sampler.sample()
    // In place, and nothing collected: a reader keeps no record of what changed.
    sampler.forEachObservationChunk(of: sample) { ledger.advance($0) { _, _ in } }
    return sample
  }

  /// Books link notifications (a tunnel deleted between samples keeps its last bytes here).
  package mutating func book(_ observations: [LedgerObservation]) {
    ledger.advance(observations) { _, _ in }
  }
}

/// What the recorder published, with what a report needs besides: the calendar a data cap's
/// period is taken in, and the database to read instead when that period turned since (`open`).
package struct PublishedSource {
  package var state: PublishedState
  package var calendar: any LocalCalendar
  package var open: () throws -> Store?

  package init(state: PublishedState, calendar: any LocalCalendar, open: @escaping () throws -> Store?) {
    self.state = state
    self.calendar = calendar
    self.open = open
  }
}

/// Where a reader's stored ledger comes from: what the recorder published of the database
/// (`PublishedState`: current, and believed, so a one-shot report need not open the database), the
/// database itself, or nothing (no database yet).
package enum LedgerSource {
  /// Taken by the first report that reads it (`status`, `export`); the source is `none` after.
  case published(PublishedSource)
  case database(LedgerView)
  case none

  /// The database read, or nothing.
  package init(store: Store?) {
    self = store.map { .database(LedgerView(store: $0)) } ?? .none
  }

  /// What a one-shot report reads: what the recorder published when that is current and may be
  /// believed, else the database `open` gives (nil: there is none).
  package static func forReport(
    _ location: StoreLocation, bootID: String, calendar: any LocalCalendar, open: @escaping () throws -> Store?
  ) throws -> LedgerSource {
    if let published = PublishedState.load(location, sharingBootID: bootID) {
      return .published(PublishedSource(state: published, calendar: calendar, open: open))
    }
    return LedgerSource(store: try open())
  }

  /// What a report says when it was asked for the database at `location` and there is none:
  /// nil when there is one (read, or published by the recorder).
  package func absence(at location: StoreLocation) -> String? {
    guard case .none = self else { return nil }
    return "no database at \(location.path) (vpnstat record creates one)"
  }

  /// The database this source reads, when it reads one.
  package var store: Store? {
    guard case .database(let view) = self else { return nil }
    return view.store
  }

  /// The view, changed in place: taken out for the change, so it is the ledger's only holder
  /// and advancing it copies nothing (a copy would copy the whole table at every refresh).
  mutating func withView<Result>(_ body: (inout LedgerView) throws -> Result) rethrows -> Result? {
    guard case .database(var view) = self else { return nil }
    self = .none
    defer { self = .database(view) }
    return try body(&view)
  }
}
