/// A connection vpnstat refused, or undid at once, because connecting was not allowed: the free
/// plan's pause, or a data cap reached. Recorded where every reader sees it (the database), so
/// `watch`, `session --json` and `vpnstat notify` can tell the person why the VPN did not come up
/// — a hook's refusal alone reaches only the program that ran it ("VPN connection failed").
public struct Refusal: Hashable, Sendable {
  /// Which of vpnstat's ways of refusing did it.
  public enum Path: String, Hashable, Sendable, CaseIterable {
    /// `vpnstat session check`, the connect gate of a tunnel's pre-up hook.
    case gate
    /// The gate run by NetworkManager's dispatcher script (`contrib/networkmanager-dispatcher`).
    case dispatcher
    /// `vpnstat connect`, before it started anything.
    case connect
    /// The enforcer: the tunnel came up in the pause and was taken down at once.
    case enforcer
  }

  /// Why connecting was not allowed.
  public enum Reason: String, Hashable, Sendable, CaseIterable {
    case pause
    case dataCap = "data-cap"
  }

  public var at: Timestamp
  /// The tunnel refused, when the refusing path knew it.
  public var interface: InterfaceName?
  public var by: Path
  public var reason: Reason
  /// When connecting is allowed again: the pause's end, or the end of the cap's period; nil
  /// when it was not known.
  public var until: Timestamp?

  public init(at: Timestamp, interface: InterfaceName?, by: Path, reason: Reason, until: Timestamp?) {
    self.at = at
    self.interface = interface
    self.by = by
    self.reason = reason
    self.until = until
  }

  /// The refusal `report` makes of a connection at its "now" through `path`, for the reason
  /// that lasts longest (`SessionReport.connectBlock`); nil when connecting is allowed.
  public static func of(_ report: SessionReport, interface: InterfaceName?, by path: Path) -> Refusal? {
    guard let block = report.connectBlock else { return nil }
    return Refusal(
      at: report.now, interface: interface ?? report.tunnel, by: path, reason: block.reason, until: block.until)
  }
}

extension StopRecord {
  /// The refusal this stop is, when it is one: a tunnel that came up in the pause and was taken
  /// down at once (`pause`) was refused by the enforcer, until the pause ends at `pauseEndsAt`.
  public func refusal(pauseEndsAt: Timestamp?) -> Refusal? {
    guard reason == .pause else { return nil }
    return Refusal(at: at, interface: interface, by: .enforcer, reason: .pause, until: pauseEndsAt)
  }
}
