import VPNStatModel

/// A manager that was asked for (`--action networkmanager`) but not found for this tunnel: the
/// stop fails at once, saying why, and the enforcer falls back to link-down.
public struct MissingManagerControl: ManagerControl {
  public let label: String
  public let reason: String
  public init(label: String, reason: String) {
    self.label = label
    self.reason = reason
  }
  public func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome { .failed(self.reason) }
}
