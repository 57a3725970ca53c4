import VPNStatModel
import VPNStatStore

/// The enforcer's hold on its database: the store once it is open — asked for again at every tick
/// until then, never waited for (`StoreOpener` opens it on a thread of its own) — the tunnel's
/// ledger kept in it (`LedgerKeeper`: saved every save interval while no recorder writes it), what
/// it could not write yet (`PendingWrites`), the data cap read from it (`DataCapCheck`), and its
/// outages, said once. Its parts' state is its own: the enforcer asks, it answers.
struct EnforcerDatabase {
  private(set) var store: Store?
  /// The database as readers read it, for the session until `store` opens.
  let view: Store?
  /// Hands over the database when it could not be opened at start (locked): asked every tick,
  /// it must not wait. Nil: not yet.
  let open: () throws -> Store?
  let saveInterval: Duration
  let ledgerLock: any LedgerWriterLock
  let tunnel: InterfaceName
  let log: any EventLog
  /// The tunnel's ledger, while there is a database.
  private(set) var keeper: LedgerKeeper?
  private var outage: DatabaseOutage
  /// What is written when the database answers (windows, stops), spooled until then.
  private(set) var pending: PendingWrites
  /// The data cap against its period's traffic, as last read.
  private(set) var cap: DataCapCheck
  /// The tunnel-class totals after the last ledger advance: the usage base of a new window.
  private(set) var tunnelTotals = TrafficCounts.zero
  /// Who was last said to write the ledger instead of this enforcer (nil: this one does).
  private var writerSaid: String?

  init(_ storage: EnforcerStorage, tunnel: InterfaceName, calendar: any LocalCalendar, log: any EventLog) {
    store = storage.store
    view = storage.view
    open = storage.open
    saveInterval = storage.saveInterval
    ledgerLock = storage.ledgerLock
    self.tunnel = tunnel
    self.log = log
    outage = DatabaseOutage(log: log)
    pending = PendingWrites(spool: storage.spool, log: log)
    cap = DataCapCheck(calendar: calendar)
    keeper = storage.store.map {
      LedgerKeeper(store: $0, saveInterval: saveInterval, role: .enforcer, lock: ledgerLock)
    }
  }

  /// Asks for the store again; true when it was handed over now.
  mutating func reopen() -> Bool {
    do {
      store = try open()
      guard let store else { return false }
      keeper = LedgerKeeper(store: store, saveInterval: saveInterval, role: .enforcer, lock: ledgerLock)
      return true
    } catch {
      outage.failed(error)
      return false
    }
  }

  /// Advances the tunnel's ledger with notifications (`deleted`: a deleted instance's final
  /// counters, saved at once) or, without them, a sample; saves when due or asked (`saveNow`).
  /// Says when a recorder takes the ledger over, and when it gives it back.
  mutating func advanceLedger(
    _ sampler: inout TrafficSampler, notified: [LedgerObservation], deleted: Bool, saveNow: Bool
  ) {
    guard var keeper else { return }
    defer {
      tunnelTotals = keeper.ledger.totals(of: .tunnel)
      self.keeper = keeper
    }
    do {
      _ = keeper.book(notified, deleted: deleted)
      if saveNow { keeper.requestSave() }
      if notified.isEmpty || keeper.isDue(at: sampler.clock.now()) {
        let step = try keeper.step(&sampler)
        if let problem = step.problem { throw problem }
      }
      if keeper.writer != writerSaid {
        if let writer = keeper.writer {
          log.event("\(TerminalText.sanitize(writer)) keeps the ledger: reading it meanwhile")
        } else if writerSaid != nil {
          log.event("no recorder keeps the ledger any more: saving \(tunnel.terminalText)'s again")
        }
        writerSaid = keeper.writer
      }
    } catch {
      outage.failed(error)
    }
  }

  // MARK: - Writes and outages

  /// What went wrong last, while the database is out; nil when it answers.
  var problem: String? { outage.problem }

  /// A read or write failed: said once, until it answers again.
  mutating func failed(_ error: any Error) { outage.failed(error) }

  /// The database answered: an outage said before is said to be over (once nothing is pending).
  mutating func recovered() { outage.recovered(nothingPending: pending.isEmpty) }

  /// A window opened here, written with the next flush.
  mutating func open(_ window: PendingWrites.Window) { pending.open(window) }

  /// A stop, written with the next flush.
  mutating func add(_ stop: StopRecord) { pending.add(stop) }

  /// Writes what is pending; the spool keeps what the database refuses.
  mutating func flush(trusted: TrustedClock?) -> PendingWrites.Written {
    pending.flush(to: store, trusted: trusted, outage: &outage)
  }

  /// Takes in what the spool holds, written when the database answers.
  mutating func takeSpool(trusted: TrustedClock?) -> PendingWrites.Written {
    pending.takeSpool(into: store, trusted: trusted, outage: &outage)
  }

  /// What the enforcer leaves unwritten as it stops, said once; nil when nothing.
  func leftAtStop() -> String? { pending.leftAtStop(problem: outage.problem) }

  /// Whether `cap` is reached at `now`, from the ledger this database keeps.
  mutating func capReached(_ cap: DataCap?, at now: Timestamp) -> Bool {
    self.cap.reached(cap, keeper: keeper, at: now, outage: &outage)
  }
}

/// A database outage as the log tells it: one line when it begins (the same problem again is no
/// news) and one when it is over — when the database answers and everything kept was written.
struct DatabaseOutage {
  let log: any EventLog
  /// The problem last said, while the outage lasts.
  private(set) var problem: String?

  mutating func failed(_ error: any Error) {
    let text = "\(error)"
    guard text != problem else { return }
    problem = text
    log.event("database: \(text) — enforcing from memory; what is not written is kept and retried")
  }

  /// The database answered; the outage is over once `nothingPending`.
  mutating func recovered(nothingPending: Bool) {
    guard problem != nil, nothingPending else { return }
    problem = nil
    log.event("database: readable and writable again; everything kept was written")
  }
}
