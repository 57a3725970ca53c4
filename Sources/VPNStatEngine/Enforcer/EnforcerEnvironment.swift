import VPNStatModel
import VPNStatStore

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
  /// Hands over the database when it could not be opened at start (locked): asked every tick,
  /// it must not wait (`StoreOpener` opens on a thread of its own). Nil: not yet.
  package var open: () throws -> Store?
  package var saveInterval: Duration
  package var ledgerLock: any LedgerWriterLock
  package var spool: EnforcerSpool?
  package var presence: EnforcerPresenceFile?

  package init(
    store: Store?, open: @escaping () throws -> Store? = { nil }, saveInterval: Duration = Recorder.defaultSaveInterval,
    ledgerLock: any LedgerWriterLock = UncontendedLedgerLock(), spool: EnforcerSpool? = nil,
    presence: EnforcerPresenceFile? = nil
  ) {
    self.store = store
    self.open = open
    self.saveInterval = saveInterval
    self.ledgerLock = ledgerLock
    self.spool = spool
    self.presence = presence
  }
}
