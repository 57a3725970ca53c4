import VPNStatModel

/// The session window's rule as the enforcer applies it: what a tunnel that came up gets, what
/// each check of the deadline does, which stop a tunnel taken down by something else leaves, and
/// whether a pause holds the manager off — decided from the session record as last known and the
/// trusted "now", and nothing else. Pure: the enforcer acts on what it says.
struct WindowGuard {
  let lengths: SessionLengths

  /// What a tunnel that came up gets.
  enum Up: Equatable {
    /// The session was never read: held down, undecided. Guessing "allowed" would let anyone who
    /// can lock the database open the tunnel during the pause.
    case unknown
    /// Taken down, for this reason: the data cap reached, the pause, or the deadline itself.
    case disconnect(StopReason)
    /// Premium: no window, nothing to arm.
    case unlimited
    /// A new window opens; `record` is the session with it.
    case open(SessionWindow, record: SessionRecord)
    /// Up inside the window: the same deadline, no extension.
    case resume(SessionWindow)
  }

  /// The on-tunnel-up rule at `now`. A reached data cap refuses whatever the window says, until
  /// the period rolls over; it is asked only of a session that was read.
  func tunnelUp(_ record: SessionRecord?, capReached: @autoclosure () -> Bool, at now: Timestamp) -> Up {
    guard let record else { return .unknown }
    if capReached() { return .disconnect(.dataCap) }
    let (decision, next) = record.tunnelUp(at: now, lengths: lengths)
    switch decision {
    case .unlimited:
      return .unlimited
    case .opened(let window), .reopened(let window):
      return .open(window, record: next)
    case .resumed(let window):
      return .resume(window)
    case .refuse(let window):
      // Up during the pause (raised by anything, also before this enforcer started, as with a
      // PostUp hook): down at once. Exactly at the deadline it is the limit itself.
      return .disconnect(window.canConnect(at: now) ? .freeLimit : .pause)
    }
  }

  /// The deadline check (the alarm, the tick, a clock change, a wake from sleep). A session never
  /// read has no deadline: a device up gets the on-tunnel-up rule, which holds it down.
  func check(_ record: SessionRecord?, at now: Timestamp, linkUp: Bool, armed: Timestamp?) -> WatchdogDecision {
    guard let record else { return linkUp ? .tunnelUp : .wait }
    return WatchdogDecision.check(record, now: now, linkUp: linkUp, armed: armed)
  }

  /// Whether a free session runs at `now`: a window whose deadline has not come. Only the end of
  /// a running session is a stop worth recording.
  func sessionRuns(_ record: SessionRecord?, at now: Timestamp) -> Bool {
    guard let record else { return false }
    return SessionPhase(record, at: now).running != nil
  }

  /// The stop a tunnel leaves when something else took it down (`gone`: its device went away),
  /// or nil when no session ran.
  func stopWhenDown(gone: Bool, _ record: SessionRecord?, at now: Timestamp) -> StopReason? {
    guard sessionRuns(record, at: now) else { return nil }
    let reason: StopReason = gone ? .vanished : .user
    return reason
  }

  /// The window whose pause runs at `now`, if any: while it does, the manager stays held off. At
  /// the deadline itself connecting counts as allowed, but the pause has only begun.
  func pause(_ record: SessionRecord?, at now: Timestamp) -> SessionWindow? {
    record.flatMap { SessionPhase($0, at: now).pausing }
  }
}
