import VPNStatKernel
import VPNStatModel
import VPNStatStore

/// What a `status` report (or one refresh of `watch`) asks for.
package struct StatusRequest: Sendable {
  /// Which interfaces: names and classes (empty: all).
  package var selection: InterfaceSelection
  /// `status --rate`: a first sample this long before the report's, for rates. (`watch` has its
  /// rates from its previous refresh.)
  package var rateInterval: Duration?
  /// The lengths a window opened now would get.
  package var nextLengths: SessionLengths

  package init(
    selection: InterfaceSelection = InterfaceSelection(), rateInterval: Duration? = nil, nextLengths: SessionLengths
  ) {
    self.selection = selection
    self.rateInterval = rateInterval
    self.nextLengths = nextLengths
  }
}

/// A status report: the snapshot rendered, and the names asked for that no interface has (the
/// command says so, and fails when nothing else was found).
package struct StatusReport {
  package var snapshot: StatusSnapshot
  /// The selected names missing from the sample, sorted.
  package var missing: [InterfaceName]
}

/// The `status` use case, also each refresh of `watch`: from a request to the snapshot shown, in
/// one call. It samples the kernel (the stored ledger advanced by the sample in memory: readers
/// never write it — the order matters, every stored baseline is older than the sample),
/// classifies and selects the interfaces, adds WireGuard's own figures, the session window at
/// the trusted now, and who manages each tunnel.
package struct StatusReader {
  package var sampler: TrafficSampler
  /// Where the stored ledger comes from (`status` reads what the recorder published; `watch` the
  /// database).
  var source: LedgerSource
  /// The database read, when one is.
  package var store: Store? { source.store }
  /// What shows WireGuard's own figures under a WireGuard tunnel; nil: nothing is shown.
  package var wireGuard: (any WireGuardSource)?
  /// Who manages each tunnel-class interface (and the session's tunnel); nil: not looked up.
  package var managers: (any ManagerDetecting)?
  /// Whether the database's health is said among the warnings: once for `status`; `watch`, which
  /// reads every second, does not ask.
  package var reportsStoreHealth: Bool
  /// The sample of the last report: the next report's rates are against it.
  package private(set) var previous: CounterSample?

  package init(
    sampler: TrafficSampler, source: LedgerSource, wireGuard: (any WireGuardSource)? = nil,
    managers: (any ManagerDetecting)? = nil, reportsStoreHealth: Bool = true
  ) {
    self.sampler = sampler
    self.source = source
    self.wireGuard = wireGuard
    self.managers = managers
    self.reportsStoreHealth = reportsStoreHealth
  }

  /// The report `request` asks for, at the time of this call's sample.
  package mutating func report(_ request: StatusRequest) throws -> StatusReport {
    if let interval = request.rateInterval {
      previous = try sampler.sample()
      sampler.clock.sleep(for: interval)
    }
    // Read before WireGuard's and the managers' look-ups, which may wait on other programs.
    let (read, session) = try ReaderSample.takeWithSession(
      &sampler, source: &source, nextLengths: request.nextLengths, health: reportsStoreHealth)
    let sample = read.sample
    var snapshot = StatusSnapshot.make(
      sample: sample, catalog: &sampler.catalog, selection: request.selection, previous: previous, ledger: read.ledger)
    snapshot.warnings += read.warnings
    snapshot.session = session
    if var source = wireGuard {
      snapshot.addWireGuard(sample: sample, catalog: &sampler.catalog, source: &source)
      wireGuard = source
    }
    if let managers { snapshot.addManagers(managers, sample: sample) }
    previous = sample
    let missing = request.selection.names.sorted().filter { name in !sample.interfaces.contains { $0.name == name } }
    return StatusReport(snapshot: snapshot, missing: missing)
  }

  /// Books link changes into the in-memory ledger (a tunnel torn down between reports keeps its
  /// bytes) and keeps the reader's link table current.
  package mutating func book(_ changes: [LinkNotifications.Change]) {
    var observations: [LedgerObservation] = []
    let keepsLedger = source.store != nil
    for change in changes {
      if keepsLedger, let observation = sampler.observation(change) { observations.append(observation) }
      sampler.apply(change)
    }
    if !observations.isEmpty { source.withView { $0.book(observations) } }
  }
}

/// A reader's sample: the kernel's counters and, with a database, the ledger as of that sample
/// (advanced in memory: readers never write it), with the warnings a report shows about both.
package struct ReaderSample {
  package var sample: CounterSample
  package var ledger: Ledger?
  package var warnings: [String]
  /// The database's health as the sample's warnings were made from it; nil without a database,
  /// or where it was not asked for (`watch`).
  package var health: StoreHealth?

  /// One sample over the stored ledger and the session at its time, for a report: from what the
  /// recorder published when there is that (it is then consumed), else with every query of the
  /// database in one read transaction (they come from one commit); without either, the sample
  /// alone.
  package static func takeWithSession(
    _ sampler: inout TrafficSampler, source: inout LedgerSource, nextLengths: SessionLengths, health: Bool
  ) throws -> (read: ReaderSample, session: SessionReport?) {
    if case .published(var published) = source {
      source = .none
      // Taken out of the state, so advancing it is in place, not a copy of the whole table.
      var ledger = Ledger()
      swap(&ledger, &published.state.ledger)
      let state = published.state
      // A capped session's usage grows past the published one by the sample's growth past the
      // published ledger: that ledger is kept to compare (a copy only then).
      let past = state.capUsage != nil ? ledger : nil
      let sample = try LedgerView.sample(&sampler, advancing: &ledger)
      var cap: DataCapStatus?
      if let dataCap = state.session.record.dataCap {
        let now = state.session.trustedNow(sample.taken)
        guard let usage = state.capUsage, let past, dataCap.period.start(of: now, in: published.calendar) == usage.start
        else {
          // The cap's period turned since it was published: its usage is in the database.
          source = LedgerSource(store: try published.open())
          return try takeWithSession(&sampler, source: &source, nextLengths: nextLengths, health: health)
        }
        let unsaved = UnsavedTraffic(reading: ledger, past: past, calendar: published.calendar)
        cap = dataCap.status(
          used: usage.stored + unsaved.traffic(.day, since: usage.start, of: .tunnel, name: nil), at: now,
          in: published.calendar)
      }
      let read = ReaderSample(sample, ledger: ledger, health: health ? state.health : nil, clock: sampler.clock)
      let session = try SessionView.report(
        SessionRequest(reading: sample.taken, sample: sample, ledger: ledger, nextLengths: nextLengths),
        stored: state.session, store: nil, location: state.location, catalog: &sampler.catalog, dataCap: cap)
      return (read, session)
    }
    let store = source.store
    return try Store.inOneRead(store) {
      let read = try take(&sampler, source: &source, health: health)
      let session = try store.map { store in
        try SessionView.report(
          SessionRequest(
            reading: read.sample.taken, sample: read.sample, ledger: read.ledger, nextLengths: nextLengths),
          store: store, catalog: &sampler.catalog)
      }
      return (read, session)
    }
  }

  /// One sample over `store`'s ledger (none without a database).
  package static func take(_ sampler: inout TrafficSampler, store: Store?) throws -> ReaderSample {
    var source = LedgerSource(store: store)
    return try take(&sampler, source: &source, health: true)
  }

  static func take(_ sampler: inout TrafficSampler, source: inout LedgerSource, health: Bool) throws -> ReaderSample {
    let read = try source.withView { view in
      let (sample, ledger) = try view.sample(&sampler)
      return ReaderSample(sample, ledger: ledger, health: health ? try view.store.health() : nil, clock: sampler.clock)
    }
    return try read ?? ReaderSample(try sampler.sample(), ledger: nil, health: nil, clock: sampler.clock)
  }
}

extension ReaderSample {
  /// The sample with the warnings a report shows about it: the clock's boot id, the health.
  init(_ sample: CounterSample, ledger: Ledger?, health: StoreHealth?, clock: any TimeSource) {
    var warnings: [String] = []
    if let problem = clock.bootIDProblem { warnings.append(problem) }
    if let warning = health?.warning(at: sample.taken.wall) { warnings.append(warning) }
    self.init(sample: sample, ledger: ledger, warnings: warnings, health: health)
  }
}
