import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// How the enforcer disconnects one tunnel. The outcome is only what the action says; the
/// enforcer believes the kernel, not this.
public protocol DisconnectAction {
  /// A few words for logs and stop records: "link-down", "exec nmcli".
  var label: String { get }
  func disconnect(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome
}

public enum DisconnectOutcome: Hashable, Sendable {
  case done
  case failed(String)
}

/// The built-in action: clear IFF_UP on the tunnel over netlink.
public struct LinkDownAction: DisconnectAction {
  let links: any LinkController
  public init(links: any LinkController) { self.links = links }
  public var label: String { "link-down" }

  public func disconnect(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    do {
      guard let link = try links.link(named: tunnel) else { return .done }
      try links.setDown(index: link.index)
      return .done
    } catch {
      return .failed("link-down: \(error)")
    }
  }
}

/// A configured command (`--exec nmcli connection down id work-vpn`): an argv with a timeout,
/// told which tunnel and why in `VPNSTAT_INTERFACE` and `VPNSTAT_REASON`. The arguments are
/// bytes, passed exactly as they were given.
public struct CommandAction: DisconnectAction {
  public let arguments: [[UInt8]]
  public let timeout: Duration
  public init(arguments: [[UInt8]], timeout: Duration) {
    self.arguments = arguments
    self.timeout = timeout
  }
  public var label: String { "exec \(TerminalText.sanitize(argumentText(arguments.first ?? [])))" }

  public func disconnect(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    let outcome = ChildCommand(
      arguments, environment: ["VPNSTAT_INTERFACE": tunnel.escaped, "VPNSTAT_REASON": reason.rawValue],
      timeout: timeout
    ).run()
    if outcome == .exited(0) { return .done }
    return .failed("\(label) \(outcome)")
  }
}
