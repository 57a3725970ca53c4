import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore

/// What a session report is asked for: the moment, what the kernel showed then, and what a new
/// window would be.
package struct SessionRequest {
  /// When: the trusted "now" is taken from it (never behind the store's last trusted time).
  package var reading: ClockReading
  /// Tells whether the tunnel is up; nil: it is not known to be.
  package var sample: CounterSample?
  /// The ledger just advanced by `sample`: the current tunnel-class totals and a data cap's usage.
  package var ledger: Ledger?
  /// The ledger of a process that keeps it (the recorder), in place of `ledger`.
  package var keeper: LedgerKeeper?
  /// The lengths a window opened now would get.
  package var nextLengths: SessionLengths
  /// Who manages tunnels: with one, the session tunnel's manager is looked up (when the tunnel
  /// exists in `sample`).
  package var detector: (any ManagerDetecting)?

  package init(
    reading: ClockReading, sample: CounterSample? = nil, ledger: Ledger? = nil, keeper: LedgerKeeper? = nil,
    nextLengths: SessionLengths, detector: (any ManagerDetecting)? = nil
  ) {
    self.reading = reading
    self.sample = sample
    self.ledger = ledger
    self.keeper = keeper
    self.nextLengths = nextLengths
    self.detector = detector
  }
}

/// How commands get the session as it stands now: the stored record at the trusted "now", with
/// the tunnel's state from a sample and the usage from the ledger. The use cases `session status`
/// and the gate (`session check`, `connect`) are one call each, from their request to a report.
package enum SessionView {
  /// The report for `store` as `request` asks: the stored record at the trusted now, the
  /// tunnel's state from the sample, the totals and the data cap's usage from the ledger, and
  /// the enforcers running on the database (whether anything holds the tunnel).
  package static func report(_ request: SessionRequest, store: Store, catalog: inout InterfaceCatalog) throws
    -> SessionReport
  {
    try report(request, stored: store.storedSession(), store: store, location: store.location, catalog: &catalog)
  }

  /// The report from `stored` (read from the database at `location`, or as the recorder
  /// published it), as `report(_:store:catalog:)` makes it. `store` gives the tunnel totals
  /// when there is no ledger and a data cap's usage (the buckets); without it (a published
  /// state) neither is read, and `dataCap` is the cap's status as the published usage gives it.
  package static func report(
    _ request: SessionRequest, stored: StoredSession, store: Store?, location: StoreLocation,
    catalog: inout InterfaceCatalog, dataCap: DataCapStatus? = nil
  ) throws -> SessionReport {
    // What an enforcer could not write yet counts as written (the spool beside the database).
    let spooled = SpooledSession(record: stored.record, lastStop: stored.lastStop, lastRefusal: stored.lastRefusal)
      .applying(EnforcerSpool.waiting(for: location).records)
    let record = spooled.record
    // Reports never store the trusted clock (the recorder would write it with every sample):
    // writers store it with their checkpoints and decisions.
    let now = stored.trustedNow(request.reading)
    let keeper = request.keeper
    let ledger = keeper?.ledger ?? request.ledger
    let totals = try ledger?.totals(of: .tunnel) ?? store?.tunnelTotals()
    let cap = try record.dataCap.flatMap { cap -> DataCapStatus? in
      if let keeper { return try PeriodUsage.status(of: cap, keeper, at: now) }
      guard let store else { return dataCap?.cap == cap ? dataCap : nil }
      return try PeriodUsage.status(of: cap, store, at: now, ledger: ledger)
    }
    let enforcers = EnforcerPresenceFile.running(on: location)
    let sample = request.sample
    var report = SessionReport.make(
      record, now: now, tunnelUp: tunnelUp(record, sample: sample, catalog: &catalog),
      nextLengths: request.nextLengths, tunnelTotals: totals, lastStop: spooled.lastStop,
      enforcer: enforcers.first { $0.tunnel == record.tunnel } ?? enforcers.first, dataCap: cap,
      lastRefusal: spooled.lastRefusal)
    if let detector = request.detector, let tunnel = record.tunnel,
      let entry = sample?.interfaces.first(where: { $0.name == tunnel })
    {
      report.manager = detector.manager(of: tunnel, kind: entry.link.kind)
    }
    return report
  }

  /// The report of a database that has none: no window was ever opened.
  package static func unopened(at now: Timestamp, nextLengths: SessionLengths) -> SessionReport {
    SessionReport.make(
      SessionRecord(), now: now, tunnelUp: false, nextLengths: nextLengths, tunnelTotals: nil, lastStop: nil)
  }

  /// `session status`: one reader's sample over the stored ledger, then the window at its time;
  /// without a database, a window never opened. The warnings are the sample's (`ReaderSample`).
  package static func status(
    nextLengths: SessionLengths, detector: (any ManagerDetecting)?, sampler: TrafficSampler, store: Store?
  ) throws -> (report: SessionReport, at: Timestamp, warnings: [String]) {
    var sampler = sampler
    let read = try ReaderSample.take(&sampler, store: store)
    let at = read.sample.taken.wall
    guard let store else { return (unopened(at: at, nextLengths: nextLengths), at, read.warnings) }
    let report = try Self.report(
      SessionRequest(
        reading: read.sample.taken, sample: read.sample, ledger: read.ledger, nextLengths: nextLengths,
        detector: detector),
      store: store, catalog: &sampler.catalog)
    return (report, at, read.warnings)
  }

  /// The gate's decision (`session check`, and `connect` before it starts anything): the stored
  /// window at the trusted now, read within `timeout` — throws `StoreError.busy` when it cannot
  /// be, which is undecided. Without a database nothing limits connecting. A database others
  /// could have written decides nothing (`UntrustedFile`, 77). The tunnel's state (expired or
  /// paused) and a data cap's usage since the writers' last checkpoint come from a sample when
  /// one can be taken (the stored ledger advanced by it, as every reader sees it); the window's
  /// decision never needs it.
  package static func gate(
    _ location: StoreLocation, timeout: Duration, reading: ClockReading, nextLengths: SessionLengths,
    sampler: TrafficSampler, calendar: any LocalCalendar
  ) throws -> SessionReport {
    try location.checkDecisionTrust()
    let store = try Store.open(
      location, intent: .read, busyTimeoutMilliseconds: 2000, waitingAtMost: timeout, calendar: calendar)
    guard let store else { return unopened(at: reading.wall, nextLengths: nextLengths) }
    var sampler = sampler
    var view = LedgerView(store: store)
    let sampled: (sample: CounterSample, ledger: Ledger)?
    do {
      sampled = try view.sample(&sampler)
    } catch let error as StoreError {
      throw error
    } catch {
      // No counters to read: the saved buckets alone.
      sampled = nil
    }
    return try report(
      SessionRequest(reading: reading, sample: sampled?.sample, ledger: sampled?.ledger, nextLengths: nextLengths),
      store: store, catalog: &sampler.catalog)
  }

  /// Records `refusal` where every reader sees it (`watch`, `session`, `vpnstat notify`). The
  /// gate decides by reading only; this write comes after the decision, waits at most
  /// `timeout`, and changes nothing of it. Returns why it could not be recorded (a user's gate
  /// may not write the system's database: root's records), nil when it was.
  package static func record(
    _ refusal: Refusal, at location: StoreLocation, timeout: Duration = .milliseconds(500),
    calendar: any LocalCalendar
  ) -> String? {
    do {
      guard
        let store = try Store.open(
          location, intent: .write, busyTimeoutMilliseconds: 250, waitingAtMost: timeout, calendar: calendar)
      else { return "the refusal is not recorded: \(location.path) is empty" }
      try store.recordRefusal(refusal)
      return nil
    } catch {
      return "the refusal is not recorded for other readers (vpnstat notify, watch): \(error)"
    }
  }

  /// Whether the session's tunnel is up: the one an enforcer opened the window for, else any
  /// tunnel-class interface.
  static func tunnelUp(_ record: SessionRecord, sample: CounterSample?, catalog: inout InterfaceCatalog) -> Bool {
    guard let interfaces = sample?.interfaces else { return false }
    // Taken out of the record first: read in the loop, the record was copied at every interface.
    let tunnel = record.tunnel
    // By position: iterating the entries would copy each, a thousand of them at every report.
    // The class before the state: the cached verdict is cheaper than a link state, and a
    // thousand other interfaces then need none.
    for at in interfaces.indices {
      if let tunnel {
        guard interfaces[at].name == tunnel else { continue }
      } else if catalog.verdict(of: interfaces, at: at).interfaceClass != .tunnel {
        continue
      }
      if LinkState(interfaces[at].link) == .up { return true }
    }
    return false
  }
}
