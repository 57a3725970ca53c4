import VPNStatKernel
import VPNStatModel
import VPNStatSystem

/// Finding who manages tunnels, now: a seam so the enforcer's tests can name the manager.
package protocol ManagerDetecting {
  /// The manager of each link (name and netlink kind), looked up afresh.
  func managers(of links: [(name: InterfaceName, kind: String?)]) -> [InterfaceName: TunnelManager]
  /// The wg-quick configuration root may run for `name` (`--action wg-quick` when the device
  /// does not look like WireGuard), or why there is none.
  func wgQuickConfiguration(for name: InterfaceName) -> WgQuickConfiguration
  /// Where `wgQuickConfiguration(for:)` looks, first first: what an enforcer announces, so that
  /// `connect` can tell when it started a tunnel from a configuration the enforcer would not find.
  var wgQuickDirectories: [String] { get }
}

/// What the wg-quick directories hold for a name: a configuration root may run, or why not.
package enum WgQuickConfiguration: Hashable, Sendable {
  case trusted(String)
  /// One exists but fails `DirectoryTrust.fileProblem`: which, and why.
  case refused(path: String, problem: String)

  /// "the wg-quick configuration PATH is not used: PROBLEM", for a refused one.
  package var refusal: String? {
    guard case .refused(let path, let problem) = self else { return nil }
    return "the wg-quick configuration \(TerminalText.sanitize(path)) is not used: \(TerminalText.sanitize(problem))"
  }
  /// None exists: where it was looked for.
  case missing(String)
}

extension ManagerDetecting {
  package var wgQuickDirectories: [String] { [] }

  package func wgQuickConfiguration(for name: InterfaceName) -> WgQuickConfiguration {
    .missing("no wg-quick configuration for \(name.terminalText)")
  }

  package func manager(of name: InterfaceName, kind: String?) -> TunnelManager {
    managers(of: [(name, kind)])[name]
      ?? TunnelManager(
        kind: .none, id: nil, foundBy: .nothing, evidence: "no manager found for \(name.terminalText)")
  }
}

/// Gathers the evidence for `TunnelManager.identify` from this machine, from sources no
/// unprivileged user can forge: NetworkManager's own state (`nmcli`, only when NetworkManager
/// runs: /run/NetworkManager exists), systemd's units (only when systemd runs:
/// /run/systemd/system exists), wg-quick configuration files that only root can write, and the
/// processes of root and of system services holding the tun (from /proc, each descriptor proven
/// to be the device). One walk of /proc and a few `nmcli` calls and one `systemctl` for all the
/// tunnels asked about.
package struct ManagerDetector: ManagerDetecting {
  package var runner: any ProgramRunner
  /// Where wg-quick configurations are: NAME.conf in the first that has one. wg-quick itself
  /// reads /etc/wireguard.
  package var wgQuickDirectories: [String]
  /// Units named in the configuration for tunnels (`--systemd-unit NAME=UNIT`).
  package var units: [InterfaceName: String]
  package var procRoot: SystemPath
  /// How a tun descriptor's device is proven (the kernel's answer; a fixture's in tests).
  package var attachments: any TunAttachmentSource
  /// Present while NetworkManager runs.
  package var networkManagerDirectory: String
  /// Present when systemd is the init system.
  package var systemdDirectory: String
  /// The walk of /proc shared with the rest of a one-off command (`status`: WireGuard's reader
  /// reads it too); nil: a walk of its own at every question (the enforcer asks at each
  /// disconnect, and must see the tunnel as it is then).
  package var survey: TunProcessSurvey?

  package static let defaultWgQuickDirectory = "/etc/wireguard"

  package init(
    runner: any ProgramRunner = ChildProgramRunner(), wgQuickDirectories: [String] = [defaultWgQuickDirectory],
    units: [InterfaceName: String] = [:], procRoot: SystemPath = "/proc",
    attachments: any TunAttachmentSource = KernelTunAttachments(),
    networkManagerDirectory: String = "/run/NetworkManager", systemdDirectory: String = "/run/systemd/system",
    survey: TunProcessSurvey? = nil
  ) {
    self.runner = runner
    self.wgQuickDirectories = wgQuickDirectories
    self.units = units
    self.procRoot = procRoot
    self.attachments = attachments
    self.networkManagerDirectory = networkManagerDirectory
    self.systemdDirectory = systemdDirectory
    self.survey = survey
  }

  package func managers(of links: [(name: InterfaceName, kind: String?)]) -> [InterfaceName: TunnelManager] {
    guard !links.isEmpty else { return [:] }
    // A tun's manager may be the process holding it; a kernel WireGuard device has none (and a
    // reader without the link kind looks at every name).
    let tuns = Set(links.filter { $0.kind == nil || $0.kind == "tun" }.map(\.name))
    var holders =
      tuns.isEmpty
      ? [:]
      : (survey?.processes ?? TunProcesses.read(procRoot: procRoot, attachments: attachments)).holders(
        of: tuns, procRoot: procRoot)
    var devices: [InterfaceName: NetworkManagerDevice] = [:]
    var vpns: [String: NetworkManagerConnection] = [:]
    if FileSystem.exists(networkManagerDirectory) {
      let run = runner.run(NetworkManagerControl.devices, timeout: .seconds(5))
      if run.succeeded {
        for device in NetworkManagerControl.parseDevices(run.output) { devices[device.device] = device }
      }
      // A VPN plugin's tun is only "connected (externally)" to NetworkManager; its process says
      // which connection, and NetworkManager whether that one is an active VPN.
      let pluginHeld = holders.values.contains { $0.contains { $0.networkManagerConnection != nil } }
      if pluginHeld { vpns = NetworkManagerControl.activeVPNs(runner: runner) }
    }
    let systemd = FileSystem.exists(systemdDirectory)
    if systemd { confirmMainProcesses(&holders) }
    var active = Set<String>()
    if systemd {
      // Units by name only for what no process explains (kernel WireGuard leaves none).
      let candidates = links.filter { holders[$0.name, default: []].allSatisfy { !$0.mayBeManager } }.flatMap {
        (units[$0.name].map { [$0] } ?? []) + ManagerEvidence.wellKnownUnits(for: $0.name)
      }.filter { ManagerName.unitProblem($0) == nil }
      if !candidates.isEmpty {
        let run = runner.run(SystemdUnitControl.stateCommand(candidates), timeout: .seconds(5))
        let states = run.output.split(whereSeparator: \.isNewline)
        for (unit, state) in zip(candidates, states) where state == "active" { active.insert(unit) }
      }
    }
    var result: [InterfaceName: TunnelManager] = [:]
    for link in links {
      let configuration = wgQuickConfiguration(for: link.name)
      var evidence = ManagerEvidence(
        interface: link.name, linkKind: link.kind, holders: holders[link.name] ?? [],
        networkManager: devices[link.name], networkManagerVPNs: vpns, systemdRunning: systemd,
        activeUnits: ManagerEvidence.wellKnownUnits(for: link.name).filter(active.contains),
        configuredUnit: units[link.name].flatMap { active.contains($0) ? $0 : nil })
      switch configuration {
      case .trusted(let path): evidence.wgQuickConfig = path
      case .refused: evidence.wgQuickConfigRefused = configuration.refusal
      case .missing(let searched): evidence.wgQuickConfigSearched = searched
      }
      result[link.name] = TunnelManager.identify(evidence)
    }
    return result
  }

  /// Gives standing to the holders that run in a system service without being root when systemd
  /// says each is its service's main process (`MainPID`): a process a service merely forked
  /// (cron's jobs run in cron.service as their users) is not the service. One `systemctl show`.
  func confirmMainProcesses(_ holders: inout [InterfaceName: [TunnelProcess]]) {
    let units = Set(holders.values.joined().filter { $0.standing == .unprivileged }.compactMap(\.systemdUnit))
      .filter { ManagerName.unitProblem($0) == nil }.sorted()
    guard !units.isEmpty else { return }
    let run = runner.run(SystemdUnitControl.mainProcessCommand(units), timeout: .seconds(5))
    guard run.succeeded else { return }
    let main = SystemdUnitControl.parseMainProcesses(run.output)
    for (name, processes) in holders {
      holders[name] = processes.map { process in
        var process = process
        if process.standing == .unprivileged, let unit = process.systemdUnit, main[unit] == process.pid {
          process.standing = .serviceMainProcess
        }
        return process
      }
    }
  }

  /// NAME.conf in the first wg-quick directory that has one, as an absolute path (wg-quick never
  /// takes it for an option), when it and its directories pass `DirectoryTrust.fileProblem`:
  /// wg-quick runs its PreUp/PostDown lines as root.
  package func wgQuickConfiguration(for name: InterfaceName) -> WgQuickConfiguration {
    let paths = wgQuickDirectories.map { "\($0)/\(name.escaped).conf" }
    guard let path = paths.first(where: FileSystem.exists) else {
      return .missing(paths.map(TerminalText.sanitize).joined(separator: ", "))
    }
    return Self.trust(wgQuick: path)
  }

  /// A wg-quick configuration file by its path: trusted (made absolute) or refused, and why.
  package static func trust(wgQuick path: String) -> WgQuickConfiguration {
    if let problem = DirectoryTrust.fileProblem(path) { return .refused(path: path, problem: problem) }
    if path.hasPrefix("/") { return .trusted(path) }
    // Relative: made absolute through its directory, keeping the file's own name (wg-quick
    // names the interface after it, even when it is a link).
    let slash = path.lastIndex(of: "/")
    let directory = slash.map { String(path[..<$0]) } ?? "."
    let file = slash.map { String(path[path.index(after: $0)...]) } ?? path
    guard let real = FileSystem.realPath(directory) else { return .missing(TerminalText.sanitize(path)) }
    return .trusted(real == "/" ? "/" + file : real + "/" + file)
  }
}
