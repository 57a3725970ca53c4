import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// The enforcer's seams: everything through which it touches the world besides its database and
/// the kernel's counters, each replaceable by a test — the kernel's links, the wall-clock alarm,
/// the log and the calendar its times are told in, how a manager's hold is given back, how the
/// exit of a manager's process is noticed, and which process this is.
package struct EnforcerEnvironment {
  package var links: any LinkTable
  package var alarm: any DeadlineAlarm
  package var log: any EventLog
  /// The calendar the log's clock times are in.
  package var calendar: any LocalCalendar
  package var holdRelease: any HoldRelease
  package var processExits: any ProcessExitWatching
  /// This process, as its presence file names it.
  package var process: ProcessStamp

  package init(
    links: any LinkTable, alarm: any DeadlineAlarm, log: any EventLog, calendar: any LocalCalendar,
    holdRelease: any HoldRelease = ManagerHoldRelease(), processExits: any ProcessExitWatching = PidfdExitWatching(),
    process: ProcessStamp = .current
  ) {
    self.links = links
    self.alarm = alarm
    self.log = log
    self.calendar = calendar
    self.holdRelease = holdRelease
    self.processExits = processExits
    self.process = process
  }
}

/// Where an enforcer keeps what must outlive a moment: the database (or how to get it once it
/// opens), the ledger's lock and save interval, the spool of what the database refused, and the
/// presence file. Each may be absent: the enforcer then holds it in memory only.
package struct EnforcerStorage {
  /// The database, when it opened in time.
  package var store: Store?
  /// The database as every reader reads it (no lock: `Store`), for the session until `store`
  /// opens: a writer's open waits for the writers' lock and checks every page first.
  package var view: Store?
  /// Hands over the database when it could not be opened at start (locked): asked every tick,
  /// it must not wait (`StoreOpener` opens on a thread of its own). Nil: not yet.
  package var open: () throws -> Store?
  package var saveInterval: Duration
  package var ledgerLock: any LedgerWriterLock
  package var spool: EnforcerSpool?
  package var presence: EnforcerPresenceFile?
  /// Writes to the database by any process, watched; nil: the session is read again before
  /// every decision on an up.
  package var changes: (any DatabaseChanges)?

  package init(
    store: Store?, view: Store? = nil, open: @escaping () throws -> Store? = { nil },
    saveInterval: Duration = Recorder.defaultSaveInterval, ledgerLock: any LedgerWriterLock = UncontendedLedgerLock(),
    spool: EnforcerSpool? = nil, presence: EnforcerPresenceFile? = nil, changes: (any DatabaseChanges)? = nil
  ) {
    self.store = store
    self.view = view
    self.open = open
    self.saveInterval = saveInterval
    self.ledgerLock = ledgerLock
    self.spool = spool
    self.presence = presence
    self.changes = changes
  }
}

/// Whether the database may have been written since the last call: lets the enforcer decide an
/// up in the pause on the session it holds, reading the database only when another process may
/// have changed it. `FileChanges` in the program; tests may say what they like.
package protocol DatabaseChanges: AnyObject {
  /// True when the database or its `-wal` may have changed since the last call (also when that
  /// cannot be told: events were lost).
  func consume() -> Bool
}

extension FileChanges: DatabaseChanges {}
