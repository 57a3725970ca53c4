import VPNStatModel

/// A NetworkManager connection, driven with `nmcli` by its UUID: deactivated the way
/// NetworkManager expects (a bare link-down leaves it "activated"), its autoconnect held off for
/// the pause with `--temporary` (in memory only: a restart of NetworkManager brings back the
/// user's saved value), confirmed when the UUID is no longer among the active connections.
///
/// Started with `nmcli --wait 0 connection up`: nmcli returns once NetworkManager took the
/// request (an unknown connection or an activation that fails at once is refused there), and
/// `connect` then waits for the activation to reach `activated`.
package struct NetworkManagerControl: TunnelControl {
  package let uuid: String
  package let runner: any ProgramRunner
  package let manager: TunnelManager?
  /// NetworkManager's type of the connection (`tun`, `wireguard`, `vpn`), when known: what else
  /// proves it real beyond NetworkManager's word.
  package let connectionType: String?
  package init(uuid: String, manager: TunnelManager? = nil, connectionType: String? = nil, runner: any ProgramRunner) {
    self.uuid = uuid
    self.manager = manager
    self.connectionType = connectionType
    self.runner = runner
  }
  package var label: String {
    "networkmanager " + (manager?.connectionName.map { "'\(TerminalText.sanitize($0))' (\(uuid))" } ?? uuid)
  }

  /// The command lines, one place each (the tests read them).
  static func deactivate(_ uuid: String) -> [String] { ["nmcli", "--wait", "10", "connection", "down", "uuid", uuid] }
  static let activeConnections = ["nmcli", "-t", "-f", "UUID", "connection", "show", "--active"]
  static func readAutoconnect(_ uuid: String) -> [String] {
    ["nmcli", "-g", "connection.autoconnect", "connection", "show", "uuid", uuid]
  }
  static func setAutoconnect(_ uuid: String, _ value: String) -> [String] {
    ["nmcli", "connection", "modify", "--temporary", "uuid", uuid, "connection.autoconnect", value]
  }

  static func activate(_ uuid: String) -> [String] { ["nmcli", "--wait", "0", "connection", "up", "uuid", uuid] }
  /// The active connection of the UUID: `GENERAL.STATE:activated`, `GENERAL.IP-IFACE:nmtun0`,
  /// `GENERAL.DBUS-PATH:/org/freedesktop/NetworkManager/ActiveConnection/4`; nothing while it is
  /// not active.
  static func activeState(_ uuid: String) -> [String] {
    ["nmcli", "-t", "-f", "GENERAL.STATE,GENERAL.IP-IFACE,GENERAL.DBUS-PATH", "connection", "show", "uuid", uuid]
  }

  package func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    let run = runner.run(Self.deactivate(uuid), timeout: .seconds(15))
    return run.succeeded ? .done : .failed("nmcli connection down \(run.failure)")
  }

  package func start(timeout: Duration) -> StartOutcome {
    let run = runner.run(Self.activate(uuid), timeout: timeout)
    return run.succeeded ? .accepted : .refused("nmcli connection up \(run.failure)")
  }

  /// NetworkManager's view of the connection's activation now: nil while it is not active.
  package func activation() -> NetworkManagerActivation? {
    let run = runner.run(Self.activeState(uuid), timeout: .seconds(5))
    guard run.succeeded else { return nil }
    var fields: [String: String] = [:]
    for line in run.output.split(whereSeparator: \.isNewline) {
      guard let colon = line.firstIndex(of: ":") else { continue }
      fields[String(line[..<colon])] = String(line[line.index(after: colon)...])
    }
    guard let state = fields["GENERAL.STATE"], !state.isEmpty else { return nil }
    let device = fields["GENERAL.IP-IFACE"].flatMap { $0.isEmpty ? nil : InterfaceName($0) }
    return NetworkManagerActivation(state: state, device: device, path: fields["GENERAL.DBUS-PATH"] ?? "")
  }

  package func device() -> InterfaceName? { activation()?.device }

  /// NetworkManager's word; for a WireGuard connection also a handshake, since NetworkManager
  /// says `activated` once the device is configured, before any peer answered.
  package var proofs: [ConnectionProof] {
    [.networkManagerActivated(uuid: uuid)] + (connectionType == "wireguard" ? [.wireGuardHandshake(nil)] : [])
  }

  package func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? {
    let run = runner.run(Self.activeConnections, timeout: .seconds(5))
    guard run.succeeded else { return false }
    return !run.output.split(whereSeparator: \.isNewline).contains { $0 == uuid }
  }

  package func holdForPause() -> ManagerHold? {
    let current = runner.run(Self.readAutoconnect(uuid), timeout: .seconds(5))
    guard current.succeeded, current.output.trimmingASCIIWhitespace() == "yes" else { return nil }
    let held = runner.run(Self.setAutoconnect(uuid, "no"), timeout: .seconds(5))
    guard held.succeeded else { return nil }
    return ManagerHold(kind: .networkManager, id: uuid, setting: "connection.autoconnect", restore: "yes")
  }

  /// Gives back what `holdForPause` held; false when NetworkManager refused (or is gone).
  package static func release(_ hold: ManagerHold, runner: any ProgramRunner) -> Bool {
    runner.run(
      ["nmcli", "connection", "modify", "--temporary", "uuid", hold.id, hold.setting, hold.restore],
      timeout: .seconds(5)
    ).succeeded
  }

  /// `nmcli -t -f DEVICE,STATE,CON-UUID,CONNECTION device`: one device a record, the
  /// connection's name last (see `terseRecords`).
  static func parseDevices(_ output: String) -> [NetworkManagerDevice] {
    terseRecords(output, fields: 4).compactMap { fields in
      guard !fields[0].isEmpty else { return nil }
      let uuid = ManagerName.isUUID(fields[2]) ? fields[2] : nil
      return NetworkManagerDevice(
        device: InterfaceName(fields[0]), state: fields[1], connection: fields[3].isEmpty ? nil : fields[3],
        uuid: uuid)
    }
  }

  static let devices = ["nmcli", "-t", "-f", "DEVICE,STATE,CON-UUID,CONNECTION", "device"]
  /// The active connections: `UUID:TYPE:NAME`.
  static let activeConnectionTypes = ["nmcli", "-t", "-f", "UUID,TYPE,NAME", "connection", "show", "--active"]
  /// NetworkManager's active VPN connections (a plugin's: OpenVPN, …), by UUID. One `nmcli`.
  static func activeVPNs(runner: any ProgramRunner) -> [String: NetworkManagerConnection] {
    let active = runner.run(activeConnectionTypes, timeout: .seconds(5))
    guard active.succeeded else { return [:] }
    var vpns: [String: NetworkManagerConnection] = [:]
    for fields in terseRecords(active.output, fields: 3) where fields[1] == "vpn" && ManagerName.isUUID(fields[0]) {
      vpns[fields[0]] = NetworkManagerConnection(
        uuid: fields[0], name: fields[2].isEmpty ? nil : fields[2], type: fields[1])
    }
    return vpns
  }

  /// The records of `nmcli -t` output: fields split on colons that are not escaped (`\:`;
  /// `\\` is a backslash), one record a line. nmcli does not escape a newline, so where the last
  /// field is free text (a connection's name: `continuing`), a line without an unescaped colon
  /// continues the name that ends the record before it — a name can neither start a record nor
  /// end one early. Otherwise empty lines (between the connections `connection show` details)
  /// are skipped. A record without `fields` fields is dropped.
  static func terseRecords(_ output: String, fields count: Int, continuing: Bool = true) -> [[String]] {
    var records: [[String]] = []
    // The newline that ends the output ends the last record, not a name.
    let body = output.hasSuffix("\n") ? output.dropLast() : Substring(output)
    for line in body.split(separator: "\n", omittingEmptySubsequences: false) {
      let fields = splitTerse(String(line))
      if continuing, fields.count == 1, !records.isEmpty, records[records.count - 1].count == count {
        records[records.count - 1][count - 1] += "\n" + fields[0]
      } else if !line.isEmpty {
        records.append(fields)
      }
    }
    return records.filter { $0.count == count }
  }

  /// Splits one line of `nmcli -t` output on unescaped colons.
  static func splitTerse(_ line: String) -> [String] {
    var fields: [String] = []
    var current = ""
    var escaped = false
    for character in line {
      if escaped {
        current.append(character)
        escaped = false
      } else if character == "\\" {
        escaped = true
      } else if character == ":" {
        fields.append(current)
        current = ""
      } else {
        current.append(character)
      }
    }
    fields.append(current)
    return fields
  }
}

/// One activation of a NetworkManager connection: its state (`activating`, `activated`,
/// `deactivating`), the interface it configures, and its D-Bus path — new for every activation,
/// so a connection re-activated by `connect` is told from the one before.
package struct NetworkManagerActivation: Hashable, Sendable {
  package var state: String
  package var device: InterfaceName?
  package var path: String
}
