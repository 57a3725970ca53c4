import VPNStatKernel
import VPNStatModel

/// How the enforcer disconnects one tunnel: which control to stop it with, chosen when the
/// disconnect happens (the same name may be wg-quick's now and NetworkManager's later).
package protocol DisconnectAction {
  /// As `--action` names it (`auto`, `link-down`, `wg-quick`, …) or `exec PROGRAM`.
  var label: String { get }
  func control(for link: LinkRecord) -> any TunnelControl
  /// Whether the link is cut by deleting it (`--action delete`) rather than by clearing its up
  /// flag: the one request the enforcer makes before anything else.
  var deletesLink: Bool { get }
  /// Where a wg-quick stop looks for the tunnel's configuration; empty when this action never
  /// runs wg-quick.
  var wgQuickDirectories: [String] { get }
  /// What a wg-quick stop of `tunnel` would run, or why it could not: said when the enforcer
  /// starts, so that a configuration kept elsewhere is seen before the deadline, not after it.
  func wgQuickPlan(for tunnel: InterfaceName) -> String?
}

extension DisconnectAction {
  package var deletesLink: Bool { false }
  package var wgQuickDirectories: [String] { [] }
  package func wgQuickPlan(for tunnel: InterfaceName) -> String? { nil }
}

/// `--action link-down` and `--action delete`: the kernel alone.
package struct LinkDownAction: DisconnectAction {
  let control: DirectLinkControl
  package init(links: any LinkTable, deleting: Bool = false) {
    control = DirectLinkControl(links: links, deleting: deleting)
  }
  package var label: String { control.label }
  package var deletesLink: Bool { control.deleting }
  package func control(for link: LinkRecord) -> any TunnelControl { control }
}

/// `--exec PROGRAM ARG…`: the operator's own program (`ExecControl`).
package struct ExecAction: DisconnectAction {
  let control: ExecControl
  package init(arguments: [[UInt8]], timeout: Duration) {
    control = ExecControl(arguments: arguments, timeout: timeout)
  }
  package var label: String { control.label }
  package func control(for link: LinkRecord) -> any TunnelControl { control }
}
