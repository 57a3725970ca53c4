import VPNStatModel
import VPNStatSystem

/// What an enforcer needs before it may promise anything: checked when it starts, so that one
/// that could never disconnect fails at once, naming what is missing, instead of at the deadline.
package enum EnforcerRequirements {
  /// Something the enforcer needs and does not have.
  package struct Missing: Error, CustomStringConvertible {
    package var what: String
    package var description: String { "vpnstat enforce cannot disconnect: \(what)" }
  }

  /// CAP_NET_ADMIN, always: every action falls back to link-down, which needs it. With
  /// NetworkManager as the tunnel's manager (`networkManager`), also NetworkManager's own
  /// permission to control connections.
  package static func check(
    hasNetAdmin: Bool = ProcessTable.hasCapability(ProcessTable.netAdmin), networkManager: Bool = false,
    runner: any ProgramRunner = ChildProgramRunner()
  ) throws(Missing) {
    guard hasNetAdmin else {
      throw Missing(
        what:
          "it lacks CAP_NET_ADMIN, needed to take a link down (run it as root, or give it the capability, as contrib/vpnstat-enforce@.service does)"
      )
    }
    guard networkManager else { return }
    let run = runner.run(permissions, timeout: .seconds(5))
    // "auth" would need a person to answer a password prompt: an enforcer has none.
    let allowed = run.output.split(whereSeparator: \.isNewline).contains {
      $0 == "org.freedesktop.NetworkManager.network-control:yes"
    }
    guard run.succeeded, allowed else {
      throw Missing(
        what:
          "NetworkManager does not let this user control connections (org.freedesktop.NetworkManager.network-control; nmcli general permissions)"
      )
    }
  }

  static let permissions = ["nmcli", "-t", "-f", "PERMISSION,VALUE", "general", "permissions"]
}
