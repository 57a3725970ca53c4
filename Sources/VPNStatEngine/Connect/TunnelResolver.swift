import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// A name given to `connect` or `disconnect`, resolved: the manager that answers to it and the
/// control to drive it with.
package struct TunnelTarget {
  package var manager: TunnelManager
  package var control: any TunnelControl
  /// The interface, when known now (an interface named NAME, wg-quick's file name, an active
  /// NetworkManager connection's device).
  package var device: InterfaceName?
  /// The class of the kernel interface NAME resolved to, when it resolved to one (nil for a
  /// connection, a unit or a configuration: tunnels by definition). What `NotATunnel` judges.
  package var link: InterfaceCatalog.Entry?

  /// Why this target may not be acted on: NAME is a kernel interface whose class is not `tunnel`.
  package var notATunnel: NotATunnel? {
    guard let link, let device else { return nil }
    return NotATunnel.check(device, link.interfaceClass, by: link.evidence)
  }

  /// Why the enforcer that holds this tunnel would not stop it through the wg-quick
  /// configuration it is started from (it looks in other directories: it finds none and only
  /// takes the link down, leaving wireguard-go running, or it finds another file), naming both;
  /// nil when they agree, or no enforcer runs wg-quick for it. `connect --wg-quick-dir` and an
  /// enforcer started without it must not disagree silently.
  package func enforcerDisagreement(at location: StoreLocation) -> String? {
    guard manager.kind == .wgQuick, let configuration = manager.id, let device,
      let presence = EnforcerPresenceFile(location: location, tunnel: device).read(),
      !presence.wgQuickDirectories.isEmpty, EnforcerPresenceFile.isLive(presence)
    else { return nil }
    let enforcer = "vpnstat enforce \(device.terminalText) (pid \(presence.pid))"
    let directories = presence.wgQuickDirectories.map(TerminalText.sanitize).joined(separator: " and ")
    let started = TerminalText.sanitize(configuration)
    let remedy =
      "set wg-quick-dir in vpnstat.conf to the directory that holds it (connect, disconnect and enforce all read it) and restart the enforcer"
    switch ManagerDetector(wgQuickDirectories: presence.wgQuickDirectories).wgQuickConfiguration(for: device) {
    case .trusted(let path):
      if FileSystem.realPath(path) == FileSystem.realPath(configuration) { return nil }
      return
        "\(enforcer) would stop \(device.terminalText) with wg-quick down \(TerminalText.sanitize(path)), not \(started), which started it: \(remedy)"
    case .refused, .missing:
      return
        "\(enforcer) looks for wg-quick configurations in \(directories) and would not find \(started), which started \(device.terminalText): at a stop it would only take the link down and leave the tunnel's program running; \(remedy)"
    }
  }
}

/// Why a name given to `connect`/`disconnect` does not name one tunnel.
package enum TunnelNameError: Error, Sendable, CustomStringConvertible {
  /// Several managers answer to it.
  case ambiguous(name: String, candidates: [TunnelManager])
  /// None does (of the kind asked for); `searched` says where it was looked for.
  case notFound(name: String, kind: TunnelManager.Kind?, searched: [String])
  /// A file it names (a wg-quick configuration) is one root must not run.
  case untrusted(UntrustedFile)

  package var description: String {
    switch self {
    case .ambiguous(let name, let candidates):
      let listed = candidates.map(TunnelManagerText.describe).joined(separator: "; ")
      return "'\(TerminalText.sanitize(name))' names more than one tunnel: \(listed). \(Self.howToChoose(candidates))"
    case .notFound(let name, let kind, let searched):
      let what = kind.map { "no \($0.rawValue) tunnel" } ?? "no tunnel"
      return "\(what) named '\(TerminalText.sanitize(name))': \(searched.joined(separator: "; "))"
    case .untrusted(let file):
      return file.description
    }
  }

  /// How to name one of `candidates`: `--manager` tells kinds apart (each kind said once); two
  /// of one kind are told apart by what the manager knows them by, given as NAME instead.
  static func howToChoose(_ candidates: [TunnelManager]) -> String {
    var kinds: [TunnelManager.Kind] = []
    for candidate in candidates where !kinds.contains(candidate.kind) { kinds.append(candidate.kind) }
    var ways: [String] = []
    let manager = "with " + kinds.map { "--manager \($0.rawValue)" }.joined(separator: " or ")
    if kinds.count > 1 { ways.append(manager) }
    for kind in kinds {
      let ids = candidates.filter { $0.kind == kind }.compactMap(\.id)
      guard ids.count > 1 else { continue }
      let what: String
      switch kind {
      case .networkManager: what = "the NetworkManager connection's UUID"
      case .systemd: what = "the systemd unit's name"
      case .wgQuick: what = "the wg-quick configuration's path"
      case .openVPN, .none: what = "the \(kind.rawValue) tunnel's id"
      }
      ways.append(
        "by giving \(what) as NAME (" + ids.map { "'\(TerminalText.sanitize($0))'" }.joined(separator: " or ") + ")")
    }
    return "Choose one " + (ways.isEmpty ? [manager] : ways).joined(separator: "; or ")
  }
}

/// Finds what a name given to `vpnstat connect NAME` or `disconnect NAME` stands for, every
/// way it can, then keeps exactly one (`TunnelChoice`):
///
/// - a NetworkManager connection whose name or UUID it is (where NetworkManager runs);
/// - a systemd unit: NAME itself when it ends in `.service` and systemd knows it, the unit
///   `--systemd-unit NAME=UNIT` names, or `wg-quick@NAME`, `openvpn-client@NAME`, `openvpn@NAME`
///   when enabled (where systemd runs);
/// - a wg-quick configuration: NAME as a path to a `.conf` file, else `DIR/NAME.conf` in the
///   first wg-quick directory that has one;
/// - an interface named NAME, with its manager as the enforcer finds it (none: the kernel's
///   link).
///
/// The same manager found twice (a wg-quick configuration and the interface it made) counts
/// once.
package struct TunnelResolver {
  package var detector: ManagerDetector
  package var links: any LinkTable
  /// Classifies an interface named NAME (sysfs and the user's `--class` overrides).
  package var catalog: InterfaceCatalog

  package init(detector: ManagerDetector, links: any LinkTable, catalog: InterfaceCatalog = InterfaceCatalog()) {
    self.detector = detector
    self.links = links
    self.catalog = catalog
  }

  var runner: any ProgramRunner { detector.runner }

  /// NetworkManager's connections: `UUID:TYPE:NAME`, the name last (`NetworkManagerControl.terseRecords`:
  /// nmcli escapes colons in it, not newlines).
  static let connections = ["nmcli", "-t", "-f", "UUID,TYPE,NAME", "connection", "show"]

  /// Resolves `name` (of `kind` when given) to one tunnel, or throws why it cannot.
  package func resolve(_ name: String, kind: TunnelManager.Kind?) throws(TunnelNameError) -> TunnelTarget {
    var searched: [String] = []
    let found = try candidates(for: name, searched: &searched)
    switch TunnelChoice.choose(from: found.map(\.manager), kind: kind) {
    case .found(let manager):
      // The candidate that knows the device wins (the interface named NAME over its
      // configuration file).
      let same = found.filter { $0.manager.kind == manager.kind && $0.manager.id == manager.id }
      var chosen = same.first { $0.device != nil } ?? same[0]
      // The interface named NAME among them keeps its class, whichever candidate was chosen.
      if let interface = same.first(where: { $0.link != nil }) {
        chosen.device = interface.device
        chosen.link = interface.link
      }
      return chosen
    case .ambiguous(let managers): throw .ambiguous(name: name, candidates: managers)
    case .notFound: throw .notFound(name: name, kind: kind, searched: searched)
    }
  }

  /// Every manager that answers to `name`, with what was searched.
  func candidates(for name: String, searched: inout [String]) throws(TunnelNameError) -> [TunnelTarget] {
    var found: [TunnelTarget] = []
    let shown = TerminalText.sanitize(name)
    // NetworkManager: a connection by name or UUID.
    if FileSystem.exists(detector.networkManagerDirectory) {
      searched.append("no NetworkManager connection with that name or UUID")
      let run = runner.run(Self.connections, timeout: .seconds(5))
      if run.succeeded {
        for fields in NetworkManagerControl.terseRecords(run.output, fields: 3) {
          let (uuid, type, connection) = (fields[0], fields[1], fields[2])
          guard ManagerName.isUUID(uuid), connection == name || uuid.lowercased() == name.lowercased() else { continue }
          let manager = TunnelManager(
            kind: .networkManager, id: uuid, foundBy: .networkManager,
            evidence:
              "NetworkManager connection '\(TerminalText.sanitize(connection))' (\(TerminalText.sanitize(type)), \(uuid))",
            connectionName: connection)
          let control = NetworkManagerControl(uuid: uuid, manager: manager, connectionType: type, runner: runner)
          found.append(TunnelTarget(manager: manager, control: control, device: nil))
        }
      } else {
        searched[searched.count - 1] = "NetworkManager did not list its connections (nmcli \(run.failure))"
      }
    } else {
      searched.append("NetworkManager does not run")
    }
    // systemd: a unit by its name, the configured one, or an enabled well-known one.
    let interface = InterfaceName(parsingEscaped: name)
    let plausible = interface.kernelProblem == nil
    if FileSystem.exists(detector.systemdDirectory) {
      searched.append(
        "no systemd unit of that name, configured for it, or enabled as wg-quick@, openvpn-client@ or openvpn@")
      var units: [(unit: String, why: String)] = []
      if name.hasSuffix(".service"), ManagerName.unitProblem(name) == nil, unitLoaded(name) {
        units.append((name, "a unit systemd knows"))
      }
      if plausible, let configured = detector.units[interface], ManagerName.unitProblem(configured) == nil {
        units.append((configured, "named in the configuration for \(shown)"))
      }
      if plausible {
        for unit in ManagerEvidence.wellKnownUnits(for: interface) where unitEnabled(unit) {
          units.append((unit, "enabled"))
        }
      }
      for (unit, why) in units {
        let manager = TunnelManager(
          kind: .systemd, id: unit, foundBy: .unit, evidence: "systemd unit \(TerminalText.sanitize(unit)) (\(why))")
        let control = SystemdUnitControl(unit: unit, manager: manager, runner: runner)
        found.append(TunnelTarget(manager: manager, control: control, device: control.device()))
      }
    } else {
      searched.append("systemd does not run")
    }
    // wg-quick: a configuration file by path or by name, which root may run (wg-quick runs its
    // hooks as root): one others could write refuses the whole name.
    var configuration: String?
    var file: WgQuickConfiguration?
    if name.contains("/") {
      if name.hasSuffix(".conf"), FileSystem.exists(name) { file = ManagerDetector.trust(wgQuick: name) }
      searched.append("no wg-quick configuration at \(shown)")
    } else if plausible {
      file = detector.wgQuickConfiguration(for: interface)
      let paths = detector.wgQuickDirectories.map { "\($0)/\(interface.escaped).conf" }
      searched.append("no wg-quick configuration " + paths.map(TerminalText.sanitize).joined(separator: " or "))
    }
    switch file {
    case .trusted(let path): configuration = path
    case .refused(let path, let problem):
      throw .untrusted(UntrustedFile(role: "wg-quick configuration", path: path, problem: problem))
    case .missing, nil: break
    }
    if let configuration {
      let manager = TunnelManager(
        kind: .wgQuick, id: configuration, foundBy: .configuration,
        evidence: "wg-quick configuration \(TerminalText.sanitize(configuration))")
      let control = WgQuickControl(configuration: configuration, manager: manager, runner: runner)
      found.append(TunnelTarget(manager: manager, control: control, device: control.device()))
    }
    // An interface of that name, and who manages it now.
    if plausible, let link = try? links.link(named: interface) {
      let manager = detector.manager(of: interface, kind: link.attributes.kind)
      var control = ManagerAction.control(for: manager, runner: runner, links: links)
      if manager.kind == .none { control = DirectLinkControl(links: links, tunnel: interface) }
      var catalog = catalog
      found.append(TunnelTarget(manager: manager, control: control, device: interface, link: catalog.entry(for: link)))
    } else {
      searched.append("no interface \(shown)")
    }
    return found
  }

  /// Whether systemd has loaded (knows) the unit.
  func unitLoaded(_ unit: String) -> Bool {
    let run = runner.run(["systemctl", "show", "--property=LoadState", "--value", "--", unit], timeout: .seconds(5))
    return run.succeeded && run.output.trimmingASCIIWhitespace() == "loaded"
  }

  /// Whether the unit is enabled: the user chose systemd to run that tunnel.
  func unitEnabled(_ unit: String) -> Bool {
    let run = runner.run(["systemctl", "is-enabled", "--", unit], timeout: .seconds(5))
    return run.succeeded && run.output.trimmingASCIIWhitespace() == "enabled"
  }
}
