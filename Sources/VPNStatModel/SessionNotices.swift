/// What `vpnstat notify` sees of the session at one moment, all of it read from the database
/// (nothing remembered, nothing from the kernel): the plan and window, the last stop and
/// refusal, the data cap against its period's traffic as the writers booked it.
public struct NoticeObservation: Hashable, Sendable {
  /// The trusted "now" it was read at.
  public var at: Timestamp
  public var plan: Plan
  public var window: SessionWindow?
  public var tunnel: InterfaceName?
  public var lastStop: StopRecord?
  public var lastRefusal: Refusal?
  public var dataCap: DataCapStatus?

  public init(
    at: Timestamp, plan: Plan = .free, window: SessionWindow? = nil, tunnel: InterfaceName? = nil,
    lastStop: StopRecord? = nil, lastRefusal: Refusal? = nil, dataCap: DataCapStatus? = nil
  ) {
    self.at = at
    self.plan = plan
    self.window = window
    self.tunnel = tunnel
    self.lastStop = lastStop
    self.lastRefusal = lastRefusal
    self.dataCap = dataCap
  }

  /// When connecting is allowed again as seen at `now` (`SessionPhase.connectBlock`); nil when
  /// it is allowed now.
  public func nextConnectAllowed(at now: Timestamp) -> Timestamp? {
    SessionPhase(plan: plan, window: window, dataCap: dataCap, at: now).connectBlock?.until
  }
}

/// When `vpnstat notify` speaks: how long before the session's end it warns, and at what share
/// of the data cap.
public struct NoticeSettings: Hashable, Sendable {
  /// How long before the end of a free session to warn, longest first.
  public var warnings: [Duration]
  /// The share of the data cap (percent, 1 to 99) that gets a notice before the cap is reached.
  public var capWarningPercent: Int

  public init(warnings: [Duration], capWarningPercent: Int) {
    self.warnings = Array(Set(warnings.filter { $0 > .zero })).sorted(by: >)
    self.capWarningPercent = capWarningPercent
  }

  /// 10 minutes, 2 minutes and 30 seconds before the end; the cap at 80 %.
  public static let standard = NoticeSettings(
    warnings: [.seconds(600), .seconds(120), .seconds(30)], capWarningPercent: 80)

  /// The cap's shares that get a notice: the warning's, then 100 %.
  public var capThresholds: [Int] { [capWarningPercent, 100] }
}

/// One thing to tell the person at the desktop.
public enum Notice: Hashable, Sendable {
  /// The free session of `window` ends soon.
  case sessionEnding(SessionWindow, tunnel: InterfaceName?)
  /// A session stopped: why (the record), and when the next one may start (nil: now).
  case stopped(StopRecord, nextSessionAt: Timestamp?)
  /// A connection was refused or undone.
  case refused(Refusal)
  /// The data cap's period reached `threshold` percent (100: the cap).
  case dataCap(DataCapStatus, threshold: Int)

  /// Notices of one slot take each other's place on the screen; the session's and the cap's are
  /// two, so a cap notice does not hide why the tunnel stopped.
  public enum Slot: Hashable, Sendable, CaseIterable {
    case session
    case dataCap
  }

  public var slot: Slot {
    if case .dataCap = self { return .dataCap }
    return .session
  }
}

/// What to notify now, and when to look again even if the database does not change.
public struct NoticeDecision: Hashable, Sendable {
  public var notices: [Notice]
  /// The next moment a notice may become due by time alone (a warning); nil: none.
  public var wakeAt: Timestamp?

  public init(notices: [Notice], wakeAt: Timestamp?) {
    self.notices = notices
    self.wakeAt = wakeAt
  }
}

/// The rule of `vpnstat notify`: from what it saw before, what it sees now and the time, what to
/// say. Pure, so every case runs with a manual clock.
///
/// - A warning when the time left in an active free session passes one of the warning times
///   (one notice, for the shortest passed, however many passed since the last look).
/// - The stop, when a new stop record says the free session ended, the data cap was reached, or
///   someone else took the tunnel down, with when the next session may start.
/// - A refusal, when a new one is recorded.
/// - The data cap, when its period's traffic passes the warning share or the cap.
/// - On a first look only what is due by time (warnings, the cap's share), never a stop or a
///   refusal from before the agent ran; nothing about windows for premium.
public enum SessionNotices {
  public static func decide(
    previous: NoticeObservation?, current: NoticeObservation, now: Timestamp, settings: NoticeSettings
  ) -> NoticeDecision {
    var notices: [Notice] = []
    // Warnings: the stage is how many warning times have passed in the window's session.
    if current.plan == .free, let window = current.window {
      let before =
        previous.flatMap { previous in
          previous.plan == .free && previous.window?.sessionEndsAt == window.sessionEndsAt
            ? warningStage(window, at: previous.at, settings) : nil
        } ?? 0
      if warningStage(window, at: now, settings) > before {
        notices.append(.sessionEnding(window, tunnel: current.tunnel))
      }
    }
    if let previous {
      if let stop = current.lastStop, stop != previous.lastStop, stopIsNotified(stop, plan: current.plan) {
        notices.append(.stopped(stop, nextSessionAt: current.nextConnectAllowed(at: now)))
      }
      if let refusal = current.lastRefusal, refusal != previous.lastRefusal,
        current.plan == .free || refusal.reason == .dataCap
      {
        notices.append(.refused(refusal))
      }
    }
    if let cap = current.dataCap {
      let before =
        previous?.dataCap.flatMap { earlier in
          earlier.cap == cap.cap && earlier.periodStart == cap.periodStart ? capStage(earlier, settings) : nil
        } ?? 0
      let stage = capStage(cap, settings)
      if stage > before { notices.append(.dataCap(cap, threshold: settings.capThresholds[stage - 1])) }
    }
    var wakeAt: Timestamp?
    if current.plan == .free, let window = current.window, now < window.sessionEndsAt {
      wakeAt = settings.warnings.map { window.sessionEndsAt - $0 }.filter { $0 > now }.min()
    }
    return NoticeDecision(notices: notices, wakeAt: wakeAt)
  }

  /// How many warning times have passed at `time` while the window's session runs (0 outside).
  static func warningStage(_ window: SessionWindow, at time: Timestamp, _ settings: NoticeSettings) -> Int {
    guard time >= window.openedAt, time < window.sessionEndsAt else { return 0 }
    return settings.warnings.filter { window.sessionEndsAt - $0 <= time }.count
  }

  /// How many of the cap's thresholds its traffic has passed.
  static func capStage(_ status: DataCapStatus, _ settings: NoticeSettings) -> Int {
    if status.reached { return settings.capThresholds.count }
    // Compared in bytes, not a rounded percent: 80 % of 5 MB is 4,000,000 bytes.
    return settings.capThresholds.filter { threshold in
      status.usedBytes.multipliedFullWidth(by: 100) >= status.cap.limitBytes.multipliedFullWidth(by: UInt64(threshold))
    }.count
  }

  /// The stops a person is told of: the free session over, the cap reached, someone else's
  /// stop; for premium only the cap. (A tunnel undone in the pause is told as a refusal.)
  static func stopIsNotified(_ stop: StopRecord, plan: Plan) -> Bool {
    switch stop.reason {
    case .dataCap: true
    case .freeLimit, .user, .vanished: plan == .free
    default: false
    }
  }
}
