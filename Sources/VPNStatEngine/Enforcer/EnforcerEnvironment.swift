import VPNStatModel
import VPNStatStore

/// The enforcer's seams: everything through which it touches the world besides its database and
/// the kernel's counters, each replaceable by a test — the kernel's links, the wall-clock alarm,
/// the log and the calendar its times are told in, how a manager's hold is given back, and which
/// process this is.
public struct EnforcerEnvironment {
  public var links: any LinkTable
  public var alarm: any DeadlineAlarm
  public var log: any EventLog
  /// The calendar the log's clock times are in.
  public var calendar: any LocalCalendar
  public var holdRelease: any HoldRelease
  /// This process, as its presence file names it.
  public var process: ProcessStamp

  public init(
    links: any LinkTable, alarm: any DeadlineAlarm, log: any EventLog, calendar: any LocalCalendar,
    holdRelease: any HoldRelease = ManagerHoldRelease(), process: ProcessStamp = .current
  ) {
    self.links = links
    self.alarm = alarm
    self.log = log
    self.calendar = calendar
    self.holdRelease = holdRelease
    self.process = process
  }
}

/// Where an enforcer keeps what must outlive a moment: the database (or how to get it once it
/// opens), the ledger's lock and save interval, the spool of what the database refused, and the
/// presence file. Each may be absent: the enforcer then holds it in memory only.
public struct EnforcerStorage {
  /// The database, when it opened in time.
  public var store: Store?
  /// Hands over the database when it could not be opened at start (locked): asked every tick,
  /// it must not wait (`StoreOpener` opens on a thread of its own). Nil: not yet.
  public var open: () throws -> Store?
  public var saveInterval: Duration
  public var ledgerLock: any LedgerWriterLock
  public var spool: EnforcerSpool?
  public var presence: EnforcerPresenceFile?

  public init(
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
