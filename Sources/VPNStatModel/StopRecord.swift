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
