/// Where the free plan stands at one instant — no window, a session running, its pause, a
/// window and pause both over, or premium — with the data cap's part: the one place these are
/// decided. The enforcer's rules, the notices, the reports, the gate and the status page read it;
/// "when can I connect" is `connectBlock`.
public struct SessionPhase: Hashable, Sendable {
  public enum Stage: Hashable, Sendable {
    /// Free, no window: connecting opens one.
    case none
    /// Free, connected time left: the session ends at the window's `sessionEndsAt`.
    case active(SessionWindow)
    /// Free, the session over (from its deadline on) and its pause running until the window's
    /// `pauseEndsAt`.
    case pause(SessionWindow)
    /// Free, the window and its pause both over: connecting opens a fresh window.
    case over(SessionWindow)
    /// Premium: no window.
    case unlimited
  }

  public var stage: Stage
  /// The data cap against its period's traffic, when there is a cap.
  public var dataCap: DataCapStatus?
  public var at: Timestamp

  /// The phase of a plan and window at `now`.
  public init(plan: Plan, window: SessionWindow?, dataCap: DataCapStatus? = nil, at now: Timestamp) {
    self.dataCap = dataCap
    self.at = now
    guard plan == .free else {
      stage = .unlimited
      return
    }
    guard let window else {
      stage = .none
      return
    }
    stage = window.fullyOver(at: now) ? .over(window) : window.sessionOver(at: now) ? .pause(window) : .active(window)
  }

  /// The phase of a stored session at `now`.
  public init(_ record: SessionRecord, dataCap: DataCapStatus? = nil, at now: Timestamp) {
    self.init(plan: record.plan, window: record.window, dataCap: dataCap, at: now)
  }

  /// The window of `active`, `pause` and `over`.
  public var window: SessionWindow? {
    switch stage {
    case .active(let window), .pause(let window), .over(let window): return window
    case .none, .unlimited: return nil
    }
  }

  /// The window whose session runs now, if any.
  public var running: SessionWindow? {
    guard case .active(let window) = stage else { return nil }
    return window
  }

  /// The window whose pause runs now, if any.
  public var pausing: SessionWindow? {
    guard case .pause(let window) = stage else { return nil }
    return window
  }

  /// Whether the data cap refuses connecting now: reached, in a period that has not ended.
  public var capReached: Bool {
    guard let dataCap else { return false }
    return dataCap.reached && at < dataCap.periodEnd
  }

  /// Why connecting is refused now and until when, as one answer: the later of the pause's end
  /// and the end of the data cap's period (each refuses on its own, so connecting is allowed only
  /// when both are over); nil when connecting is allowed. The pause refuses strictly after the
  /// deadline: at the deadline itself the session has only ended.
  public var connectBlock: ConnectBlock? {
    let pause = pausing.flatMap { $0.canConnect(at: at) ? nil : $0.pauseEndsAt }
    if capReached, let cap = dataCap?.periodEnd, cap >= pause ?? cap {
      return ConnectBlock(reason: .dataCap, until: cap)
    }
    return pause.map { ConnectBlock(reason: .pause, until: $0) }
  }

  public var canConnect: Bool { connectBlock == nil }
}
