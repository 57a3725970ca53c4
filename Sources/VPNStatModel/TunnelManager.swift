/// Who brings a tunnel up and takes it down on this machine — NetworkManager, a systemd unit,
/// wg-quick, an OpenVPN process, or nobody — with the evidence, so that vpnstat disconnects it the
/// way its manager expects (and, later, connects it the same way). Found afresh every time it is
/// needed, never remembered: the same name may be wg-quick's today and NetworkManager's tomorrow.
public struct TunnelManager: Hashable, Sendable {
  /// The kinds of manager vpnstat knows how to drive.
  public enum Kind: String, Hashable, Sendable, CaseIterable {
    /// A NetworkManager connection is active on the device (or NM's OpenVPN plugin runs it).
    case networkManager = "networkmanager"
    /// A systemd service runs it (`wg-quick@wg0`, `openvpn-client@work`, …).
    case systemd
    /// wg-quick brought a WireGuard device up from its configuration file.
    case wgQuick = "wg-quick"
    /// An OpenVPN process holds the tun.
    case openVPN = "openvpn"
    /// Nobody vpnstat knows: the kernel's link is all there is (a bare tun, a manual device).
    case none
  }

  /// Which evidence decided, as JSON's `found_by` names it (like `class_by` for classes).
  public enum Evidence: String, Hashable, Sendable, CaseIterable {
    /// NetworkManager's active connection on the device.
    case networkManager = "networkmanager"
    /// The process holding the tun (OpenVPN, wireguard-go, NetworkManager's VPN plugin's), with
    /// standing: root's, a service's main process, or the plugin's.
    case holder
    /// The systemd service the holder runs in.
    case controlGroup = "control-group"
    /// A unit systemd says is active for the name.
    case unit
    /// The link kind (`wireguard`), with a wg-quick configuration.
    case kind
    /// A wg-quick configuration file the name given to `connect`/`disconnect` names (no device
    /// needs to exist yet).
    case configuration
    /// Nothing that names a manager.
    case nothing
  }

  public var kind: Kind
  /// What the manager knows the tunnel by, to stop it by: the NetworkManager connection's UUID,
  /// the unit's name, the wg-quick configuration (its path), OpenVPN's management socket (or its
  /// pid); nil for `none`.
  public var id: String?
  /// Which evidence decided.
  public var foundBy: Evidence
  /// The evidence, in words ("wireguard-go (pid 812) holds wg0; /etc/wireguard/wg0.conf").
  public var evidence: String
  /// NetworkManager's name for the connection, when known.
  public var connectionName: String?
  /// The process holding the tun, when one does (OpenVPN, wireguard-go).
  public var process: TunnelProcess?

  public init(
    kind: Kind, id: String?, foundBy: Evidence, evidence: String, connectionName: String? = nil,
    process: TunnelProcess? = nil
  ) {
    self.kind = kind
    self.id = id
    self.foundBy = foundBy
    self.evidence = evidence
    self.connectionName = connectionName
    self.process = process
  }

  /// The rule, strongest evidence first: NetworkManager (its active connection on the device, or
  /// an active VPN connection whose plugin's process holds the tun), then a systemd
  /// service (the holder's control group, or a unit systemd says is active for the name — only
  /// where systemd runs), then wg-quick (a WireGuard device with a trusted configuration file),
  /// then an OpenVPN process holding the tun; else none. NetworkManager must come before systemd:
  /// the processes of its VPN plugins live in NetworkManager.service's control group.
  ///
  /// Only evidence no unprivileged user can produce counts: NetworkManager's and systemd's own
  /// state, root's files, and holders with standing (root's processes, a service's main
  /// process, NetworkManager's plugin's): a process's name and arguments are its owner's to
  /// choose. A holder without standing is ignored.
  public static func identify(_ evidence: ManagerEvidence) -> TunnelManager {
    let name = evidence.interface.terminalText
    if let device = evidence.networkManager, !device.isExternal, let uuid = device.uuid {
      return TunnelManager(
        kind: .networkManager, id: uuid, foundBy: .networkManager,
        evidence:
          "NetworkManager: connection '\(TerminalText.sanitize(device.connection ?? uuid))' is active on \(name)",
        connectionName: device.connection)
    }
    let holders = evidence.holders.filter(\.mayBeManager)
    for holder in holders {
      if let uuid = holder.networkManagerConnection, let vpn = evidence.networkManagerVPNs[uuid] {
        return TunnelManager(
          kind: .networkManager, id: uuid, foundBy: .holder,
          evidence:
            "\(holder.described), started by NetworkManager's VPN plugin, holds \(name) for its active VPN connection '\(TerminalText.sanitize(vpn.name ?? uuid))'",
          connectionName: vpn.name, process: holder)
      }
    }
    if evidence.systemdRunning {
      for holder in holders where holder.standing != .networkManagerPlugin {
        if let unit = holder.systemdUnit, unit != "NetworkManager.service" {
          return TunnelManager(
            kind: .systemd, id: unit, foundBy: .controlGroup,
            evidence: "\(holder.described) holding \(name) runs in \(TerminalText.sanitize(unit))",
            process: holder)
        }
      }
      if let unit = evidence.configuredUnit ?? evidence.activeUnits.first {
        let why = evidence.configuredUnit != nil ? "named in the configuration" : "active, by its name"
        return TunnelManager(
          kind: .systemd, id: unit, foundBy: .unit, evidence: "systemd unit \(TerminalText.sanitize(unit)) (\(why))")
      }
    }
    let wireGuard = holders.first(where: \.isWireGuardGo)
    let isWireGuard = evidence.linkKind == "wireguard" || wireGuard != nil
    if isWireGuard, let config = evidence.wgQuickConfig {
      let device = wireGuard.map { "\($0.described) holds \(name)" } ?? "\(name) is a WireGuard device"
      return TunnelManager(
        kind: .wgQuick, id: config, foundBy: wireGuard == nil ? .kind : .holder,
        evidence: "\(device); \(TerminalText.sanitize(config))", process: wireGuard)
    }
    if let openVPN = holders.first(where: { $0.command == "openvpn" }) {
      let socket = openVPN.managementSocket
      return TunnelManager(
        kind: .openVPN, id: socket ?? "pid \(openVPN.pid)", foundBy: .holder,
        evidence: "\(openVPN.described) holds \(name)"
          + (socket.map { "; management socket \(TerminalText.sanitize($0))" } ?? "; no management socket"),
        process: openVPN)
    }
    var why: String
    if isWireGuard {
      why =
        evidence.wgQuickConfigRefused
        ?? "\(name) is a WireGuard device without a wg-quick configuration (\(TerminalText.sanitize(evidence.wgQuickConfigSearched)))"
    } else if let holder = holders.first {
      why = "\(holder.described) holds \(name), not a manager vpnstat knows"
    } else if evidence.linkKind == "tun" {
      why = "no process of root or of a system service holds \(name)"
    } else {
      why = "no manager found for \(name)" + (evidence.linkKind.map { " (kind \(TerminalText.sanitize($0)))" } ?? "")
    }
    if !isWireGuard, let refused = evidence.wgQuickConfigRefused { why += "; \(refused)" }
    return TunnelManager(kind: .none, id: nil, foundBy: holders.isEmpty ? .nothing : .holder, evidence: why)
  }
}

/// A process holding a tun open, as the kernel shows it: who it is, and whether root may take it
/// for the tunnel's manager (`standing`). The tun is proven to be the device (its descriptor
/// asked, not fdinfo's name); its name and arguments are believed only when its standing says
/// they are root's choice — any other user chooses what theirs say.
public struct TunnelProcess: Hashable, Sendable {
  /// Why root may believe what the process says of itself, or that it may not.
  public enum Standing: Hashable, Sendable {
    /// Every one of its user ids (real, effective, saved, file system) is root's.
    case root
    /// The main process of a system service (its control group's unit), as systemd says
    /// (`MainPID`): a service that dropped root (OpenVPN's `user nobody`).
    case serviceMainProcess
    /// Started by root's NetworkManager VPN plugin (its parent, whose program lies in
    /// NetworkManager's directory): the plugin's OpenVPN, which drops root for nm-openvpn.
    case networkManagerPlugin
    /// None of these: another user's process, or a service's that systemd does not call its
    /// own. Nothing about it is evidence.
    case unprivileged
  }

  public var pid: Int32
  /// When it started (clock ticks after boot): with the pid, who it is even if the pid is reused.
  public var startTime: UInt64?
  /// `/proc/PID/comm`.
  public var command: String
  /// `/proc/PID/cmdline`, program first.
  public var arguments: [String]
  /// Its control group (`/system.slice/openvpn-client@work.service`), when it has one.
  public var controlGroup: String?
  public var standing: Standing

  public init(
    pid: Int32, startTime: UInt64?, command: String, arguments: [String], controlGroup: String?, standing: Standing
  ) {
    self.pid = pid
    self.startTime = startTime
    self.command = command
    self.arguments = arguments
    self.controlGroup = controlGroup
    self.standing = standing
  }

  /// "openvpn (pid 812)", made safe for a terminal.
  public var described: String { "\(TerminalText.sanitize(command)) (pid \(pid))" }

  /// Whether root may take this process for a tunnel's manager and believe its arguments.
  public var mayBeManager: Bool { standing != .unprivileged }

  /// Whether the walk of /proc should read a process's descriptors: it may have standing (root;
  /// a system service's, for systemd to confirm; a child of root's NetworkManager VPN plugin).
  /// Asked before anything costly, so what other users hold open costs nothing.
  public static func mayHaveStanding(userIDs: [UInt32]?, controlGroup: String?, pluginParent: Bool) -> Bool {
    if let userIDs, userIDs.count == 4, userIDs.allSatisfy({ $0 == 0 }) { return true }
    return pluginParent || systemService(controlGroup) != nil
  }

  /// Whether a program is one of NetworkManager's VPN plugins (`nm-openvpn-service`): it lies
  /// in NetworkManager's own directory, which only root can write.
  public static func isNetworkManagerPlugin(executable: String) -> Bool {
    ["/usr/lib/NetworkManager/", "/usr/libexec/"].contains { executable.hasPrefix($0) }
      && executable.split(separator: "/").last?.hasPrefix("nm-") == true
  }

  /// OpenVPN's `--management PATH unix` (the socket it answers on), if it was given one.
  public var managementSocket: String? {
    guard let index = arguments.firstIndex(of: "--management"), index + 2 < arguments.count,
      arguments[index + 2] == "unix"
    else { return nil }
    return arguments[index + 1]
  }

  /// The UUID of the NetworkManager connection whose OpenVPN plugin started this process: its
  /// management socket is `/var/run/NetworkManager/nm-openvpn-UUID`. Believed only from a
  /// process the plugin started (`standing`), and only for a VPN NetworkManager says is active.
  public var networkManagerConnection: String? {
    guard standing == .networkManagerPlugin, let socket = managementSocket,
      let slash = socket.lastIndex(of: "/")
    else { return nil }
    let file = socket[socket.index(after: slash)...]
    guard file.hasPrefix("nm-openvpn-") else { return nil }
    let uuid = String(file.dropFirst("nm-openvpn-".count))
    return ManagerName.isUUID(uuid) ? uuid : nil
  }

  /// The systemd service it runs in, when its control group is a system service's.
  public var systemdUnit: String? { Self.systemService(controlGroup) }

  /// The service a control group belongs to: `/system.slice/[….slice/]NAME.service[/…]`. A
  /// login session's `.scope`, and anything under `/user.slice` — where a user's own systemd
  /// may name a unit anything, `openvpn-client@work.service` too — are not system services.
  public static func systemService(_ controlGroup: String?) -> String? {
    guard let group = controlGroup, group.hasPrefix("/system.slice/") else { return nil }
    let parts = group.split(separator: "/").dropFirst()
    for part in parts {
      if part.hasSuffix(".service") { return String(part) }
      guard part.hasSuffix(".slice") else { return nil }
    }
    return nil
  }

  /// wireguard-go, holding its tun (proven by the descriptor, not by its arguments).
  public var isWireGuardGo: Bool { command == "wireguard-go" }
}

/// An active NetworkManager VPN connection (a plugin's: OpenVPN, …), as NetworkManager lists it.
/// NetworkManager does not say which tun its plugin made; the plugin's own process does
/// (`TunnelProcess.networkManagerConnection`), and NetworkManager confirms the connection is one
/// of its active VPNs.
public struct NetworkManagerConnection: Hashable, Sendable {
  public var uuid: String
  public var name: String?
  /// NetworkManager's type (`vpn`).
  public var type: String

  public init(uuid: String, name: String?, type: String) {
    self.uuid = uuid
    self.name = name
    self.type = type
  }
}

/// NetworkManager's view of one device (`nmcli -t -f DEVICE,STATE,CONNECTION,CON-UUID device`).
public struct NetworkManagerDevice: Hashable, Sendable {
  public var device: InterfaceName
  /// `connected`, `connected (externally)`, `disconnected`, `unmanaged`, …
  public var state: String
  public var connection: String?
  public var uuid: String?

  public init(device: InterfaceName, state: String, connection: String?, uuid: String?) {
    self.device = device
    self.state = state
    self.connection = connection
    self.uuid = uuid
  }

  /// NM only watches a device someone else configured (wg-quick's, OpenVPN's): its "connection"
  /// is one NM generated to describe it, not one it manages.
  public var isExternal: Bool { state.contains("externally") }
}

/// What was found about one tunnel, from the kernel, /proc, NetworkManager, systemd and the file
/// system: what `TunnelManager.identify` decides on.
public struct ManagerEvidence: Hashable, Sendable {
  public var interface: InterfaceName
  /// The netlink link kind (`tun`, `wireguard`), when known.
  public var linkKind: String?
  /// The processes holding the tun (the device itself, in this network namespace) that may have
  /// standing, with it.
  public var holders: [TunnelProcess]
  /// NetworkManager's device of that name, when NetworkManager runs and knows it.
  public var networkManager: NetworkManagerDevice?
  /// NetworkManager's active VPN connections, by UUID.
  public var networkManagerVPNs: [String: NetworkManagerConnection]
  /// Whether systemd is the init system here (`/run/systemd/system` exists).
  public var systemdRunning: Bool
  /// Units systemd says are active for the name (`wg-quick@wg0.service`, …).
  public var activeUnits: [String]
  /// A unit the configuration names for this tunnel, when systemd says it is active.
  public var configuredUnit: String?
  /// The wg-quick configuration file for the name, when one exists that root may run (it and
  /// its directories are root's and writable by no one else).
  public var wgQuickConfig: String?
  /// Why a configuration file that exists was not used, when one was not.
  public var wgQuickConfigRefused: String?
  /// Where it was looked for (for the words when there is none).
  public var wgQuickConfigSearched: String

  public init(
    interface: InterfaceName, linkKind: String? = nil, holders: [TunnelProcess] = [],
    networkManager: NetworkManagerDevice? = nil, networkManagerVPNs: [String: NetworkManagerConnection] = [:],
    systemdRunning: Bool = false, activeUnits: [String] = [], configuredUnit: String? = nil,
    wgQuickConfig: String? = nil, wgQuickConfigRefused: String? = nil, wgQuickConfigSearched: String = ""
  ) {
    self.interface = interface
    self.linkKind = linkKind
    self.holders = holders
    self.networkManager = networkManager
    self.networkManagerVPNs = networkManagerVPNs
    self.systemdRunning = systemdRunning
    self.activeUnits = activeUnits
    self.configuredUnit = configuredUnit
    self.wgQuickConfig = wgQuickConfig
    self.wgQuickConfigRefused = wgQuickConfigRefused
    self.wgQuickConfigSearched = wgQuickConfigSearched
  }

  /// The well-known units that manage a tunnel named NAME, in Debian's packages.
  public static func wellKnownUnits(for interface: InterfaceName) -> [String] {
    let name = systemdEscaped(interface)
    return ["wg-quick@\(name).service", "openvpn-client@\(name).service", "openvpn@\(name).service"]
  }

  /// The tunnel a well-known unit brings up: `wg-quick@wg0.service` → wg0 (the instance name,
  /// `\xHH` unescaped); nil for any other unit (`openvpn-client@work` names a configuration, not
  /// a device).
  public static func wgQuickDevice(of unit: String) -> InterfaceName? {
    let prefix = "wg-quick@"
    let suffix = ".service"
    guard unit.hasPrefix(prefix), unit.hasSuffix(suffix), unit.count > prefix.count + suffix.count else { return nil }
    let instance = Array(unit.utf8.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count))
    var bytes: [UInt8] = []
    var index = 0
    while index < instance.count {
      if instance[index] == 0x5C, index + 3 < instance.count, instance[index + 1] == 0x78,
        let high = hexValue(instance[index + 2]), let low = hexValue(instance[index + 3])
      {
        bytes.append(high << 4 | low)
        index += 4
      } else {
        bytes.append(instance[index])
        index += 1
      }
    }
    return InterfaceName(bytes: bytes)
  }

  /// An interface name as a systemd instance name (`systemd-escape`): letters, digits, `:`, `_`
  /// and `.` (not first) stay, every other byte becomes `\xHH` (a dash would mean a slash).
  public static func systemdEscaped(_ interface: InterfaceName) -> String {
    var result = ""
    for (offset, byte) in interface.bytes.enumerated() {
      let plain =
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        || byte == 0x3A || byte == 0x5F || (byte == 0x2E && offset > 0)
      if plain {
        result.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        let hex = String(byte, radix: 16)
        result += "\\x" + (hex.count == 1 ? "0" + hex : hex)
      }
    }
    return result
  }
}

/// The names vpnstat hands to a manager's program, checked first: a name that could be taken for
/// an option or that holds a control character never reaches `systemctl` or `nmcli`.
public enum ManagerName {
  /// Nil when `unit` is a name systemd accepts for a service vpnstat may pass on (systemd's
  /// characters — letters, digits, `:-_.@\` — at most 255 bytes, not starting with `-` or `.`),
  /// else why not.
  public static func unitProblem(_ unit: String) -> String? {
    let bytes = Array(unit.utf8)
    guard !bytes.isEmpty else { return "a unit name is empty" }
    guard bytes.count <= 255 else { return "a unit name is at most 255 bytes" }
    guard bytes[0] != 0x2D, bytes[0] != 0x2E else {
      return
        "'\(TerminalText.sanitize(unit))' starts with '\(Character(Unicode.Scalar(bytes[0])))': not a unit name vpnstat passes on"
    }
    let allowed = bytes.allSatisfy {
      (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
        || [0x3A, 0x2D, 0x5F, 0x2E, 0x40, 0x5C].contains($0)
    }
    guard allowed else {
      return "'\(TerminalText.sanitize(unit))' is not a systemd unit name (letters, digits and :-_.@\\ only)"
    }
    return nil
  }

  /// Whether `uuid` is a UUID as NetworkManager writes one (hex digits and dashes, 8-4-4-4-12).
  public static func isUUID(_ uuid: String) -> Bool {
    let bytes = Array(uuid.utf8)
    guard bytes.count == 36 else { return false }
    for (index, byte) in bytes.enumerated() {
      if [8, 13, 18, 23].contains(index) {
        guard byte == 0x2D else { return false }
      } else {
        guard (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte) else {
          return false
        }
      }
    }
    return true
  }
}
