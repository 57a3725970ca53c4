import VPNStatModel

/// A manager that was asked for (`--action networkmanager`) but not found for this tunnel: the
/// stop fails at once, saying why, and the enforcer falls back to link-down.
package struct MissingManagerControl: TunnelControl {
  package let label: String
  package let reason: String
  package init(label: String, reason: String) {
    self.label = label
    self.reason = reason
  }
  package func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome { .failed(self.reason) }
}
