/// The state a person sees.
public enum SessionState: String, Hashable, Sendable, CaseIterable {
  /// No window yet (or the last one and its pause are over): connecting opens one (when an
  /// enforcer runs).
  case none
  /// Connected time left in the window.
  case active
  /// The session is over and the tunnel is down: time until reconnecting is allowed.
  case paused
  /// The session is over but the tunnel is still up: a disconnect is pending (when an enforcer
  /// runs).
  case expired
  /// Premium: no limit.
  case unlimited
}

/// Why connecting is refused, and until when (nil: not known).
public struct ConnectBlock: Hashable, Sendable {
  public var reason: Refusal.Reason
  public var until: Timestamp?

  public init(reason: Refusal.Reason, until: Timestamp?) {
    self.reason = reason
    self.until = until
  }
}

/// The session window as reports show it, computed from the stored record at one trusted "now".
/// Read from the store on every refresh, never remembered: another process (the enforcer)
/// changes it.
public struct SessionReport: Hashable, Sendable {
  public var plan: Plan
  public var state: SessionState
  /// The stored session's phase at `now`, with the data cap's part: what connecting may do.
  public var phase: SessionPhase
  public var canConnect: Bool { phase.canConnect }
  public var now: Timestamp
  /// The current window, when there is one that is not fully over.
  public var window: SessionWindow?
  /// The lengths the next window will have: the running enforcer's (`nextLengths(given:…)`).
  public var nextLengths: SessionLengths
  /// Tunnel-class traffic since the window opened (an estimate); nil without a window.
  public var usage: TrafficCounts?
  public var tunnel: InterfaceName?
  public var lastStop: StopRecord?
  /// The last connection refused or undone because connecting was not allowed, as recorded.
  public var lastRefusal: Refusal?
  /// The data cap against its current period's traffic, when there is a cap.
  public var dataCap: DataCapStatus?
  /// The enforcer that holds the tunnel now; nil when none runs (then nothing disconnects at
  /// the deadline, and connecting opens no window).
  public var enforcer: EnforcerPresence?
  /// Who manages the session's tunnel now, when it exists and was looked up.
  public var manager: TunnelManager?

  /// Session time left (active only).
  public var remaining: Duration? {
    guard state == .active, let window else { return nil }
    return window.sessionEndsAt - now
  }

  /// Time until connecting is allowed again (paused or expired).
  public var pauseRemaining: Duration? {
    guard state == .paused || state == .expired, let window, now < window.pauseEndsAt else { return nil }
    return window.pauseEndsAt - now
  }

  /// Why connecting is refused now and until when (`SessionPhase.connectBlock`); nil when
  /// connecting is allowed.
  public var connectBlock: ConnectBlock? { phase.connectBlock }

  /// The lengths the next window will be opened with. Only an enforcer opens windows, so while
  /// one runs they are its own: the lengths it says it uses, else (an enforcer from before it
  /// said so) those of the window it opened on its tunnel. With no enforcer running they are
  /// `given` (the reader's options, configuration file or built-in lengths): what an enforcer
  /// started with the same configuration would use.
  public static func nextLengths(given: SessionLengths, record: SessionRecord, enforcer: EnforcerPresence?)
    -> SessionLengths
  {
    guard let enforcer else { return given }
    if let lengths = enforcer.lengths { return lengths }
    if let window = record.window, record.tunnel == enforcer.tunnel { return window.lengths }
    return given
  }

  /// The report of `record` at `now`. `tunnelUp` tells an expired session (tunnel still up) from
  /// a paused one; `tunnelTotals` are the current tunnel-class ledger totals, for the usage;
  /// `dataCap` is the record's cap against its period's traffic. A reached cap refuses
  /// connecting, whatever the window says.
  public static func make(
    _ record: SessionRecord, now: Timestamp, tunnelUp: Bool, nextLengths: SessionLengths,
    tunnelTotals: TrafficCounts?, lastStop: StopRecord?, enforcer: EnforcerPresence? = nil,
    dataCap: DataCapStatus? = nil, lastRefusal: Refusal? = nil
  ) -> SessionReport {
    let phase = SessionPhase(record, dataCap: dataCap, at: now)
    var report = SessionReport(
      plan: record.plan, state: .none, phase: phase, now: now, window: nil,
      nextLengths: Self.nextLengths(given: nextLengths, record: record, enforcer: enforcer), usage: nil,
      tunnel: record.tunnel, lastStop: lastStop, lastRefusal: lastRefusal, dataCap: dataCap,
      enforcer: enforcer)
    switch phase.stage {
    case .unlimited:
      report.state = .unlimited
      return report
    case .none:
      return report
    case .over(let window):
      // Window and pause over: a tunnel still up is past its deadline all the same.
      report.state = tunnelUp ? .expired : .none
      if tunnelUp { report.window = window }
    case .pause(let window):
      report.window = window
      report.state = tunnelUp ? .expired : .paused
    case .active(let window):
      report.window = window
      report.state = .active
    }
    if report.window != nil, let totals = tunnelTotals {
      report.usage = totals - record.usageBase
    }
    return report
  }
}
