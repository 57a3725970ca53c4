import VPNStatKernel
import VPNStatModel
import VPNStatRender
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
/// directly, with a manual clock and a fake kernel. It coordinates parts that each do one job and
/// are tested alone: `FollowedDevices` (which devices are under the limit), `WindowGuard` (the
/// rule), `SessionMemory` (the session and the trusted clock as last known), `EnforcerDatabase`
/// (the store, the ledger, outages, what the database has not taken and the spool, the data cap),
/// `Takedown` (one device down: the link cut first, then its manager's stop, confirmed),
/// `ManagerTable` (who manages each device, learned before it matters), `ManagerHolds` (the
/// manager held off for the pause, the presence file), `SleepDetector` and `TrustedAlarm`.
package struct Enforcer {
  /// What can happen to an enforcer.
  package enum Event: Sendable {
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
    /// A process a tunnel's manager was found through exited (one of `exitNotices` is readable).
    case managerExited
  }

  /// One device under the limit.
  package struct Device: Equatable, Sendable {
    package var name: InterfaceName
    package var up: Bool
  }

  /// The name given on the command line: any device that bears it is under the limit.
  package let tunnel: InterfaceName
  let environment: EnforcerEnvironment
  var sampler: TrafficSampler
  let rules: WindowGuard
  var followed: FollowedDevices
  var session = SessionMemory()
  var database: EnforcerDatabase
  var takedown: Takedown
  var managers: ManagerTable
  var managerHolds: ManagerHolds
  /// The stop this enforcer made last, while no device came up since: a device that then goes
  /// away (a manager's stop deletes it after the cut) or down is that stop's doing, already
  /// recorded with its reason — never "something else".
  var ownStop: StopReason?
  var deadline: TrustedAlarm
  var sleep = SleepDetector()
  /// Who tells the enforcer that the database was written (nil: nobody, so it reads every time).
  let databaseChanges: (any DatabaseChanges)?
  /// The session held may be older than the database's: read it before the next decision.
  var sessionStale = true
  /// An up in the pause, answered before it comes (nil: decided when it comes).
  private(set) var reflex: TakedownReflex?
  /// The devices the reflex cut, and what the kernel said to each, until the stop they began.
  private var reflexCuts: [(index: Int32, refused: String?)] = []

  /// `action`: how to disconnect (nil: link-down).
  package init(
    tunnel: InterfaceName, action: (any DisconnectAction)?, lengths: SessionLengths, sampler: TrafficSampler,
    storage: EnforcerStorage, environment: EnforcerEnvironment
  ) {
    self.tunnel = tunnel
    self.environment = environment
    self.sampler = sampler
    let log = environment.log
    rules = WindowGuard(lengths: lengths)
    followed = FollowedDevices(
      tunnel: tunnel, log: log,
      catalog: InterfaceCatalog(root: sampler.catalog.root, classifier: sampler.catalog.classifier))
    database = EnforcerDatabase(storage, tunnel: tunnel, calendar: environment.calendar, log: log)
    let action = action ?? LinkDownAction(links: environment.links)
    takedown = Takedown(action: action, links: environment.links, clock: sampler.clock, log: log)
    managers = ManagerTable(action: action, exits: environment.processExits)
    managerHolds = ManagerHolds(
      file: storage.presence, release: environment.holdRelease, process: environment.process, log: log)
    deadline = TrustedAlarm(alarm: environment.alarm)
    databaseChanges = storage.changes
  }

  var clock: any TimeSource { sampler.clock }
  var log: any EventLog { environment.log }
  package var action: any DisconnectAction { takedown.action }
  /// The devices under the limit, by ifindex: the one named `tunnel`, and any of them renamed.
  package var devices: [Int32: Device] { followed.byIndex }
  /// The deadline the alarm is armed for (in trusted time), if any.
  package var armed: Timestamp? { deadline.armed }
  /// The session as last read (or as changed here and not yet written); nil until read once.
  package var record: SessionRecord? { session.record }
  /// The stops the database has not taken yet, in order.
  package var pendingStops: [StopRecord] { database.pending.stops }
  /// The data cap against its period's traffic as last read.
  package var dataCap: DataCapStatus? { database.cap.status }
  /// What is held of the tunnel's manager for the pause, given back when connecting is allowed
  /// again or the enforcer stops.
  package var holds: [ManagerHold] { managerHolds.held }
  /// Descriptors that become readable when a process a manager was found through exits: the
  /// loop waits on them too, and says `.managerExited`.
  package var exitNotices: [FileDescriptor] { managers.exitNotices }
  /// The tunnel-class totals after the last ledger advance: the usage base of a new window.
  var tunnelTotals: TrafficCounts { database.tunnelTotals }

  /// Where the window stands, in the line the service manager shows (`STATUS=`). Reads the
  /// trusted clock without moving it: saying is not deciding.
  package func statusLine() -> String {
    let reading = clock.now()
    let now = TrustedClock.now(reading, last: session.trusted)
    let phase = session.record.map { SessionPhase($0, dataCap: database.cap.status, at: now) }
    return SessionText.supervisorStatus(
      phase, tunnel: tunnel, up: followed.anyUp, calendar: environment.calendar, now: reading.wall)
  }

  /// Takes one event. Throws only what the kernel refuses (the alarm, a link query); the
  /// database never makes it throw.
  package mutating func handle(_ event: Event) throws {
    defer { prepareReflex() }
    if case .started = event {
      sleep.start(clock.now())
      try start()
      try giveBackHolds()
      return
    }
    try noteSleep()
    switch event {
    case .started: break
    case .link(let change): try handle(change)
    case .notificationsLost: try resynchronise()
    case .alarm: try check()
    case .tick:
      if database.store == nil { reopen() }
      flush()
      refresh()
      advanceLedger()
      try check()
      try checkDataCap()
      learnManagers()
    case .managerExited:
      for (index, control) in managers.forgetExited() {
        let name = followed.byIndex[index]?.name ?? tunnel
        log.event("\(control.label), which manages \(name.terminalText), exited: its manager is found again")
      }
      learnManagers()
    case .stop:
      try stop()
      return
    }
    try giveBackHolds()
    // What this event wrote (a window, a stop) or another process wrote meanwhile is read now,
    // after the decision, so the next up finds the session held already current.
    refreshIfChanged()
  }

  private mutating func start() throws {
    // What an earlier enforcer could not write comes first: a window it opened decides this up,
    // written now when the database answers, else held as written (`SpooledSession`'s rule,
    // which the session read after it applies).
    takeSpool()
    refresh()
    advanceLedger()
    managerHolds.announce(
      tunnel: tunnel, action: action.label, wgQuickDirectories: action.wgQuickDirectories, lengths: rules.lengths,
      since: clock.now().wall)
    log.event("enforcing the free plan on \(tunnel.terminalText) (\(action.label)); \(describe())")
    if let plan = action.wgQuickPlan(for: tunnel) { log.event(plan) }
    if let link = try environment.links.link(named: tunnel) {
      if let transition = followed.start(link) { try follow(transition) }
    } else {
      log.event("\(tunnel.terminalText) does not exist (yet): waiting for it to appear")
    }
  }

  // MARK: - The reflex

  /// The loop's look at a new or changed link, before its notification is parsed: an up of a
  /// followed device while the reflex holds is cut at once (`TakedownReflex`).
  package mutating func reflexively(index: Int32, flags: UInt32) {
    guard let reflex, LinkAttributes(flags: flags).isAdministrativelyUp, reflex.indices.contains(index),
      !reflexCuts.contains(where: { $0.index == index })
    else { return }
    // The freshest record first, as `tunnelCameUp` reads it: after a write, the up is decided
    // when it is handled, on what was written.
    if databaseChanges?.consume() ?? true {
      sessionStale = true
      self.reflex = nil
      return
    }
    guard reflex.holds(at: clock.now().boottime) else { return }
    reflexCuts.append((index, takedown.cut(index)))
  }

  /// After a batch of notifications: a cut the handling did not take up as its stop (the rule,
  /// decided again, let the device stay) is said, and forgotten.
  package mutating func settleReflexCuts() {
    for cut in reflexCuts {
      let device = followed.byIndex[cut.index]?.name.terminalText ?? "ifindex \(cut.index)"
      log.event(
        "\(device) was taken down in the pause on the notification's first bytes, but the session read after it allowed it: bring it up again"
      )
    }
    reflexCuts = []
  }

  private mutating func prepareReflex() {
    reflex = nil
    guard !sessionStale, databaseChanges != nil else { return }
    let reading = clock.now()
    let now = TrustedClock.now(reading, last: session.trusted)
    // The cap as last read: reading its usage after every event is not for a reflex (a cap
    // reached since stops the up all the same, recorded as the cap's when it is handled).
    reflex = TakedownReflex.prepared(
      rules, session.record, capReached: database.cap.status?.reached == true, devices: followed.byIndex.keys,
      reading: reading, now: now)
  }

  // MARK: - Events

  private mutating func handle(_ change: LinkNotifications.Change) throws {
    guard followed.concerns(change) else {
      sampler.apply(change)
      return
    }
    let observation = sampler.observation(change)
    sampler.apply(change)
    // The decision first; the ledger (a database write) after it.
    defer { if let observation { advanceLedger(notified: [observation], deleted: change.deleted) } }
    let (transition, renamed) = followed.apply(change)
    if renamed { sampler.recorded.names.insert(change.record.name) }
    // What was learned of this device no longer holds: a new device gets a new ifindex.
    if change.deleted || renamed { managers.forget(change.record.index) }
    if let transition { try follow(transition) }
  }

  private mutating func follow(_ transition: FollowedDevices.Transition) throws {
    switch transition {
    case .cameUp(let index): try tunnelCameUp(index)
    case .wentDown(let gone, let wasUp): try tunnelWentDown(gone: gone, wasUp: wasUp)
    case .escaped(let name, let namespace): try escaped(name, namespace: namespace)
    }
  }

  /// The on-tunnel-up rule, decided on the freshest record that can be read, applied at once.
  private mutating func tunnelCameUp(_ index: Int32) throws {
    ownStop = nil
    refreshIfChanged()
    let now = trustedNow()
    switch rules.tunnelUp(session.record, capReached: capReached(at: now), at: now) {
    case .unknown:
      log.event(
        "\(tunnel.terminalText) came up but the session window cannot be read (\(database.problem ?? "no database")): holding it down"
      )
      try disconnect(reason: .undecided, at: now)
    case .disconnect(let reason):
      try disconnect(reason: reason, at: now)
    case .unlimited:
      try arm(nil)
      learnManagers()
    case .open(let window, var opened):
      let device = followed.byIndex[index]?.name ?? tunnel
      opened.tunnel = device
      opened.usageBase = tunnelTotals
      session.adopt(opened)
      database.open(PendingWrites.Window(window: window, tunnel: device, usageBase: tunnelTotals))
      log.event(
        LoggedEvent(
          "\(tunnel.terminalText) up: opened a window until \(clockTime(window.sessionEndsAt)) (\(Self.duration(window.lengths.session)), then a \(Self.duration(window.lengths.pause)) pause)",
          kind: .windowOpened, interface: device, until: window.sessionEndsAt))
      try arm(window.sessionEndsAt)
      flush()
      // Saved with the window, so the stored totals and its usage base agree for every reader.
      advanceLedger(saveNow: true)
      learnManagers()
    case .resume(let window):
      log.event("\(tunnel.terminalText) up inside the window: \(Self.duration(window.sessionEndsAt - now)) left")
      try arm(window.sessionEndsAt)
      learnManagers()
    }
  }

  private mutating func tunnelWentDown(gone: Bool, wasUp: Bool) throws {
    guard !followed.anyUp else { return }
    try arm(nil)
    guard wasUp || gone else { return }
    if let ownStop {
      log.event(
        "\(tunnel.terminalText) \(gone ? "went away" : "went down") after this enforcer's stop (\(ownStop.rawValue))")
      return
    }
    let now = trustedNow()
    guard let reason = rules.stopWhenDown(gone: gone, session.record, at: now) else { return }
    database.add(StopRecord(at: now, interface: tunnel, reason: reason))
    flush()
    log.event(
      LoggedEvent(
        "\(tunnel.terminalText) \(gone ? "went away" : "was taken down") by something else: recorded '\(reason.rawValue)'",
        kind: .stoppedElsewhere, interface: tunnel, reason: reason.rawValue))
  }

  /// A followed device moved to another network namespace: it lives on where this enforcer
  /// cannot see or take it down. Said loudly and recorded, whatever the session's state.
  private mutating func escaped(_ name: InterfaceName, namespace: Int32) throws {
    let now = trustedNow()
    let detail = "\(name.terminalText) was moved to another network namespace (netnsid \(namespace)), out of reach"
    log.event(
      LoggedEvent(
        "\(detail): the limit no longer holds for it", kind: .escaped, interface: name,
        reason: StopReason.escaped.rawValue))
    database.add(StopRecord(at: now, interface: name, reason: .escaped, detail: detail))
    flush()
    if !followed.anyUp { try arm(nil) }
  }

  /// The deadline check, on the alarm, the periodic tick, a clock change and a wake from sleep.
  private mutating func check() throws {
    let now = trustedNow()
    let upIndex = followed.up.first?.index
    switch rules.check(session.record, at: now, linkUp: upIndex != nil, armed: deadline.armed) {
    case .wait:
      // The wall clock was set since the alarm was: the same trusted deadline falls elsewhere.
      if let armed = deadline.armed, deadline.moved(wallTime(of: armed)) { try arm(armed) }
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
    guard followed.anyUp, capReached(at: now) else { return }
    try disconnect(reason: .dataCap, at: now)
  }

  private mutating func capReached(at now: Timestamp) -> Bool {
    database.capReached(session.record?.dataCap, at: now)
  }

  private mutating func noteSleep() throws {
    guard let slept = sleep.slept(clock.now()) else { return }
    log.event("woke from \(Units.duration(seconds: slept / 1_000_000_000)) of sleep: checking the deadline")
    try check()
  }

  /// After lost notifications: the kernel's view of the tunnel's name and of every followed device.
  private mutating func resynchronise() throws {
    if let transition = try followed.resynchronise(environment.links) {
      try follow(transition)
    }
  }

  private mutating func stop() throws {
    try arm(nil)
    // Nobody enforces the pause once this enforcer is gone: give the manager back its settings.
    try giveBackHolds(all: true)
    managers.forgetAll()
    managerHolds.withdraw()
    advanceLedger(saveNow: true)
    refresh()
    let now = trustedNow()
    if followed.anyUp, rules.sessionRuns(session.record, at: now) {
      database.add(StopRecord(at: now, interface: tunnel, reason: .stopped, detail: "enforcer stopped"))
    }
    flush()
    if let left = database.leftAtStop() { log.event(left) }
    log.event("stopped enforcing on \(tunnel.terminalText)")
  }

  // MARK: - Actions

  /// Takes every device under the limit down, for `reason` (`Takedown`): each link cut first,
  /// one request each and nothing asked of anyone before; then the kernel's word, the manager's
  /// own stop and its word. At the deadline and in the pause the manager is held off
  /// (NetworkManager's autoconnect) until the pause ends. Only then is the stop recorded (or kept
  /// for later). The one way the enforcer disconnects, whatever the reason.
  private mutating func disconnect(reason: StopReason, at now: Timestamp) throws {
    let up = followed.up
    // Each link cut once: by the reflex, already, or now.
    let refusals = up.map { device in
      reflexCuts.first { $0.index == device.index }.map(\.refused) ?? takedown.cut(device.index)
    }
    reflexCuts.removeAll { cut in up.contains { $0.index == cut.index } }
    try arm(nil)
    var details: [String] = []
    var confirmed = true
    for ((index, device), refused) in zip(up, refusals) {
      switch takedown.finish(index, device, refused: refused, reason: reason, managers: &managers, details: &details)
      {
      case .vanished:
        followed.markDown(index)
      case .down(let control):
        if let control, reason == .freeLimit || reason == .pause { managerHolds.hold(control) }
        followed.markDown(index)
      case .stillUp:
        confirmed = false
      }
    }
    log.event(
      LoggedEvent(
        "\(tunnel.terminalText): \(why(reason)): disconnected" + (confirmed ? "" : " — FAILED, the link is still up"),
        kind: confirmed ? Self.kind(of: reason) : .stopFailed, interface: tunnel, reason: reason.rawValue,
        until: connectRefusedUntil(at: now, after: reason)))
    let detail = details.isEmpty ? nil : details.joined(separator: "; ")
    if confirmed { ownStop = reason }
    database.add(StopRecord(at: now, interface: tunnel, reason: reason, detail: detail))
    flush()
  }

  private static func kind(of reason: StopReason) -> EventKind {
    switch reason {
    case .freeLimit: .sessionEnded
    case .dataCap: .dataCapReached
    default: .connectRefused
    }
  }

  /// Until when connecting is refused after a stop for `reason` at `now`, as the session held
  /// says (nil: it is not). At the deadline itself the pause has only begun.
  private func connectRefusedUntil(at now: Timestamp, after reason: StopReason) -> Timestamp? {
    guard let record = session.record else { return nil }
    let phase = SessionPhase(record, dataCap: database.cap.status, at: now)
    return phase.connectBlock?.until ?? (reason == .freeLimit ? phase.window?.pauseEndsAt : nil)
  }

  private func why(_ reason: StopReason) -> String {
    switch reason {
    case .freeLimit: "free session over"
    case .undecided: "session unknown"
    case .dataCap: database.cap.reachedText
    default: "up during the free plan's pause"
    }
  }

  /// Gives back what is held once the pause is over (or the window was reset, or the plan is
  /// premium) — or, with `all`, now. Until then the alarm waits for the pause's end. A session
  /// never read keeps it held until it can be read.
  private mutating func giveBackHolds(all: Bool = false) throws {
    guard !managerHolds.held.isEmpty else { return }
    let now = trustedNow()
    let pause = rules.pause(session.record, at: now)
    if !all, session.record == nil || pause != nil {
      if deadline.armed == nil, let end = pause?.pauseEndsAt { try arm(end) }
      return
    }
    managerHolds.giveBack(all: all)
    if deadline.armed != nil, !followed.anyUp { try arm(nil) }
  }

  /// Learns who manages each device up under the limit (`ManagerTable.wantsLook`: not known yet,
  /// or known from before the last look ahead of the deadline), unless the deadline is too close
  /// for the walk and the managers' answers to be sure not to delay it.
  private mutating func learnManagers() {
    let remaining = deadline.armed.map { $0 - trustedNow() }
    if let remaining, remaining < ManagerTable.learningMargin { return }
    let now = clock.now().monotonic
    for (index, _) in followed.up where managers.wantsLook(index, untilDeadline: remaining, monotonic: now) {
      guard let link = try? environment.links.link(index: index) else { continue }
      managers.learn(link, monotonic: now)
    }
  }

  /// Arms the alarm for `target` (trusted time); nil disarms.
  private mutating func arm(_ target: Timestamp?) throws {
    let wall = target.map { wallTime(of: $0) }
    try deadline.arm(target, wall: wall)
  }

  /// Where a trusted instant falls on the wall clock now.
  private mutating func wallTime(of instant: Timestamp) -> Timestamp {
    let reading = clock.now()
    return TrustedAlarm.wall(of: instant, trustedNow: trustedNow(reading), wallNow: reading.wall)
  }

  // MARK: - The database, when it answers

  private mutating func trustedNow(_ reading: ClockReading? = nil) -> Timestamp {
    session.now(reading ?? clock.now())
  }

  /// Reads the session and the trusted clock; on failure keeps what memory holds (and says so
  /// once) and returns false. A window opened here and not yet written is kept over the stored
  /// record.
  @discardableResult
  private mutating func refresh() -> Bool {
    guard let store = database.store ?? database.view else { return false }
    do {
      try session.refresh(from: store, clock: clock, pending: database.pending.window)
      recovered()
      return true
    } catch {
      database.failed(error)
      return false
    }
  }

  /// Reads the session again only when the database may have changed since it was last read
  /// (`DatabaseChanges`): an up in the pause is then decided on what is held, with no read in the
  /// path, yet never on a record another process changed (`vpnstat plan premium`, a reset). A
  /// change that could not be read stays pending until it is.
  private mutating func refreshIfChanged() {
    if databaseChanges?.consume() ?? true { sessionStale = true }
    if sessionStale, refresh() { sessionStale = false }
  }

  /// Writes what is pending (`PendingWrites`: the spool keeps what the database refuses).
  private mutating func flush() {
    adopt(database.flush(trusted: session.trusted))
  }

  /// Takes in what the spool holds, and writes it when the database answers; until then it is
  /// pending, and a window found there is the session held (`refresh`).
  private mutating func takeSpool() {
    adopt(database.takeSpool(trusted: session.trusted))
  }

  /// What the database holds after a write of a window: followed, and its deadline armed when
  /// another process changed it meanwhile.
  private mutating func adopt(_ written: PendingWrites.Written) {
    if let record = written.adopted { session.adopt(record) }
    if let rearm = written.rearm, followed.anyUp { try? arm(rearm) }
  }

  private mutating func advanceLedger(
    notified: [LedgerObservation] = [], deleted: Bool = false, saveNow: Bool = false
  ) {
    database.advanceLedger(&sampler, notified: notified, deleted: deleted, saveNow: saveNow)
  }

  private mutating func reopen() {
    guard database.reopen() else { return }
    refresh()
    takeSpool()
    recovered()
  }

  private mutating func recovered() {
    database.recovered()
  }

  private func describe() -> String {
    guard let record = session.record else {
      return "session window unknown (\(database.problem ?? "no database"))"
    }
    let cap =
      record.dataCap.map {
        "; data cap \(DataCapText.limit($0.limitBytes, options: DisplayOptions(calendar: environment.calendar))) per \($0.period.label)"
      } ?? ""
    guard record.plan == .free else { return "plan premium: no session window" + cap }
    guard let window = record.window else { return "no window yet" + cap }
    return "window until \(clockTime(window.sessionEndsAt)), pause until \(clockTime(window.pauseEndsAt))" + cap
  }

  /// A length as the log says it, to the second (down).
  private static func duration(_ length: Duration) -> String {
    Units.duration(seconds: length.nanoseconds / 1_000_000_000)
  }

  private func clockTime(_ instant: Timestamp) -> String {
    instant.localTime(near: clock.now().wall, in: environment.calendar)
  }
}
