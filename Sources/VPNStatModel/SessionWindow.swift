/// The plan: the free plan has the session limit; premium has none.
public enum Plan: String, Hashable, Sendable, CaseIterable {
  case free
  case premium
}

/// How long a free session lasts and how long the pause after it is.
public struct SessionLengths: Hashable, Sendable {
  public var session: Duration
  public var pause: Duration

  public init(session: Duration, pause: Duration) {
    self.session = session
    self.pause = pause
  }

  /// The lengths vpnstat stores (a window's, the enforcer's in its presence file): positive, at
  /// most a year. Every length the options give (at most 100 days) lies inside, and a stored
  /// instant plus a session and a pause stays within a `Timestamp` (see `Timestamp.storable`).
  public static let storable: ClosedRange<Duration> = .nanoseconds(1)...(.seconds(366 * 86_400))

  /// Stored lengths (nanoseconds), or nil when either lies outside `storable` (damage).
  public init?(storedSession session: Int64, pause: Int64) {
    guard let session = Self.stored(session), let pause = Self.stored(pause) else { return nil }
    self.init(session: session, pause: pause)
  }

  /// One stored length, or nil outside `storable`.
  public static func stored(_ nanoseconds: Int64) -> Duration? {
    storable.contains(.nanoseconds(nanoseconds)) ? .nanoseconds(nanoseconds) : nil
  }

  public static let release = SessionLengths(session: .seconds(15 * 60), pause: .seconds(45 * 60))
  /// Short enough to test by hand, as the iOS app's debug builds do.
  public static let debug = SessionLengths(session: .seconds(120), pause: .seconds(60))

  /// The built-in default: release lengths, or the debug ones in a debug build.
  public static var builtIn: SessionLengths {
    #if DEBUG
      return .debug
    #else
      return .release
    #endif
  }
}

/// The free plan's session window: two wall-clock instants, like the iOS app's `allowedDate` and
/// `nextReconnectDate`. Dates, not a countdown: they survive every restart, and reconnecting
/// inside a window does not extend it.
public struct SessionWindow: Hashable, Sendable {
  public var openedAt: Timestamp
  public var sessionEndsAt: Timestamp
  public var pauseEndsAt: Timestamp
  /// The lengths this window was opened with (later changes apply to the next window).
  public var lengths: SessionLengths

  public init(openedAt: Timestamp, sessionEndsAt: Timestamp, pauseEndsAt: Timestamp, lengths: SessionLengths) {
    self.openedAt = openedAt
    self.sessionEndsAt = sessionEndsAt
    self.pauseEndsAt = pauseEndsAt
    self.lengths = lengths
  }

  /// A stored window, or nil when its instants are out of order — it opens, its session ends,
  /// then its pause ends, as `open` makes every window (damage). Its parts are stored values
  /// already (`Timestamp(stored:)`, `SessionLengths(storedSession:pause:)`).
  public init?(stored openedAt: Timestamp, sessionEndsAt: Timestamp, pauseEndsAt: Timestamp, lengths: SessionLengths) {
    guard openedAt <= sessionEndsAt, sessionEndsAt <= pauseEndsAt else { return nil }
    self.init(openedAt: openedAt, sessionEndsAt: sessionEndsAt, pauseEndsAt: pauseEndsAt, lengths: lengths)
  }

  /// Opens a window at `now`: the session ends after its length, the pause after that.
  public static func open(at now: Timestamp, lengths: SessionLengths) -> SessionWindow {
    let sessionEnds = now + lengths.session
    return SessionWindow(
      openedAt: now, sessionEndsAt: sessionEnds, pauseEndsAt: sessionEnds + lengths.pause, lengths: lengths)
  }

  /// Connecting is refused only strictly between the end of the session and the end of the pause.
  public func canConnect(at now: Timestamp) -> Bool {
    !(sessionEndsAt < now && now < pauseEndsAt)
  }

  /// The session is over (its deadline reached).
  public func sessionOver(at now: Timestamp) -> Bool { now >= sessionEndsAt }

  /// Window and pause are both over: the next connection starts a fresh window.
  public func fullyOver(at now: Timestamp) -> Bool { now >= pauseEndsAt }
}

/// The session as stored: the plan, the window if one is open, and which tunnel opened it.
public struct SessionRecord: Hashable, Sendable {
  public var plan: Plan
  public var window: SessionWindow?
  /// The tunnel an enforcer opened the window for.
  public var tunnel: InterfaceName?
  /// Tunnel-class ledger totals when the window opened: the window's usage is the growth since.
  public var usageBase: TrafficCounts
  /// The data cap, whatever the plan: a second limit, with the window or alone (premium).
  public var dataCap: DataCap?

  public init(
    plan: Plan = .free, window: SessionWindow? = nil, tunnel: InterfaceName? = nil,
    usageBase: TrafficCounts = .zero, dataCap: DataCap? = nil
  ) {
    self.plan = plan
    self.window = window
    self.tunnel = tunnel
    self.usageBase = usageBase
    self.dataCap = dataCap
  }

}

/// What the on-tunnel-up rule decides.
public enum TunnelUpDecision: Hashable, Sendable {
  /// Premium: no window, nothing to enforce.
  case unlimited
  /// No window yet: one was opened; enforce its deadline.
  case opened(SessionWindow)
  /// The old window and its pause are over: reset, and a new one was opened.
  case reopened(SessionWindow)
  /// Inside a window that is still running: enforce its deadline (a reconnect does not extend it).
  case resumed(SessionWindow)
  /// Inside the pause (or at the deadline): disconnect at once.
  case refuse(SessionWindow)
}

extension SessionRecord {
  /// The rule for a tunnel coming up, exactly as the iOS watchdog's `perform()`: no window →
  /// open one; in the pause → disconnect at once; window and pause over → reset and open; else
  /// arm the deadline. Returns the decision and the record to store.
  public func tunnelUp(at now: Timestamp, lengths: SessionLengths) -> (TunnelUpDecision, SessionRecord) {
    var next = self
    switch SessionPhase(self, at: now).stage {
    case .unlimited:
      return (.unlimited, self)
    case .none:
      let opened = SessionWindow.open(at: now, lengths: lengths)
      next.window = opened
      return (.opened(opened), next)
    case .over:
      let opened = SessionWindow.open(at: now, lengths: lengths)
      next.window = opened
      return (.reopened(opened), next)
    case .pause(let window):
      return (.refuse(window), self)
    case .active(let window):
      return (.resumed(window), self)
    }
  }

  /// The record once a window an enforcer opened at `window.openedAt` is written: taken where
  /// this record would open one at that instant (no window, or one whose pause is over), as
  /// `tunnel`'s with `usageBase`; nil where it would not (another process opened, reset or
  /// switched to premium meanwhile), and the record stays. The one rule by which an enforcer
  /// writes a window it could not write at once, and by which every reader of the spool shows it.
  public func adopting(_ window: SessionWindow, tunnel: InterfaceName, usageBase: TrafficCounts) -> SessionRecord? {
    let (decision, next) = tunnelUp(at: window.openedAt, lengths: window.lengths)
    switch decision {
    case .opened, .reopened:
      var adopted = next
      adopted.window = window
      adopted.tunnel = tunnel
      adopted.usageBase = usageBase
      return adopted
    case .unlimited, .resumed, .refuse:
      return nil
    }
  }

  /// Whether a connection may start now.
  public func canConnect(at now: Timestamp) -> Bool {
    guard plan == .free, let window else { return true }
    return window.canConnect(at: now)
  }

  /// Switching plans: premium has no window at all, so a later downgrade starts clean.
  public func switching(to plan: Plan) -> SessionRecord {
    var next = self
    next.plan = plan
    if plan == .premium {
      next.window = nil
      next.tunnel = nil
    }
    return next
  }
}

/// What the enforcer's deadline check decides, from the stored record, the trusted "now" and
/// whether the tunnel is up. Pure, so every rule can be tested with an injected clock.
public enum WatchdogDecision: Hashable, Sendable {
  /// Nothing to do (the tunnel is down, or the armed deadline is right).
  case wait
  /// Premium, or no window to enforce: no deadline.
  case disarm
  /// Arm (or re-arm) the deadline for this instant.
  case arm(Timestamp)
  /// The session is over and the tunnel is up: disconnect now.
  case disconnect
  /// The tunnel is up with no window (reset meanwhile) or after window and pause: the
  /// on-tunnel-up rule applies again.
  case tunnelUp

  public static func check(_ record: SessionRecord, now: Timestamp, linkUp: Bool, armed: Timestamp?) -> WatchdogDecision
  {
    let stage = SessionPhase(record, at: now).stage
    if stage == .unlimited { return armed == nil ? .wait : .disarm }
    guard linkUp else { return .wait }
    switch stage {
    case .unlimited, .none, .over: return .tunnelUp
    case .pause: return .disconnect
    case .active(let window): return armed == window.sessionEndsAt ? .wait : .arm(window.sessionEndsAt)
    }
  }
}
