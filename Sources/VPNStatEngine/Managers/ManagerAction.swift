import VPNStatKernel
import VPNStatModel

/// `--action auto` (the default) and `--action networkmanager|systemd|wg-quick|openvpn`: stop
/// the tunnel through its manager, found when the disconnect happens. `auto` uses whatever
/// manages it (link-down for none); a named kind uses that manager when it is the one found, or
/// what can still be told without it (the unit `wg-quick@NAME`, `wg-quick down` with a trusted
/// configuration for NAME), and fails — so the enforcer falls back to link-down and records why
/// — when it cannot be driven.
package struct ManagerAction: DisconnectAction {
  /// nil: auto.
  package let kind: TunnelManager.Kind?
  let detector: any ManagerDetecting
  /// Units the configuration names, for `--action systemd` when systemd was not asked.
  let units: [InterfaceName: String]
  let runner: any ProgramRunner
  let links: any LinkTable

  package init(
    kind: TunnelManager.Kind?, detector: any ManagerDetecting, runner: any ProgramRunner, links: any LinkTable,
    units: [InterfaceName: String] = [:]
  ) {
    self.kind = kind
    self.detector = detector
    self.units = units
    self.runner = runner
    self.links = links
  }

  package var label: String { kind?.rawValue ?? "auto" }

  package var wgQuickDirectories: [String] {
    kind == nil || kind == .wgQuick ? detector.wgQuickDirectories : []
  }

  package func wgQuickPlan(for tunnel: InterfaceName) -> String? {
    guard kind == nil || kind == .wgQuick else { return nil }
    let name = tunnel.terminalText
    let file = detector.wgQuickConfiguration(for: tunnel)
    switch file {
    case .trusted(let path):
      return "a wg-quick stop of \(name) runs wg-quick down \(TerminalText.sanitize(path))"
    case .refused:
      return file.refusal
    case .missing(let searched):
      // Auto: the tunnel may well be another manager's; wg-quick's would be cut at its link.
      let otherwise =
        kind == nil
        ? "a tunnel wg-quick runs from elsewhere would only have its link taken down" : "its link is taken down"
      return
        "no wg-quick configuration for \(name) (looked for \(searched)): \(otherwise) (wg-quick-dir in vpnstat.conf is where connect, disconnect and enforce all look)"
    }
  }

  package func control(for link: LinkRecord) -> any TunnelControl {
    let found = detector.manager(of: link.name, kind: link.attributes.kind)
    let wanted = kind ?? found.kind
    if wanted == found.kind { return Self.control(for: found, runner: runner, links: links) }
    let name = link.name
    switch wanted {
    case .wgQuick:
      let file = detector.wgQuickConfiguration(for: name)
      switch file {
      case .trusted(let path): return WgQuickControl(configuration: path, runner: runner)
      case .refused: return MissingManagerControl(label: "wg-quick", reason: file.refusal ?? "refused")
      case .missing(let searched):
        return MissingManagerControl(label: "wg-quick", reason: "no wg-quick configuration \(searched)")
      }
    case .systemd:
      return SystemdUnitControl(unit: units[name] ?? ManagerEvidence.wellKnownUnits(for: name)[0], runner: runner)
    case .openVPN:
      if let process = found.process, process.command == "openvpn" { return OpenVPNControl(process: process) }
      return MissingManagerControl(
        label: "openvpn", reason: "no OpenVPN process holds \(name.terminalText) (\(found.evidence))")
    case .networkManager:
      return MissingManagerControl(
        label: "networkmanager", reason: "no NetworkManager connection on \(name.terminalText) (\(found.evidence))")
    case .none:
      return DirectLinkControl(links: links)
    }
  }

  /// The control for a manager that was found.
  package static func control(for manager: TunnelManager, runner: any ProgramRunner, links: any LinkTable)
    -> any TunnelControl
  {
    switch manager.kind {
    case .networkManager:
      if let uuid = manager.id { return NetworkManagerControl(uuid: uuid, manager: manager, runner: runner) }
    case .systemd:
      if let unit = manager.id { return SystemdUnitControl(unit: unit, manager: manager, runner: runner) }
    case .wgQuick:
      if let config = manager.id { return WgQuickControl(configuration: config, manager: manager, runner: runner) }
    case .openVPN:
      if let process = manager.process { return OpenVPNControl(process: process, manager: manager) }
    case .none: break
    }
    return DirectLinkControl(links: links)
  }
}
