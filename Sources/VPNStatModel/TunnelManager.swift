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
    /// The process holding the tun (OpenVPN, wireguard-go, NetworkManager's OpenVPN plugin).
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
  /// NM's OpenVPN plugin holding the tun), then a systemd service (the holder's control group, or
  /// a unit systemd says is active for the name — only where systemd runs), then wg-quick (a
  /// WireGuard device with a configuration file), then an OpenVPN process holding the tun; else
  /// none. NetworkManager must come before systemd: the processes of its VPN plugins live in
  /// NetworkManager.service's control group.
  public static func identify(_ evidence: ManagerEvidence) -> TunnelManager {
    let name = evidence.interface.terminalText
    if let device = evidence.networkManager, !device.isExternal, let uuid = device.uuid {
      return TunnelManager(
        kind: .networkManager, id: uuid, foundBy: .networkManager,
        evidence: "NetworkManager: connection '\(device.connection ?? uuid)' is active on \(name)",
        connectionName: device.connection)
    }
    for holder in evidence.holders {
      if let uuid = holder.networkManagerConnection {
        return TunnelManager(
          kind: .networkManager, id: uuid, foundBy: .holder,
          evidence:
            "\(holder.described) holds \(name) for NetworkManager (management socket nm-openvpn-\(uuid))",
          process: holder)
      }
    }
    if evidence.systemdRunning {
      for holder in evidence.holders {
        if let unit = holder.systemdUnit, unit != "NetworkManager.service" {
          return TunnelManager(
            kind: .systemd, id: unit, foundBy: .controlGroup,
            evidence: "\(holder.described) holding \(name) runs in \(unit)",
            process: holder)
        }
      }
      if let unit = evidence.configuredUnit ?? evidence.activeUnits.first {
        let why = evidence.configuredUnit != nil ? "named in the configuration" : "active, by its name"
        return TunnelManager(kind: .systemd, id: unit, foundBy: .unit, evidence: "systemd unit \(unit) (\(why))")
      }
    }
    let wireGuard = evidence.holders.first { $0.isWireGuardGo(for: evidence.interface) }
    let isWireGuard = evidence.linkKind == "wireguard" || wireGuard != nil
    if isWireGuard, let config = evidence.wgQuickConfig {
      let device = wireGuard.map { "\($0.described) holds \(name)" } ?? "\(name) is a WireGuard device"
      return TunnelManager(
        kind: .wgQuick, id: config, foundBy: wireGuard == nil ? .kind : .holder, evidence: "\(device); \(config)",
        process: wireGuard)
    }
    if let openVPN = evidence.holders.first(where: { $0.command == "openvpn" }) {
      let socket = openVPN.managementSocket
      return TunnelManager(
        kind: .openVPN, id: socket ?? "pid \(openVPN.pid)", foundBy: .holder,
        evidence: "\(openVPN.described) holds \(name)"
          + (socket.map { "; management socket \($0)" } ?? "; no management socket"),
        process: openVPN)
    }
    let why: String
    if isWireGuard {
      why = "\(name) is a WireGuard device without a wg-quick configuration (\(evidence.wgQuickConfigSearched))"
    } else if let holder = evidence.holders.first {
      why = "\(holder.described) holds \(name), not a manager vpnstat knows"
    } else if evidence.linkKind == "tun" {
      why = "no process holds \(name)"
    } else {
      why = "no manager found for \(name)" + (evidence.linkKind.map { " (kind \($0))" } ?? "")
    }
    return TunnelManager(kind: .none, id: nil, foundBy: evidence.holders.isEmpty ? .nothing : .holder, evidence: why)
  }
}

/// A process holding a tun open (found through `/proc/PID/fdinfo`'s `iff:` line): who it is.
public struct TunnelProcess: Hashable, Sendable {
  public var pid: Int32
  /// When it started (clock ticks after boot): with the pid, who it is even if the pid is reused.
  public var startTime: UInt64?
  /// `/proc/PID/comm`.
  public var command: String
  /// `/proc/PID/cmdline`, program first.
  public var arguments: [String]
  /// Its control group (`/system.slice/openvpn-client@work.service`), when it has one.
  public var controlGroup: String?

  public init(pid: Int32, startTime: UInt64?, command: String, arguments: [String], controlGroup: String?) {
    self.pid = pid
    self.startTime = startTime
    self.command = command
    self.arguments = arguments
    self.controlGroup = controlGroup
  }

  /// "openvpn (pid 812)", made safe for a terminal.
  public var described: String { "\(TerminalText.sanitize(command)) (pid \(pid))" }

  /// OpenVPN's `--management PATH unix` (the socket it answers on), if it was given one.
  public var managementSocket: String? {
    guard let index = arguments.firstIndex(of: "--management"), index + 2 < arguments.count,
      arguments[index + 2] == "unix"
    else { return nil }
    return arguments[index + 1]
  }

  /// The UUID of the NetworkManager connection whose OpenVPN plugin started this process: its
  /// management socket is `/var/run/NetworkManager/nm-openvpn-UUID`.
  public var networkManagerConnection: String? {
    guard let socket = managementSocket, let slash = socket.lastIndex(of: "/") else { return nil }
    let file = socket[socket.index(after: slash)...]
    guard file.hasPrefix("nm-openvpn-"), file.count > "nm-openvpn-".count else { return nil }
    return String(file.dropFirst("nm-openvpn-".count))
  }

  /// The systemd service it runs in: the last part of its control group when that names a
  /// `.service` (a login session's `.scope` is not one).
  public var systemdUnit: String? {
    guard let group = controlGroup, let last = group.split(separator: "/").last, last.hasSuffix(".service")
    else { return nil }
    return String(last)
  }

  /// wireguard-go serving `interface` (`wireguard-go wg0`).
  public func isWireGuardGo(for interface: InterfaceName) -> Bool {
    command == "wireguard-go" && arguments.dropFirst().contains { InterfaceName($0) == interface }
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
  /// The processes holding the tun in this network namespace.
  public var holders: [TunnelProcess]
  /// NetworkManager's device of that name, when NetworkManager runs and knows it.
  public var networkManager: NetworkManagerDevice?
  /// Whether systemd is the init system here (`/run/systemd/system` exists).
  public var systemdRunning: Bool
  /// Units systemd says are active for the name (`wg-quick@wg0.service`, …).
  public var activeUnits: [String]
  /// A unit the configuration names for this tunnel, when systemd says it is active.
  public var configuredUnit: String?
  /// The wg-quick configuration file for the name, when one exists.
  public var wgQuickConfig: String?
  /// Where it was looked for (for the words when there is none).
  public var wgQuickConfigSearched: String

  public init(
    interface: InterfaceName, linkKind: String? = nil, holders: [TunnelProcess] = [],
    networkManager: NetworkManagerDevice? = nil, systemdRunning: Bool = false, activeUnits: [String] = [],
    configuredUnit: String? = nil, wgQuickConfig: String? = nil, wgQuickConfigSearched: String = ""
  ) {
    self.interface = interface
    self.linkKind = linkKind
    self.holders = holders
    self.networkManager = networkManager
    self.systemdRunning = systemdRunning
    self.activeUnits = activeUnits
    self.configuredUnit = configuredUnit
    self.wgQuickConfig = wgQuickConfig
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
