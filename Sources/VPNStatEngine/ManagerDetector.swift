import VPNStatKernel
import VPNStatModel
import VPNStatSystem

/// Finding who manages tunnels, now: a seam so the enforcer's tests can name the manager.
public protocol ManagerDetecting {
  /// The manager of each link (name and netlink kind), looked up afresh.
  func managers(of links: [(name: InterfaceName, kind: String?)]) -> [InterfaceName: TunnelManager]
}

extension ManagerDetecting {
  public func manager(of name: InterfaceName, kind: String?) -> TunnelManager {
    managers(of: [(name, kind)])[name]
      ?? TunnelManager(
        kind: .none, id: nil, foundBy: .nothing, evidence: "no manager found for \(name.terminalText)")
  }
}

/// Gathers the evidence for `TunnelManager.identify` from this machine: the tun's holders from
/// /proc, NetworkManager's devices (`nmcli`, only when NetworkManager runs: /run/NetworkManager
/// exists), systemd's units (only when systemd runs: /run/systemd/system exists), and wg-quick's
/// configuration files. One walk of /proc and at most one `nmcli` and one `systemctl` for all
/// the tunnels asked about.
public struct ManagerDetector: ManagerDetecting {
  public var runner: any ProgramRunner
  /// Where wg-quick configurations are: NAME.conf in the first that has one. wg-quick itself
  /// reads /etc/wireguard.
  public var wgQuickDirectories: [String]
  /// Units named in the configuration for tunnels (`--systemd-unit NAME=UNIT`).
  public var units: [InterfaceName: String]
  public var procRoot: SystemPath
  /// Present while NetworkManager runs.
  public var networkManagerDirectory: String
  /// Present when systemd is the init system.
  public var systemdDirectory: String
  /// The walk of /proc shared with the rest of a one-off command (`status`: WireGuard's reader
  /// reads it too); nil: a walk of its own at every question (the enforcer asks at each
  /// disconnect, and must see the tunnel as it is then).
  public var survey: TunProcessSurvey?

  public static let defaultWgQuickDirectory = "/etc/wireguard"

  public init(
    runner: any ProgramRunner = ChildProgramRunner(), wgQuickDirectories: [String] = [defaultWgQuickDirectory],
    units: [InterfaceName: String] = [:], procRoot: SystemPath = "/proc",
    networkManagerDirectory: String = "/run/NetworkManager", systemdDirectory: String = "/run/systemd/system",
    survey: TunProcessSurvey? = nil
  ) {
    self.runner = runner
    self.wgQuickDirectories = wgQuickDirectories
    self.units = units
    self.procRoot = procRoot
    self.networkManagerDirectory = networkManagerDirectory
    self.systemdDirectory = systemdDirectory
    self.survey = survey
  }

  public func managers(of links: [(name: InterfaceName, kind: String?)]) -> [InterfaceName: TunnelManager] {
    guard !links.isEmpty else { return [:] }
    // A tun's manager is the process holding it; a kernel WireGuard device has none (and a
    // reader without the link kind looks at every name).
    let tuns = Set(links.filter { $0.kind == nil || $0.kind == "tun" }.map(\.name))
    let holders =
      tuns.isEmpty
      ? [:] : (survey?.processes ?? TunProcesses.read(procRoot: procRoot)).holders(of: tuns, procRoot: procRoot)
    var devices: [InterfaceName: NetworkManagerDevice] = [:]
    if FileSystem.exists(networkManagerDirectory) {
      let run = runner.run(NetworkManagerControl.devices, timeout: .seconds(5))
      if run.succeeded {
        for device in NetworkManagerControl.parseDevices(run.output) { devices[device.device] = device }
      }
    }
    let systemd = FileSystem.exists(systemdDirectory)
    var active = Set<String>()
    if systemd {
      // Units by name only for what no process explains (kernel WireGuard leaves none).
      let candidates = links.filter { holders[$0.name] == nil }.flatMap {
        (units[$0.name].map { [$0] } ?? []) + ManagerEvidence.wellKnownUnits(for: $0.name)
      }
      if !candidates.isEmpty {
        let run = runner.run(SystemdUnitControl.stateCommand(candidates), timeout: .seconds(5))
        let states = run.output.split(whereSeparator: \.isNewline)
        for (unit, state) in zip(candidates, states) where state == "active" { active.insert(unit) }
      }
    }
    var result: [InterfaceName: TunnelManager] = [:]
    for link in links {
      let config = wgQuickDirectories.lazy.map { "\($0)/\(link.name.escaped).conf" }.first(where: FileSystem.exists)
      let evidence = ManagerEvidence(
        interface: link.name, linkKind: link.kind, holders: holders[link.name] ?? [],
        networkManager: devices[link.name], systemdRunning: systemd,
        activeUnits: ManagerEvidence.wellKnownUnits(for: link.name).filter(active.contains),
        configuredUnit: units[link.name].flatMap { active.contains($0) ? $0 : nil }, wgQuickConfig: config,
        wgQuickConfigSearched: wgQuickDirectories.map { "\($0)/\(link.name.escaped).conf" }.joined(separator: ", "))
      result[link.name] = TunnelManager.identify(evidence)
    }
    return result
  }
}
