import VPNStatModel
import VPNStatSystem

/// The operator's own disconnect program, `--exec` (`--exec nmcli connection down id work-vpn`):
/// an argv with a timeout, told which tunnel and why in `VPNSTAT_INTERFACE` and `VPNSTAT_REASON`.
/// The arguments are bytes, passed exactly as they were given; its output goes where the
/// enforcer's goes.
package struct ExecControl: TunnelControl {
  package let arguments: [[UInt8]]
  package let timeout: Duration
  package init(arguments: [[UInt8]], timeout: Duration) {
    self.arguments = arguments
    self.timeout = timeout
  }
  package var label: String { "exec \(TerminalText.sanitize(argumentText(arguments.first ?? [])))" }

  package func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    let outcome = ChildProgram(
      arguments, environment: ["VPNSTAT_INTERFACE": tunnel.escaped, "VPNSTAT_REASON": reason.rawValue],
      timeout: timeout
    ).run()
    if outcome == .exited(0) { return .done }
    return .failed("\(label) \(outcome)")
  }
}
