import VPNStatModel
import VPNStatSystem

/// Controls one tunnel through whatever manages it — NetworkManager, a systemd unit, wg-quick,
/// OpenVPN — or, with no manager, the operator's program or the kernel's link itself (so not
/// every control is a manager's: `ExecControl`, `DirectLinkControl`). The enforcer's
/// disconnect and `vpnstat disconnect` are `stop` through one of them, `vpnstat connect` is
/// `start`.
///
/// `stop` and `start` only ask. Nothing they say proves the tunnel stopped or runs: a stop is
/// confirmed by the kernel (the device down or gone) and then `isStopped`, the manager's own
/// state; a start by its `proofs` (`ConnectionProbe`).
package protocol TunnelControl {
  /// A few words for logs and stop records: "wg-quick /etc/wireguard/wg0.conf".
  var label: String { get }
  /// The manager this control drives; nil for a command or the kernel alone.
  var manager: TunnelManager? { get }
  /// Asks the manager to stop the tunnel.
  func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome
  /// The manager's own word that the tunnel is stopped, once the kernel says the device is down
  /// (`deviceGone`: it no longer exists); nil when the manager has no state beyond the kernel's.
  func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool?
  /// Keeps the manager from bringing the tunnel back by itself during the pause; returns what to
  /// give back when the pause ends, or nil when nothing had to be held.
  func holdForPause() -> ManagerHold?
  /// Asks the manager to start the tunnel, waiting at most `timeout` for its answer: accepted
  /// is all a success says.
  func start(timeout: Duration) -> StartOutcome
  /// The interface the tunnel runs on, when the manager can say before or after a start
  /// (wg-quick's from its file name, NetworkManager's from the active connection).
  func device() -> InterfaceName?
  /// What proves a tunnel this control started is real, in order: all must hold.
  var proofs: [ConnectionProof] { get }
}

extension TunnelControl {
  package var manager: TunnelManager? { nil }
  package func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? { nil }
  package func holdForPause() -> ManagerHold? { nil }
  package func start(timeout: Duration) -> StartOutcome { .refused("\(label) cannot start a tunnel") }
  package func device() -> InterfaceName? { nil }
  package var proofs: [ConnectionProof] { [] }
}

/// What a manager said to a start. `connect` believes it only as far as "accepted": the tunnel
/// is real when its proofs hold.
package enum StartOutcome: Hashable, Sendable {
  case accepted
  case refused(String)
}

/// What an action said of itself. The enforcer believes the kernel and the manager, not this.
package enum DisconnectOutcome: Hashable, Sendable {
  case done
  case failed(String)
}

extension String {
  /// The text without ASCII whitespace at either end (a program's answer ends in a newline).
  func trimmingASCIIWhitespace() -> String {
    String(decoding: Array(utf8).trimmingASCIIWhitespace(), as: UTF8.self)
  }
}
