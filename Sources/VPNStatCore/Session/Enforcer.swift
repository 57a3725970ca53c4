#if canImport(Glibc)
  import Glibc
#endif

/// `vpnstat enforce IFACE`: the watchdog for one tunnel, living as long as the tunnel's limit must
/// hold — the Linux form of the iOS tunnel extension that owns the timer. It applies the
/// on-tunnel-up rule whenever the tunnel appears or comes up (whoever raised it), disconnects at
/// the wall-clock deadline, takes the tunnel down at once during the pause, and records why every
/// session ended. It also advances the ledger for the tunnel, so the window's usage is live.
public struct Enforcer {
  public let tunnel: InterfaceName
  let store: Store
  var sampler: TrafficSampler
  let lengths: SessionLengths
  let action: any DisconnectAction
  let control: LinkControl
  let log: any RecorderLog
  /// The safety net: the deadline is also checked (and the ledger advanced) this often.
  let checkInterval: Duration

  /// What the enforcer believes about the link, from the kernel.
  var linkIndex: Int32?
  var linkUp = false
  /// The deadline the wall-clock timer is armed for (in trusted time), if any.
  var armed: Timestamp?
  /// Set while a disconnect of ours is in flight, so its link-down is not recorded as the user's.
  var disconnecting = false
  /// CLOCK_BOOTTIME − CLOCK_MONOTONIC at the last wake: when it grows, the machine slept.
  var lastSuspended: Int64 = 0
  let deadline: WallClockDeadline

  public init(
    tunnel: InterfaceName, store: Store, sampler: TrafficSampler, lengths: SessionLengths,
    action: (any DisconnectAction)?, control: LinkControl, log: any RecorderLog,
    checkInterval: Duration = .seconds(5)
  ) throws {
    self.tunnel = tunnel
    self.store = store
    self.sampler = sampler
    self.lengths = lengths
    self.control = control
    self.action = action ?? LinkDownAction(control: control)
    self.log = log
    self.checkInterval = checkInterval
    self.deadline = try WallClockDeadline()
  }

  public mutating func run() throws {
    let signals = try SignalChannel([SIGINT, SIGTERM, SIGHUP])
    // Subscribe before looking, so a change between the look and the subscription is not lost.
    let notifications = try LinkNotifications()
    let ticks = try IntervalTimer(interval: checkInterval)
    lastSuspended = sampler.clock.now().suspended
    try advanceLedger()
    if let link = try control.link(named: tunnel) {
      linkIndex = link.index
      linkUp = Self.isUp(link)
      if linkUp { try tunnelCameUp() }
    }
    log.event(
      "enforcing the free plan on \(tunnel.terminalText) (\(action.label)); \(describe(try store.sessionRecord()))")
    while true {
      let ready = try waitForReadable(
        [signals.descriptor, notifications.descriptor, deadline.descriptor, ticks.descriptor], timeout: nil)
      if ready.contains(signals.descriptor), !signals.received().isEmpty {
        try stop()
        return
      }
      noteSleep()
      if ready.contains(notifications.descriptor) {
        let (changes, overflowed) = notifications.drain()
        for change in changes where change.record.name == tunnel { try handle(change) }
        if overflowed { try resynchronise() }
      }
      if ready.contains(deadline.descriptor) {
        switch deadline.consume() {
        case .expired, .clockChanged: try check()
        case .none: break
        }
      }
      if ready.contains(ticks.descriptor), ticks.acknowledge() > 0 {
        try advanceLedger()
        try check()
      }
    }
  }

  // MARK: - Events

  private mutating func handle(_ change: LinkNotifications.Change) throws {
    if let observation = sampler.observation(change) {
      _ = try store.advanceLedger([observation], now: sampler.clock.now().wall)
    }
    sampler.apply(change)
    if change.deleted {
      guard linkIndex == nil || linkIndex == change.record.index else { return }
      let wasUp = linkUp
      linkIndex = nil
      linkUp = false
      try tunnelWentDown(gone: true, wasUp: wasUp)
      return
    }
    let up = Self.isUp(change.record)
    let newInstance = linkIndex != change.record.index
    linkIndex = change.record.index
    if up && (!linkUp || newInstance) {
      linkUp = true
      try tunnelCameUp()
    } else if !up && linkUp {
      linkUp = false
      try tunnelWentDown(gone: false, wasUp: true)
    }
  }

  /// The on-tunnel-up rule, in one transaction with the stored window.
  private mutating func tunnelCameUp() throws {
    let reading = sampler.clock.now()
    try advanceLedger()
    let now = try store.trustedNow(reading)
    let base = try store.tunnelTotals()
    let tunnel = self.tunnel
    let decision = try store.updateSession { record -> TunnelUpDecision in
      let (decision, next) = record.tunnelUp(at: now, lengths: lengths)
      record = next
      switch decision {
      case .opened, .reopened:
        record.tunnel = tunnel
        record.usageBase = base
      default: break
      }
      return decision
    }
    switch decision {
    case .unlimited:
      try arm(nil)
    case .opened(let window), .reopened(let window):
      log.event(
        "\(tunnel.terminalText) up: opened a window until \(window.sessionEndsAt.localClockTime(withSeconds: true)) (\(Units.duration(seconds: window.lengths.session.nanoseconds / 1_000_000_000)), then a \(Units.duration(seconds: window.lengths.pause.nanoseconds / 1_000_000_000)) pause)"
      )
      try arm(window.sessionEndsAt)
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
    try arm(nil)
    if disconnecting {
      disconnecting = false
      return
    }
    guard wasUp || gone else { return }
    let now = try store.trustedNow(sampler.clock.now())
    let record = try store.sessionRecord()
    // Only the end of a running session is a stop worth recording.
    guard record.plan == .free, let window = record.window, !window.sessionOver(at: now) else { return }
    let reason: StopReason = gone ? .vanished : .user
    try store.recordStop(StopRecord(at: now, interface: tunnel, reason: reason))
    log.event(
      "\(tunnel.terminalText) \(gone ? "went away" : "was taken down") by something else: recorded '\(reason.rawValue)'"
    )
  }

  /// The deadline check, on the timer, the periodic tick, a clock change and a wake from sleep.
  private mutating func check() throws {
    let now = try store.trustedNow(sampler.clock.now())
    switch WatchdogDecision.check(try store.sessionRecord(), now: now, linkUp: linkUp, armed: armed) {
    case .wait: break
    case .disarm: try arm(nil)
    case .arm(let deadline): try arm(deadline)
    case .disconnect: try disconnect(reason: .freeLimit, at: now)
    case .tunnelUp: try tunnelCameUp()
    }
  }

  private mutating func noteSleep() {
    let suspended = sampler.clock.now().suspended
    if suspended > lastSuspended + 500_000_000 {
      log.event(
        "woke from \(Units.duration(seconds: (suspended - lastSuspended) / 1_000_000_000)) of sleep: checking the deadline"
      )
      try? check()
    }
    lastSuspended = suspended
  }

  private mutating func resynchronise() throws {
    let link = try control.link(named: tunnel)
    let up = link.map(Self.isUp) ?? false
    let wasUp = linkUp
    let newInstance = link?.index != linkIndex
    linkIndex = link?.index
    linkUp = up
    if up && (!wasUp || newInstance) {
      try tunnelCameUp()
    } else if !up && wasUp {
      try tunnelWentDown(gone: link == nil, wasUp: true)
    }
  }

  private mutating func stop() throws {
    try arm(nil)
    try? advanceLedger()
    let now = try store.trustedNow(sampler.clock.now())
    let record = try store.sessionRecord()
    if linkUp, record.plan == .free, let window = record.window, !window.sessionOver(at: now) {
      try store.recordStop(StopRecord(at: now, interface: tunnel, reason: .stopped, detail: "enforcer stopped"))
    }
    log.event("stopped enforcing on \(tunnel.terminalText)")
  }

  // MARK: - Actions

  /// Records the stop first (the kernel alone cannot say why), runs the action, then believes
  /// only the kernel: if the link is still up, falls back to link-down and records the failure.
  private mutating func disconnect(reason: StopReason, at now: Timestamp) throws {
    try arm(nil)
    disconnecting = true
    let outcome = action.disconnect(tunnel, reason: reason)
    var detail: String?
    if case .failed(let why) = outcome { detail = why }
    var confirmed = waitUntilDown(timeout: .seconds(2))
    if !confirmed {
      let failure = "\(action.label) left \(tunnel.terminalText) up" + (detail.map { " (\($0))" } ?? "")
      log.event(failure + "; falling back to link-down")
      detail = failure + "; fell back to link-down"
      _ = LinkDownAction(control: control).disconnect(tunnel, reason: reason)
      confirmed = waitUntilDown(timeout: .seconds(2))
      if !confirmed { detail! += ", which failed too" }
    }
    try store.recordStop(StopRecord(at: now, interface: tunnel, reason: reason, detail: detail))
    if confirmed { linkUp = false }
    log.event(
      "\(tunnel.terminalText): \(reason == .pause ? "up during the free plan's pause" : "free session over"): disconnected"
        + (confirmed ? "" : " — FAILED, the link is still up"))
  }

  private func waitUntilDown(timeout: Duration) -> Bool {
    let end = SystemTimeSource.read(CLOCK_MONOTONIC) + timeout.nanoseconds
    repeat {
      if let up = try? control.isUp(tunnel), !up { return true }
      usleep(5_000)
    } while SystemTimeSource.read(CLOCK_MONOTONIC) < end
    return false
  }

  /// Arms the wall-clock timer for `target` (trusted time); nil disarms. A wall clock set back
  /// makes trusted time run ahead of it, so the timer is set that much earlier.
  private mutating func arm(_ target: Timestamp?) throws {
    armed = target
    guard let target else {
      try deadline.arm(at: nil)
      return
    }
    let reading = sampler.clock.now()
    let trusted = try store.trustedNow(reading)
    try deadline.arm(at: target - (trusted - reading.wall))
  }

  private mutating func advanceLedger() throws {
    let sample = try sampler.sample()
    _ = try store.advanceLedger(sampler.observations(sample), now: sample.taken.wall)
  }

  private func describe(_ record: SessionRecord) -> String {
    guard record.plan == .free else { return "plan premium: usage only" }
    guard let window = record.window else { return "no window yet" }
    return
      "window until \(window.sessionEndsAt.localClockTime(withSeconds: true)), pause until \(window.pauseEndsAt.localClockTime(withSeconds: true))"
  }

  static func isUp(_ record: LinkRecord) -> Bool { record.attributes.isAdministrativelyUp }
}
