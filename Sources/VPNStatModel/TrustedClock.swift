/// The last (wall, boottime) pair vpnstat trusted, kept in the store. Within one boot, "now" never
/// runs behind that wall time plus the boottime elapsed since, so setting the clock back cannot
/// extend a window; a clock set forward is simply believed.
public struct TrustedClock: Hashable, Sendable {
  public var wall: Timestamp
  public var boottime: Int64
  public var bootID: String

  public init(wall: Timestamp, boottime: Int64, bootID: String) {
    self.wall = wall
    self.boottime = boottime
    self.bootID = bootID
  }

  /// The trusted "now" for `reading`, given the last trusted pair (if any from this boot). Without
  /// boot ids, uptime that went forward counts as the same boot: after a reboot that assumption
  /// only gives a floor below the true time, which the wall clock then exceeds.
  public static func now(_ reading: ClockReading, last: TrustedClock?) -> Timestamp {
    guard let last, reading.boottime >= last.boottime else { return reading.wall }
    if let lastID = BootIdentity.known(last.bootID), let id = BootIdentity.known(reading.bootID), lastID != id {
      return reading.wall
    }
    let floor = last.wall + .nanoseconds(reading.boottime - last.boottime)
    return max(reading.wall, floor)
  }

  /// The pair to store after trusting `now` at `reading`.
  public static func after(_ reading: ClockReading, trusted now: Timestamp) -> TrustedClock {
    TrustedClock(wall: now, boottime: reading.boottime, bootID: reading.bootID)
  }
}

/// Why a session ended, as recorded: the kernel alone cannot tell a limit disconnect from a
/// person who turned the VPN off.
public enum StopReason: String, Hashable, Sendable, CaseIterable {
  /// The free session's time was up and vpnstat disconnected the tunnel.
  case freeLimit = "free-limit"
  /// The tunnel came up during the pause and vpnstat took it down at once.
  case pause
  /// Someone else took the link down.
  case user
  /// The tunnel device went away by itself (wg-quick down, NetworkManager, a crash).
  case vanished
  /// The enforcer was stopped (SIGTERM/SIGINT) while the tunnel was up.
  case stopped
  /// The tunnel was moved to another network namespace, out of the enforcer's reach.
  case escaped
  /// The enforcer could not read the session window and held the tunnel down rather than guess.
  case undecided
  /// `vpnstat session reset` or a plan change ended the window.
  case reset
  /// The tunnel class's traffic reached the data cap of the period, and vpnstat disconnected.
  case dataCap = "data-cap"
}

/// One recorded end of a session.
public struct StopRecord: Hashable, Sendable {
  public var at: Timestamp
  public var interface: InterfaceName?
  public var reason: StopReason
  public var detail: String?

  public init(at: Timestamp, interface: InterfaceName?, reason: StopReason, detail: String? = nil) {
    self.at = at
    self.interface = interface
    self.reason = reason
    self.detail = detail
  }
}
