import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat enforce IFACE`: the watchdog for one tunnel, living as long as the tunnel's limit must
/// hold — the Linux form of the iOS tunnel extension that owns the timer. It applies the
/// on-tunnel-up rule whenever the tunnel appears or comes up (whoever raised it), disconnects at
/// the wall-clock deadline, takes the tunnel down at once during the pause, and records why every
/// session ended. It also keeps the ledger of the tunnel (`LedgerKeeper`), so the window's usage
/// is live: saved every save interval and at once for a deleted instance, a window it opens and
/// its stop — while no recorder runs; while one does, the recorder writes and this reads.
///
/// Disconnect first, record after: the decision is made from what the enforcer holds in memory
/// (the session record and the trusted clock, refreshed from the database whenever it can be
/// read), and nothing the database does — locked by another user's reader, full, read-only —
/// delays taking the tunnel down. What could not be written is kept, in memory and in the spool
/// beside the database (`EnforcerSpool`), and written when it can: by this enforcer, or by the
/// next one to start.
///
/// The tunnel is the device that bears the name when it comes up, followed by its ifindex: a
/// rename does not take it out of reach. A device moved to another network namespace is out of
/// reach, and recorded as escaped. One enforcer per tunnel, in one network namespace.
///
/// A state machine: `handle(_:)` takes one event at a time. `EnforcerLoop` feeds it from the
/// kernel (link notifications, the wall-clock timer, a periodic tick, signals); tests feed it
/// directly, with a manual clock and a fake kernel.
public struct Enforcer {
  /// What can happen to an enforcer.
  public enum Event: Sendable {
    /// It starts: look at the tunnel as it is.
    case started
    /// A link notification (any link: the enforcer picks its own).
    case link(LinkNotifications.Change)
    /// Notifications were lost (the socket overflowed): look at the tunnel again.
    case notificationsLost
    /// The wall-clock alarm fired, or the wall clock was set.
    case alarm
    /// The periodic safety net.
    case tick
    /// Asked to stop (SIGTERM, SIGINT, SIGHUP).
    case stop
  }

  /// The name given on the command line: any device that bears it is under the limit.
  public let tunnel: InterfaceName
  private(set) var store: Store?
  /// Hands over the database when it could not be opened at start (locked): asked every tick,
  /// it must not wait (`StoreOpener` opens on a thread of its own). Nil: not yet.
  let openStore: () throws -> Store?
  var sampler: TrafficSampler
  let lengths: SessionLengths
  let action: any DisconnectAction
  let links: any LinkTable
  let alarm: any DeadlineAlarm
  let log: any EventLog
  /// The calendar the log's clock times are in.
  let calendar: any LocalCalendar
  var clock: any TimeSource { sampler.clock }

  /// The devices under the limit, by ifindex: the one named `tunnel`, and any of them renamed.
  public private(set) var devices: [Int32: Device] = [:]
  /// Devices that bore the name but are not tunnels (`NotATunnel`), by ifindex: left alone,
  /// said once.
  var refused: Set<Int32> = []
  /// The deadline the alarm is armed for (in trusted time), if any.
  public private(set) var armed: Timestamp?
  /// Where that deadline fell on the wall clock when the alarm was set: a clock set since moves
  /// it, and the alarm with it.
  var armedWall: Timestamp?
  /// CLOCK_BOOTTIME − CLOCK_MONOTONIC at the last event: when it grows, the machine slept.
  var lastSuspended: Int64?

  /// The session as last read (or as changed here and not yet written); nil until read once.
  public private(set) var record: SessionRecord?
  /// The last trusted clock pair: the stored one or a later one of ours.
  var trusted: TrustedClock?
  /// Writes the database refused, kept in order and retried.
  public private(set) var pendingStops: [StopRecord] = []
  var pendingWindow: PendingWindow?
  /// The tunnel-class totals after the last ledger advance: the usage base of a new window.
  var tunnelTotals = TrafficCounts.zero
  /// The tunnel's ledger, while there is a database.
  var keeper: LedgerKeeper?
  let saveInterval: Duration
  let ledgerLock: any LedgerWriterLock
  /// Who was last said to write the ledger instead of this enforcer (nil: this one does).
  var ledgerWriterSaid: String?
  /// The last database problem logged, so an outage is one line, not one per tick.
  var databaseProblem: String?
  /// Set when the last disconnect's action left the link up: during the pause the next up goes
  /// straight to link-down rather than waiting for the action to fail again.
  var actionFailed = false
  /// The data cap against its period's traffic as last read: the buckets this enforcer's own
  /// samples keep current. Kept when the database does not answer.
  public private(set) var dataCap: DataCapStatus?
  /// Runs the managers' programs when a hold is given back.
  let runner: any ProgramRunner
  /// Where what the database refuses is kept until it takes it (nil: only in memory).
  let spool: EnforcerSpool?
  /// The pending stops, and whether the pending window, already in the spool.
  var spooledStops: Set<StopRecord> = []
  var windowSpooled = false
  /// Set while the spool may hold records this enforcer put there or read from it.
  var spoolUsed = false
  /// The last spool problem logged, said once.
  var spoolProblem: String?
  /// Where this enforcer says it runs (nil: it says nothing, as in most tests).
  let presenceFile: EnforcerPresenceFile?
  var presence: EnforcerPresence?
  /// What is held of the tunnel's manager for the pause (NetworkManager's autoconnect), given
  /// back when connecting is allowed again or the enforcer stops.
  public private(set) var holds: [ManagerHold] = []

  /// One device under the limit.
  public struct Device: Equatable, Sendable {
    public var name: InterfaceName
    public var up: Bool
  }

  /// A window opened here that the database has not taken yet.
  struct PendingWindow {
    var window: SessionWindow
    var tunnel: InterfaceName
    var usageBase: TrafficCounts
  }

  public init(
    tunnel: InterfaceName, store: Store?, openStore: @escaping () throws -> Store? = { nil }, sampler: TrafficSampler,
    lengths: SessionLengths, action: (any DisconnectAction)?, links: any LinkTable, alarm: any DeadlineAlarm,
    log: any EventLog, calendar: any LocalCalendar, runner: any ProgramRunner = ChildProgramRunner(),
    presence: EnforcerPresenceFile? = nil, saveInterval: Duration = Recorder.defaultSaveInterval,
    ledgerLock: any LedgerWriterLock = UncontendedLedgerLock(), spool: EnforcerSpool? = nil
  ) {
    self.tunnel = tunnel
    self.store = store
    self.saveInterval = saveInterval
    self.ledgerLock = ledgerLock
    self.keeper = store.map { LedgerKeeper(store: $0, saveInterval: saveInterval, role: .enforcer, lock: ledgerLock) }
    self.openStore = openStore
    self.sampler = sampler
    self.lengths = lengths
    self.links = links
    self.action = action ?? LinkDownAction(links: links)
    self.alarm = alarm
    self.log = log
    self.calendar = calendar
    self.runner = runner
    self.presenceFile = presence
    self.spool = spool
  }

  /// Takes one event. Throws only what the kernel refuses (the alarm, a link query); the
  /// database never makes it throw.
  public mutating func handle(_ event: Event) throws {
    if case .started = event {
      lastSuspended = clock.now().suspended
      try start()
      try releaseHolds()
      return
    }
    try noteSleep()
    switch event {
    case .started: break
    case .link(let change): try handle(change)
    case .notificationsLost: try resynchronise()
    case .alarm: try check()
    case .tick:
      if store == nil { reopen() }
      flush()
      refresh()
      advanceLedger()
      try check()
      try checkDataCap()
    case .stop:
      try stop()
      return
    }
    try releaseHolds()
  }

  private mutating func start() throws {
    refresh()
    // What an earlier enforcer could not write comes first: a window it opened decides this up.
    if store != nil { takeSpool() }
    advanceLedger()
    announce()
    log.event("enforcing the free plan on \(tunnel.terminalText) (\(action.label)); \(describe())")
    if let link = try links.link(named: tunnel) {
      guard mayFollow(link) else { return }
      devices[link.index] = Device(name: link.name, up: Self.isUp(link))
      if Self.isUp(link) { try tunnelCameUp(link.index) }
    } else {
      log.event("\(tunnel.terminalText) does not exist (yet): waiting for it to appear")
    }
  }

  /// Says where everyone can see it that this enforcer holds the tunnel, and takes over what a
  /// predecessor that died (kill -9, a crash) still held of the manager.
  private mutating func announce() {
    guard let presenceFile else { return }
    if let previous = presenceFile.read(), !previous.holds.isEmpty, previous.pid != ProcessTable.currentID {
      holds = previous.holds
      log.event("taking over what the previous enforcer (pid \(previous.pid)) held: \(describe(holds))")
    }
    presence = EnforcerPresence(
      pid: ProcessTable.currentID, startTime: ProcessTable.startTime(of: ProcessTable.currentID),
      since: clock.now().wall, action: action.label, tunnel: tunnel, holds: holds)
    writePresence()
  }

  private mutating func writePresence() {
    guard let presenceFile, var current = presence else { return }
    current.holds = holds
    presence = current
    do {
      try presenceFile.write(current)
    } catch {
      log.event("cannot say that this enforcer runs (\(error)): `vpnstat session` will not show it")
    }
  }

  // MARK: - Events

  private mutating func handle(_ change: LinkNotifications.Change) throws {
    let index = change.record.index
    let followed = devices[index]
    let bearsName =
      change.record.name == tunnel && (change.deleted ? !refused.contains(index) : mayFollow(change.record))
    guard followed != nil || bearsName else {
      if change.deleted { refused.remove(index) }
      sampler.apply(change)
      return
    }
    let observation = sampler.observation(change)
    sampler.apply(change)
    // The decision first; the ledger (a database write) after it.
    defer { if let observation { advanceLedger(notified: [observation], deleted: change.deleted) } }
    let wasUp = followed?.up ?? false
    if change.deleted {
      devices[index] = nil
      if let namespace = change.record.movedToNamespace {
        try escaped(change.record.name, namespace: namespace)
      } else {
        try tunnelWentDown(gone: true, wasUp: wasUp)
      }
      return
    }
    if let followed, followed.name != change.record.name {
      log.event(
        "\(followed.name.terminalText) was renamed \(change.record.name.terminalText): still enforcing on it")
      sampler.recorded.names.insert(change.record.name)
    }
    let up = Self.isUp(change.record)
    devices[index] = Device(name: change.record.name, up: up)
    if up && !wasUp {
      try tunnelCameUp(index)
    } else if !up && wasUp {
      try tunnelWentDown(gone: false, wasUp: true)
    }
  }

  /// Whether a device that bears the tunnel's name may come under the limit: only one of class
  /// `tunnel` (`NotATunnel`: a typo or a look-alike must never take a machine's own links
  /// down). Another is said once and left alone.
  private mutating func mayFollow(_ link: LinkRecord) -> Bool {
    let entry = sampler.catalog.entry(for: link)
    guard let refusal = NotATunnel.check(link.name, entry.interfaceClass, by: entry.evidence) else { return true }
    if !refused.contains(link.index) {
      refused.insert(link.index)
      log.event("\(refusal.name.terminalText) is \(refusal.classified), not a tunnel: not enforcing on it")
    }
    return false
  }

  /// The on-tunnel-up rule, decided on the freshest record that can be read, applied at once.
  private mutating func tunnelCameUp(_ index: Int32) throws {
    refresh()
    let now = trustedNow()
    guard let known = record else {
      // Never read the session: guessing "allowed" would let anyone who can lock the database
      // open the tunnel during the pause, so hold it down until the session can be read.
      log.event(
        "\(tunnel.terminalText) came up but the session window cannot be read (\(databaseProblem ?? "no database")): holding it down"
      )
      try disconnect(reason: .undecided, at: now)
      return
    }
    // A reached data cap refuses whatever the window says, until the period rolls over.
    if dataCapReached(at: now) {
      try disconnect(reason: .dataCap, at: now)
      return
    }
    let (decision, next) = known.tunnelUp(at: now, lengths: lengths)
    switch decision {
    case .unlimited:
      try arm(nil)
    case .opened(let window), .reopened(let window):
      var opened = next
      opened.tunnel = devices[index]?.name ?? tunnel
      opened.usageBase = tunnelTotals
      record = opened
      pendingWindow = PendingWindow(window: window, tunnel: opened.tunnel!, usageBase: tunnelTotals)
      log.event(
        "\(tunnel.terminalText) up: opened a window until \(window.sessionEndsAt.localClockTime(in: calendar, withSeconds: true)) (\(Units.duration(seconds: window.lengths.session.nanoseconds / 1_000_000_000)), then a \(Units.duration(seconds: window.lengths.pause.nanoseconds / 1_000_000_000)) pause)"
      )
      try arm(window.sessionEndsAt)
      flush()
      // Saved with the window, so the stored totals and its usage base agree for every reader.
      advanceLedger(saveNow: true)
    case .resumed(let window):
      log.event(
        "\(tunnel.terminalText) up inside the window: \(Units.duration(seconds: (window.sessionEndsAt - now).nanoseconds / 1_000_000_000)) left"
      )
      try arm(window.sessionEndsAt)
    case .refuse(let window):
      // Up during the pause (raised by anything, also before this enforcer started, as with a
      // PostUp hook): down at once. Exactly at the deadline it is the limit itself.
      try disconnect(reason: window.canConnect(at: now) ? .freeLimit : .pause, at: now)
    }
  }

  private mutating func tunnelWentDown(gone: Bool, wasUp: Bool) throws {
    guard !devices.values.contains(where: \.up) else { return }
    try arm(nil)
    guard wasUp || gone else { return }
    let now = trustedNow()
    // Only the end of a running session is a stop worth recording.
    guard let record, record.plan == .free, let window = record.window, !window.sessionOver(at: now) else { return }
    let reason: StopReason = gone ? .vanished : .user
    pendingStops.append(StopRecord(at: now, interface: tunnel, reason: reason))
    flush()
    log.event(
      "\(tunnel.terminalText) \(gone ? "went away" : "was taken down") by something else: recorded '\(reason.rawValue)'"
    )
  }

  /// A followed device moved to another network namespace: it lives on where this enforcer
  /// cannot see or take it down. Said loudly and recorded, whatever the session's state.
  private mutating func escaped(_ name: InterfaceName, namespace: Int32) throws {
    let now = trustedNow()
    let detail = "\(name.terminalText) was moved to another network namespace (netnsid \(namespace)), out of reach"
    log.event("\(detail): the limit no longer holds for it")
    pendingStops.append(StopRecord(at: now, interface: name, reason: .escaped, detail: detail))
    flush()
    if !devices.values.contains(where: \.up) { try arm(nil) }
  }

  /// The deadline check, on the alarm, the periodic tick, a clock change and a wake from sleep.
  private mutating func check() throws {
    let now = trustedNow()
    let upIndex = devices.sorted { $0.key < $1.key }.first { $0.value.up }?.key
    guard let record else {
      if let upIndex { try tunnelCameUp(upIndex) }
      return
    }
    switch WatchdogDecision.check(record, now: now, linkUp: upIndex != nil, armed: armed) {
    case .wait:
      // The wall clock was set since the alarm was: the same trusted deadline falls elsewhere.
      if let armed, armedWall != wallTime(of: armed) { try arm(armed) }
    case .disarm: try arm(nil)
    case .arm(let deadline): try arm(deadline)
    case .disconnect: try disconnect(reason: .freeLimit, at: now)
    case .tunnelUp: if let upIndex { try tunnelCameUp(upIndex) }
    }
  }

  /// The data cap check, after each sample: a followed device up with the cap reached goes down
  /// as at a session deadline, recorded as `data-cap`.
  private mutating func checkDataCap() throws {
    let now = trustedNow()
    guard devices.values.contains(where: \.up), dataCapReached(at: now) else { return }
    try disconnect(reason: .dataCap, at: now)
  }

  /// Whether the record's data cap is reached at `now`, from the daily buckets and what the
  /// ledger this enforcer keeps booked since its last checkpoint; when the database does not
  /// answer, from the usage last read, while its period lasts.
  private mutating func dataCapReached(at now: Timestamp) -> Bool {
    guard let cap = record?.dataCap else {
      dataCap = nil
      return false
    }
    do {
      // From the ledger it keeps: its buckets are saved only every save interval.
      if let keeper { dataCap = try PeriodUsage.status(of: cap, keeper, at: now) }
    } catch {
      problem(error)
    }
    guard let known = dataCap, now < known.periodEnd else { return false }
    dataCap = cap.status(used: known.used, at: now, in: calendar)
    return dataCap?.reached == true
  }

  private mutating func noteSleep() throws {
    let suspended = clock.now().suspended
    defer { lastSuspended = suspended }
    guard let last = lastSuspended, suspended > last + 500_000_000 else { return }
    log.event(
      "woke from \(Units.duration(seconds: (suspended - last) / 1_000_000_000)) of sleep: checking the deadline")
    lastSuspended = suspended
    try check()
  }

  /// After lost notifications: the kernel's view of the tunnel's name and of every followed device.
  private mutating func resynchronise() throws {
    var fresh: [Int32: Device] = [:]
    for (index, _) in devices {
      if let link = try links.link(index: index) { fresh[index] = Device(name: link.name, up: Self.isUp(link)) }
    }
    if let link = try links.link(named: tunnel), devices[link.index] != nil || mayFollow(link) {
      fresh[link.index] = Device(name: link.name, up: Self.isUp(link))
    }
    let wasUp = devices.values.contains(where: \.up)
    let cameUp = fresh.sorted { $0.key < $1.key }.first { $0.value.up && devices[$0.key]?.up != true }?.key
    let gone = devices.keys.contains { fresh[$0] == nil }
    devices = fresh
    if let cameUp {
      try tunnelCameUp(cameUp)
    } else if wasUp && !fresh.values.contains(where: \.up) {
      try tunnelWentDown(gone: gone, wasUp: true)
    }
  }

  private mutating func stop() throws {
    try arm(nil)
    // Nobody enforces the pause once this enforcer is gone: give the manager back its settings.
    try releaseHolds(all: true)
    presenceFile?.remove()
    advanceLedger(saveNow: true)
    refresh()
    let now = trustedNow()
    if devices.values.contains(where: \.up), let record, record.plan == .free, let window = record.window,
      !window.sessionOver(at: now)
    {
      pendingStops.append(StopRecord(at: now, interface: tunnel, reason: .stopped, detail: "enforcer stopped"))
    }
    flush()
    let kept = pendingStops.count + (pendingWindow == nil ? 0 : 1)
    if kept > 0 {
      let problem = databaseProblem ?? "unknown"
      if let spool, spooledStops.count == pendingStops.count, windowSpooled || pendingWindow == nil {
        log.event(
          "stopping with \(kept) record\(kept == 1 ? "" : "s") the database would not take (\(problem)), kept in \(spool.path): the next enforcer to start writes \(kept == 1 ? "it" : "them")"
        )
      } else {
        log.event(
          "stopping with records the database would not take (\(problem)) and that could not be kept (\(spoolProblem ?? "no spool")): they are lost"
        )
      }
    }
    log.event("stopped enforcing on \(tunnel.terminalText)")
  }

  // MARK: - Actions

  /// Takes every device under the limit down, for `reason`: the action's control (its manager,
  /// chosen now), then the kernel's word and the manager's, then link-down where the control did
  /// not do it. In the pause the manager is held off (NetworkManager's autoconnect) until the
  /// pause ends. Only then is the stop recorded (or kept for later). The one way the enforcer
  /// disconnects, whatever the reason.
  private mutating func disconnect(reason: StopReason, at now: Timestamp) throws {
    try arm(nil)
    var details: [String] = []
    var confirmed = true
    for (index, device) in devices.sorted(by: { $0.key < $1.key }) where device.up {
      // In the pause, an action that already failed once is not given the time to fail again.
      let skipAction = actionFailed && reason != .freeLimit
      var failure: String?
      var control: (any ManagerControl)?
      if !skipAction {
        guard let link = try? links.link(index: index) else {
          devices[index]?.up = false
          continue
        }
        let chosen = action.control(for: link)
        control = chosen
        if case .failed(let why) = chosen.stop(device.name, reason: reason) { failure = why }
      }
      // A manager may take a second to let go (NetworkManager's OpenVPN tells its peer first).
      let timeout: Duration = control?.manager != nil ? .seconds(5) : .seconds(2)
      var down = control != nil && failure == nil && confirmation.deviceDown(index, timeout: timeout)
      if let control, down {
        actionFailed = false
        if control.manager != nil { details.append("stopped through \(control.label)") }
        if !confirmation.managerStopped(control, device.name, index: index, timeout: timeout) {
          let text = "\(control.label): \(device.name.terminalText) is down, but its manager does not say it stopped"
          log.event(text)
          details.append(text)
        }
        if reason == .freeLimit || reason == .pause { hold(control) }
      }
      if !down {
        if let control {
          let text = "\(control.label) left \(device.name.terminalText) up" + (failure.map { " (\($0))" } ?? "")
          log.event(text + "; falling back to link-down")
          details.append(text + "; fell back to link-down")
          actionFailed = true
        }
        _ = DirectLinkControl(links: links).stop(device.name, reason: reason)
        down = confirmation.deviceDown(index, timeout: .seconds(2))
        if !down {
          if details.isEmpty { details.append("link-down") }
          details[details.count - 1] += ", which failed too"
        }
      }
      if down { devices[index]?.up = false }
      confirmed = confirmed && down
    }
    let why: String
    switch reason {
    case .freeLimit: why = "free session over"
    case .undecided: why = "session unknown"
    case .dataCap:
      why =
        "data cap reached (≈ \(Units.bytes(dataCap?.usedBytes ?? 0)) of \(Units.bytes(dataCap?.cap.limitBytes ?? 0)) this \(dataCap?.cap.period.label ?? "period"))"
    default: why = "up during the free plan's pause"
    }
    log.event("\(tunnel.terminalText): \(why): disconnected" + (confirmed ? "" : " — FAILED, the link is still up"))
    let detail = details.isEmpty ? nil : details.joined(separator: "; ")
    pendingStops.append(StopRecord(at: now, interface: tunnel, reason: reason, detail: detail))
    flush()
  }

  /// Holds the manager off for the pause, once per connection, and says so where a successor
  /// finds it.
  private mutating func hold(_ control: any ManagerControl) {
    if let id = control.manager?.id, holds.contains(where: { $0.id == id }) { return }
    guard let held = control.holdForPause() else { return }
    holds.append(held)
    log.event("holding \(describe([held])) off until the pause ends")
    writePresence()
  }

  /// Gives back what is held once the pause is over (or the window was reset, or the plan is
  /// premium) — or, with `all`, now. Until then the alarm waits for the pause's end. (At the
  /// deadline itself connecting counts as allowed, but the pause has only begun.)
  private mutating func releaseHolds(all: Bool = false) throws {
    guard !holds.isEmpty else { return }
    let now = trustedNow()
    let pause = record.flatMap { record -> SessionWindow? in
      guard record.plan == .free, let window = record.window, window.sessionOver(at: now), !window.fullyOver(at: now)
      else { return nil }
      return window
    }
    // Never read the session: keep holding until it can be read.
    if !all, record == nil || pause != nil {
      if armed == nil, let end = pause?.pauseEndsAt { try arm(end) }
      return
    }
    var kept: [ManagerHold] = []
    for held in holds {
      if NetworkManagerControl.release(held, runner: runner) {
        log.event("gave back \(describe([held])) (\(held.restore))")
      } else {
        log.event("could not give back \(describe([held])) (\(held.setting) \(held.restore)): will try again")
        kept.append(held)
      }
    }
    holds = all ? [] : kept
    if armed != nil, !devices.values.contains(where: \.up) { try arm(nil) }
    writePresence()
  }

  private func describe(_ holds: [ManagerHold]) -> String {
    holds.map { "\($0.kind.rawValue) \(TerminalText.sanitize($0.id))'s \($0.setting)" }.joined(separator: ", ")
  }

  /// The kernel's word, then the manager's: the one way a stop is confirmed.
  private var confirmation: StopConfirmation { StopConfirmation(links: links, clock: clock) }

  /// Arms the alarm for `target` (trusted time); nil disarms. A wall clock set back makes
  /// trusted time run ahead of it, so the alarm is set that much earlier.
  private mutating func arm(_ target: Timestamp?) throws {
    armed = target
    armedWall = target.map { wallTime(of: $0) }
    try alarm.arm(at: armedWall)
  }

  /// Where a trusted instant falls on the wall clock now.
  private mutating func wallTime(of instant: Timestamp) -> Timestamp {
    let reading = clock.now()
    return instant - (trustedNow(reading) - reading.wall)
  }

  // MARK: - The database, when it answers

  /// "Now" that never runs behind the last trusted time of this boot, from memory and, when it
  /// was readable, the stored pair.
  private mutating func trustedNow(_ reading: ClockReading? = nil) -> Timestamp {
    let reading = reading ?? clock.now()
    let now = TrustedClock.now(reading, last: trusted)
    trusted = TrustedClock.after(reading, trusted: now)
    return now
  }

  /// Reads the session and the trusted clock; on failure keeps what memory holds (and says so
  /// once). A window opened here and not yet written is kept over the stored record.
  private mutating func refresh() {
    guard let store else { return }
    do {
      let stored = try store.sessionRecord()
      let reading = clock.now()
      let storedNow = try store.trustedNow(reading, writing: false)
      if pendingWindow == nil { record = stored }
      let now = max(TrustedClock.now(reading, last: trusted), storedNow)
      trusted = TrustedClock.after(reading, trusted: now)
      recovered()
    } catch {
      problem(error)
    }
  }

  /// Writes the pending window and stops; what the database refuses goes to the spool too. Once
  /// everything this enforcer spooled is written, the spool is taken in and emptied.
  private mutating func flush() {
    writePending()
    if spoolUsed, store != nil, pendingWindow == nil, pendingStops.isEmpty { takeSpool() }
  }

  /// Writes the pending window and stops. A window is written only if the stored record would
  /// open one too at its opening instant (another process may have reset or opened one since).
  private mutating func writePending() {
    guard pendingWindow != nil || !pendingStops.isEmpty else { return }
    guard let store else {
      keepInSpool()
      return
    }
    var rearm: Timestamp?
    do {
      if let pending = pendingWindow {
        let adopted = try store.updateSession { stored -> SessionRecord in
          let (decision, next) = stored.tunnelUp(at: pending.window.openedAt, lengths: pending.window.lengths)
          switch decision {
          case .opened, .reopened:
            stored = next
            stored.window = pending.window
            stored.tunnel = pending.tunnel
            stored.usageBase = pending.usageBase
          default: break
          }
          return stored
        }
        pendingWindow = nil
        windowSpooled = false
        record = adopted
        if adopted.window != nil, adopted.window != pending.window, adopted.plan == .free {
          log.event("another process changed the session meanwhile; following the stored window")
          rearm = adopted.window?.sessionEndsAt
        }
      }
      while let stop = pendingStops.first {
        try store.recordStop(stop)
        pendingStops.removeFirst()
        spooledStops.remove(stop)
      }
      if let trusted { try? store.storeTrusted(trusted) }
      recovered()
    } catch {
      problem(error)
      keepInSpool()
    }
    if let rearm, devices.values.contains(where: \.up) { try? arm(rearm) }
  }

  /// Puts what is pending and not in the spool yet into it, one synced line each: a stop the
  /// database refused outlives this process.
  private mutating func keepInSpool() {
    guard let spool else { return }
    do {
      if let pending = pendingWindow, !windowSpooled {
        try spool.keep(.window(pending.window, tunnel: pending.tunnel, usageBase: pending.usageBase))
        windowSpooled = true
        spoolUsed = true
      }
      for stop in pendingStops where !spooledStops.contains(stop) {
        try spool.keep(.stop(stop))
        spooledStops.insert(stop)
        spoolUsed = true
      }
    } catch {
      spoolFailed(error)
    }
  }

  /// Takes in what the spool holds — before this enforcer's own pending records, which are
  /// newer — writes it, and takes out of the spool what was read once all of it is written.
  private mutating func takeSpool() {
    guard let spool else { return }
    let read: (records: [SpooledRecord], bytes: [UInt8], unreadable: Int)
    do {
      read = try spool.read()
    } catch {
      spoolFailed(error)
      return
    }
    if read.unreadable > 0 {
      log.event("\(spool.path): \(read.unreadable) line\(read.unreadable == 1 ? "" : "s") that are no record, skipped")
    }
    var stops: [StopRecord] = []
    for record in read.records {
      switch record {
      case .stop(let stop):
        if !stops.contains(stop) && !pendingStops.contains(stop) { stops.append(stop) }
      case .window(let window, let tunnel, let usageBase):
        if pendingWindow == nil {
          pendingWindow = PendingWindow(window: window, tunnel: tunnel, usageBase: usageBase)
          windowSpooled = true
        }
      }
    }
    pendingStops.insert(contentsOf: stops, at: 0)
    spooledStops.formUnion(stops)
    spoolUsed = true
    writePending()
    guard pendingStops.isEmpty, pendingWindow == nil else { return }
    do {
      try spool.remove(read.bytes)
      spoolUsed = false
      if !read.records.isEmpty {
        log.event("wrote what \(spool.path) kept (\(read.records.count) record\(read.records.count == 1 ? "" : "s"))")
      }
    } catch {
      spoolFailed(error)
    }
  }

  private mutating func spoolFailed(_ error: any Error) {
    let text = "\(error)"
    guard text != spoolProblem else { return }
    spoolProblem = text
    log.event("\(text): what the database refuses is kept in memory only")
  }

  /// Advances the tunnel's ledger with notifications (`deleted`: a deleted instance's final
  /// counters, saved at once) or, without them, a sample; saves when due or asked (`saveNow`).
  private mutating func advanceLedger(
    notified: [LedgerObservation] = [], deleted: Bool = false, saveNow: Bool = false
  ) {
    guard var keeper else { return }
    defer {
      tunnelTotals = keeper.ledger.totals(of: .tunnel)
      self.keeper = keeper
    }
    do {
      _ = keeper.book(notified, deleted: deleted)
      if saveNow { keeper.requestSave() }
      if notified.isEmpty || keeper.isDue(at: clock.now()) {
        let step = try keeper.step(&sampler)
        if let problem = step.problem { throw problem }
      }
      if keeper.writer != ledgerWriterSaid {
        if let writer = keeper.writer {
          log.event("\(TerminalText.sanitize(writer)) keeps the ledger: reading it meanwhile")
        } else if ledgerWriterSaid != nil {
          log.event("no recorder keeps the ledger any more: saving \(tunnel.terminalText)'s again")
        }
        ledgerWriterSaid = keeper.writer
      }
    } catch {
      problem(error)
    }
  }

  private mutating func reopen() {
    do {
      store = try openStore()
      if let store {
        keeper = LedgerKeeper(store: store, saveInterval: saveInterval, role: .enforcer, lock: ledgerLock)
        refresh()
        takeSpool()
        recovered()
      }
    } catch {
      problem(error)
    }
  }

  private mutating func problem(_ error: any Error) {
    let text = "\(error)"
    guard text != databaseProblem else { return }
    databaseProblem = text
    log.event("database: \(text) — enforcing from memory; what is not written is kept and retried")
  }

  private mutating func recovered() {
    guard databaseProblem != nil, pendingStops.isEmpty, pendingWindow == nil else { return }
    databaseProblem = nil
    log.event("database: readable and writable again; everything kept was written")
  }

  private func describe() -> String {
    guard let record else { return "session window unknown (\(databaseProblem ?? "no database"))" }
    let cap = record.dataCap.map { "; data cap \(Units.bytes($0.limitBytes)) per \($0.period.label)" } ?? ""
    return describeWindow(record) + cap
  }

  private func describeWindow(_ record: SessionRecord) -> String {
    guard record.plan == .free else { return "plan premium: no session window" }
    guard let window = record.window else { return "no window yet" }
    return
      "window until \(window.sessionEndsAt.localClockTime(in: calendar, withSeconds: true)), pause until \(window.pauseEndsAt.localClockTime(in: calendar, withSeconds: true))"
  }

  static func isUp(_ record: LinkRecord) -> Bool { record.attributes.isAdministrativelyUp }
}
