import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// Controls one tunnel through whatever manages it: NetworkManager, a systemd unit, wg-quick,
/// OpenVPN, or the kernel's link itself. One conformance per kind of manager; the enforcer's
/// disconnect and `vpnstat disconnect` are `stop` through one of them, `vpnstat connect` is
/// `start`.
///
/// `stop` and `start` only ask. Nothing they say proves the tunnel stopped or runs: a stop is
/// confirmed by the kernel (the device down or gone) and then `isStopped`, the manager's own
/// state; a start by its `proofs` (`ConnectionProbe`).
public protocol ManagerControl {
  /// A few words for logs and stop records: "wg-quick /etc/wireguard/wg0.conf".
  var label: String { get }
  /// The manager this control drives; nil for a command or the kernel alone.
  var manager: TunnelManager? { get }
  /// Asks the manager to stop the tunnel.
  func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome
  /// The manager's own word that the tunnel is stopped, once the kernel says the device is down
  /// (`deviceGone`: it no longer exists); nil when the manager has no state beyond the kernel's.
  func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool?
  /// Keeps the manager from bringing the tunnel back by itself during the pause; returns what to
  /// give back when the pause ends, or nil when nothing had to be held.
  func holdForPause() -> ManagerHold?
  /// Asks the manager to start the tunnel, waiting at most `timeout` for its answer: accepted
  /// is all a success says.
  func start(timeout: Duration) -> StartOutcome
  /// The interface the tunnel runs on, when the manager can say before or after a start
  /// (wg-quick's from its file name, NetworkManager's from the active connection).
  func device() -> InterfaceName?
  /// What proves a tunnel this control started is real, in order: all must hold.
  var proofs: [ConnectionProof] { get }
}

extension ManagerControl {
  public var manager: TunnelManager? { nil }
  public func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? { nil }
  public func holdForPause() -> ManagerHold? { nil }
  public func start(timeout: Duration) -> StartOutcome { .refused("\(label) cannot start a tunnel") }
  public func device() -> InterfaceName? { nil }
  public var proofs: [ConnectionProof] { [] }
}

/// What a manager said to a start. `connect` believes it only as far as "accepted": the tunnel
/// is real when its proofs hold.
public enum StartOutcome: Hashable, Sendable {
  case accepted
  case refused(String)
}

/// What an action said of itself. The enforcer believes the kernel and the manager, not this.
public enum DisconnectOutcome: Hashable, Sendable {
  case done
  case failed(String)
}

// MARK: - Running the managers' programs

/// How a manager's program (nmcli, systemctl, wg-quick) is run: through `ChildCommand`, or, in
/// tests, by a fake manager.
public protocol ProgramRunner {
  func run(_ arguments: [String], timeout: Duration) -> ProgramRun
}

/// How a program ended and what it printed.
public struct ProgramRun: Hashable, Sendable {
  public var outcome: ChildCommand.Outcome
  public var output: String
  public var errors: String

  public init(outcome: ChildCommand.Outcome, output: String = "", errors: String = "") {
    self.outcome = outcome
    self.output = output
    self.errors = errors
  }

  public var succeeded: Bool { outcome == .exited(0) }

  /// "exited with status 1: Error: …" — the outcome and the last line it wrote on stderr, made
  /// safe for a terminal.
  public var failure: String {
    let last = errors.split(whereSeparator: \.isNewline).last.map { ": " + TerminalText.sanitize(String($0)) } ?? ""
    return "\(outcome)\(last)"
  }
}

/// Runs programs as children (no shell, stdin from /dev/null, killed after the timeout),
/// keeping what they print. The environment is the enforcer's, so a program found by `PATH`
/// here is the one a person would run.
public struct ChildProgramRunner: ProgramRunner {
  public init() {}
  public func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    let finished = ChildCommand(arguments.map { Array($0.utf8) }, timeout: timeout).runKeepingOutput(limit: 1 << 16)
    return ProgramRun(
      outcome: finished.outcome, output: String(decoding: finished.output, as: UTF8.self),
      errors: String(decoding: finished.errors, as: UTF8.self))
  }
}

// MARK: - The kernel's link

/// No manager: the kernel's link is the tunnel. `link-down` clears its up flag, `delete`
/// removes it (a tun goes even while a process holds it); `connect` sets the up flag of
/// `tunnel` and waits for it to be running (a process attached to the tun).
public struct KernelLinkControl: ManagerControl {
  let links: any LinkController
  public let deleting: Bool
  /// The link `connect` raises (the enforcer's controls take the tunnel from `stop`).
  public let tunnel: InterfaceName?
  public init(links: any LinkController, deleting: Bool = false, tunnel: InterfaceName? = nil) {
    self.links = links
    self.deleting = deleting
    self.tunnel = tunnel
  }
  public var label: String { deleting ? "delete" : "link-down" }

  public func start(timeout: Duration) -> StartOutcome {
    guard let tunnel else { return .refused("no interface to raise") }
    do {
      guard let link = try links.link(named: tunnel) else { return .refused("\(tunnel.terminalText) does not exist") }
      try links.setUp(index: link.index)
      return .accepted
    } catch {
      return .refused("ip link set \(tunnel.terminalText) up: \(error)")
    }
  }

  public func device() -> InterfaceName? { tunnel }
  public var proofs: [ConnectionProof] { tunnel.map { [.linkRunning($0)] } ?? [] }

  public func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    do {
      guard let link = try links.link(named: tunnel) else { return .done }
      if deleting {
        try links.delete(index: link.index)
      } else {
        try links.setDown(index: link.index)
      }
      return .done
    } catch {
      return .failed("\(label): \(error)")
    }
  }
}

/// A configured command (`--exec nmcli connection down id work-vpn`): an argv with a timeout,
/// told which tunnel and why in `VPNSTAT_INTERFACE` and `VPNSTAT_REASON`. The arguments are
/// bytes, passed exactly as they were given; its output goes where the enforcer's goes.
public struct CommandControl: ManagerControl {
  public let arguments: [[UInt8]]
  public let timeout: Duration
  public init(arguments: [[UInt8]], timeout: Duration) {
    self.arguments = arguments
    self.timeout = timeout
  }
  public var label: String { "exec \(TerminalText.sanitize(argumentText(arguments.first ?? [])))" }

  public func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    let outcome = ChildCommand(
      arguments, environment: ["VPNSTAT_INTERFACE": tunnel.escaped, "VPNSTAT_REASON": reason.rawValue],
      timeout: timeout
    ).run()
    if outcome == .exited(0) { return .done }
    return .failed("\(label) \(outcome)")
  }
}

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

// MARK: - NetworkManager

/// A NetworkManager connection, driven with `nmcli` by its UUID: deactivated the way
/// NetworkManager expects (a bare link-down leaves it "activated"), its autoconnect held off for
/// the pause with `--temporary` (in memory only: a restart of NetworkManager brings back the
/// user's saved value), confirmed when the UUID is no longer among the active connections.
///
/// Started with `nmcli --wait 0 connection up`: nmcli returns once NetworkManager took the
/// request (an unknown connection or an activation that fails at once is refused there), and
/// `connect` then waits for the activation to reach `activated`.
public struct NetworkManagerControl: ManagerControl {
  public let uuid: String
  public let runner: any ProgramRunner
  public let manager: TunnelManager?
  /// NetworkManager's type of the connection (`tun`, `wireguard`, `vpn`), when known: what else
  /// proves it real beyond NetworkManager's word.
  public let connectionType: String?
  public init(uuid: String, manager: TunnelManager? = nil, connectionType: String? = nil, runner: any ProgramRunner) {
    self.uuid = uuid
    self.manager = manager
    self.connectionType = connectionType
    self.runner = runner
  }
  public var label: String {
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

  public func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    let run = runner.run(Self.deactivate(uuid), timeout: .seconds(15))
    return run.succeeded ? .done : .failed("nmcli connection down \(run.failure)")
  }

  public func start(timeout: Duration) -> StartOutcome {
    let run = runner.run(Self.activate(uuid), timeout: timeout)
    return run.succeeded ? .accepted : .refused("nmcli connection up \(run.failure)")
  }

  /// NetworkManager's view of the connection's activation now: nil while it is not active.
  public func activation() -> NetworkManagerActivation? {
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

  public func device() -> InterfaceName? { activation()?.device }

  /// NetworkManager's word; for a WireGuard connection also a handshake, since NetworkManager
  /// says `activated` once the device is configured, before any peer answered.
  public var proofs: [ConnectionProof] {
    [.networkManagerActivated(uuid: uuid)] + (connectionType == "wireguard" ? [.wireGuardHandshake(nil)] : [])
  }

  public func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? {
    let run = runner.run(Self.activeConnections, timeout: .seconds(5))
    guard run.succeeded else { return false }
    return !run.output.split(whereSeparator: \.isNewline).contains { $0 == uuid }
  }

  public func holdForPause() -> ManagerHold? {
    let current = runner.run(Self.readAutoconnect(uuid), timeout: .seconds(5))
    guard current.succeeded, current.output.trimmingASCIIWhitespace() == "yes" else { return nil }
    let held = runner.run(Self.setAutoconnect(uuid, "no"), timeout: .seconds(5))
    guard held.succeeded else { return nil }
    return ManagerHold(kind: .networkManager, id: uuid, setting: "connection.autoconnect", restore: "yes")
  }

  /// Gives back what `holdForPause` held; false when NetworkManager refused (or is gone).
  public static func release(_ hold: ManagerHold, runner: any ProgramRunner) -> Bool {
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
public struct NetworkManagerActivation: Hashable, Sendable {
  public var state: String
  public var device: InterfaceName?
  public var path: String
}

// MARK: - systemd

/// A systemd service (`wg-quick@wg0.service`, `openvpn-client@work.service`): stopped with
/// `systemctl stop`, which runs the unit's own ExecStop (wg-quick down for wg-quick@), confirmed
/// when `systemctl is-active` no longer says active.
public struct SystemdUnitControl: ManagerControl {
  public let unit: String
  public let runner: any ProgramRunner
  public let manager: TunnelManager?
  public init(unit: String, manager: TunnelManager? = nil, runner: any ProgramRunner) {
    self.unit = unit
    self.manager = manager
    self.runner = runner
  }
  public var label: String { "systemd \(TerminalText.sanitize(unit))" }

  // Every unit name goes after `--`: a name systemd accepts may still start with a dash.
  static func stopCommand(_ unit: String) -> [String] { ["systemctl", "stop", "--", unit] }
  static func stateCommand(_ units: [String]) -> [String] { ["systemctl", "is-active", "--"] + units }

  public func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    if let problem = ManagerName.unitProblem(unit) { return .failed(problem) }
    let run = runner.run(Self.stopCommand(unit), timeout: .seconds(30))
    return run.succeeded ? .done : .failed("systemctl stop \(run.failure)")
  }

  public func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? {
    ["inactive", "failed", "unknown"].contains(state())
  }

  /// What `systemctl is-active` says of the unit: `active`, `activating`, `inactive`, `failed`…
  public func state() -> String {
    runner.run(Self.stateCommand([unit]), timeout: .seconds(5)).output.trimmingASCIIWhitespace()
  }

  static func startCommand(_ unit: String) -> [String] { ["systemctl", "start", "--", unit] }

  /// Each unit's main process: `Id=…` and `MainPID=…` (in systemd's order), a blank line between
  /// units.
  static func mainProcessCommand(_ units: [String]) -> [String] {
    ["systemctl", "show", "--property=Id,MainPID", "--"] + units
  }

  /// `systemctl show --property=Id,MainPID` as unit → pid (0, no main process, left out).
  static func parseMainProcesses(_ output: String) -> [String: Int32] {
    var result: [String: Int32] = [:]
    for block in output.split(separator: "\n\n") {
      var unit: String?
      var pid: Int32?
      for line in block.split(separator: "\n") {
        if line.hasPrefix("Id=") { unit = String(line.dropFirst(3)) }
        if line.hasPrefix("MainPID=") { pid = Int32(line.dropFirst(8)) }
      }
      if let unit, let pid, pid > 0 { result[unit] = pid }
    }
    return result
  }

  /// `systemctl start` returns once the unit started (a oneshot such as `wg-quick@` once its
  /// ExecStart finished, OpenVPN's `Type=notify` units once it says so) or failed — a gate in
  /// ExecStartPre fails it here, with systemd's words.
  public func start(timeout: Duration) -> StartOutcome {
    if let problem = ManagerName.unitProblem(unit) { return .refused(problem) }
    let run = runner.run(Self.startCommand(unit), timeout: timeout)
    return run.succeeded ? .accepted : .refused("systemctl start \(run.failure)")
  }

  public func device() -> InterfaceName? { ManagerEvidence.wgQuickDevice(of: unit) }

  /// systemd's word; for `wg-quick@NAME`, a handshake on NAME too.
  public var proofs: [ConnectionProof] {
    [.unitActive(unit)] + (device().map { [.wireGuardHandshake($0)] } ?? [])
  }
}

// MARK: - wg-quick

/// A WireGuard tunnel brought up by wg-quick from its configuration: `wg-quick down CONFIG`
/// removes what `up` added — the fwmark rules, table 51820's routes, the nft table, DNS — and
/// the device. A bare link-down would leave the rules in place and send traffic outside the
/// tunnel. Confirmed when the device is gone: wg-quick deletes it last.
///
/// wg-quick runs the file's PreUp/PostDown lines as root: the file is one `ManagerDetector`
/// trusted, and it is named by its absolute path, which wg-quick cannot take for an option.
public struct WgQuickControl: ManagerControl {
  /// The configuration file's absolute path.
  public let configuration: String
  public let runner: any ProgramRunner
  public let manager: TunnelManager?
  public init(configuration: String, manager: TunnelManager? = nil, runner: any ProgramRunner) {
    self.configuration = configuration
    self.manager = manager
    self.runner = runner
  }
  public var label: String { "wg-quick \(TerminalText.sanitize(configuration))" }

  static func downCommand(_ configuration: String) -> [String] { ["wg-quick", "down", configuration] }

  /// Why the configuration is not handed to wg-quick, or nil.
  var problem: String? {
    configuration.hasPrefix("/") ? nil : "wg-quick is given configurations by absolute path only"
  }

  public func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    if let problem { return .failed(problem) }
    let run = runner.run(Self.downCommand(configuration), timeout: .seconds(30))
    return run.succeeded ? .done : .failed("wg-quick down \(run.failure)")
  }

  public func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? { deviceGone }

  static func upCommand(_ configuration: String) -> [String] { ["wg-quick", "up", configuration] }

  /// `wg-quick up` returns once the device is configured and up (its PreUp gate refuses here,
  /// with its words): a peer may not have answered yet.
  public func start(timeout: Duration) -> StartOutcome {
    if let problem { return .refused(problem) }
    let run = runner.run(Self.upCommand(configuration), timeout: timeout)
    return run.succeeded ? .accepted : .refused("wg-quick up \(run.failure)")
  }

  /// The interface wg-quick names after the file: `/etc/wireguard/wg0.conf` → wg0.
  public func device() -> InterfaceName? {
    var name = Substring(configuration)
    if let slash = name.lastIndex(of: "/") { name = name[name.index(after: slash)...] }
    if name.hasSuffix(".conf") { name = name.dropLast(".conf".count) }
    return name.isEmpty ? nil : InterfaceName(String(name))
  }

  public var proofs: [ConnectionProof] { [.wireGuardHandshake(device())] }
}

// MARK: - OpenVPN

/// An OpenVPN process holding the tun (running as root or in a system service, its tun proven
/// to be the device): stopped with `signal SIGTERM` on its management socket (so it exits the
/// way it was configured to — routes restored, down scripts run, the peer told), else with
/// SIGTERM to the process. The socket is used only when the kernel says that very process
/// serves it and no other user may write where it lies: a path in the arguments proves nothing
/// by itself. Confirmed when that process has exited.
public struct OpenVPNControl: ManagerControl {
  public let process: TunnelProcess
  public let manager: TunnelManager?
  public init(process: TunnelProcess, manager: TunnelManager? = nil) {
    self.process = process
    self.manager = manager
  }
  public var label: String { "openvpn (pid \(process.pid))" }

  /// OpenVPN has no manager of its own to start it: a process vpnstat started would be vpnstat's
  /// to supervise (its log, its restarts, its password prompts). It is started by systemd or
  /// NetworkManager, and connected through them.
  public func start(timeout: Duration) -> StartOutcome {
    .refused(
      "vpnstat does not start OpenVPN itself: start it through its systemd unit (openvpn-client@NAME) or NetworkManager, and connect that"
    )
  }

  public func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    var why = "no management socket"
    if let path = process.managementSocket {
      switch Self.signal(paths: Self.reachable(path, of: process.pid), served: process.pid) {
      case .success: return .done
      case .failure(let problem): why = "management socket \(TerminalText.sanitize(path)): \(problem)"
      }
    }
    do {
      try ProcessTable.terminate(process.pid, startTime: process.startTime)
      return .done
    } catch {
      return .failed("openvpn: \(why); SIGTERM to pid \(process.pid): \(error)")
    }
  }

  public func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? {
    guard ProcessTable.isRunning(process.pid) else { return true }
    return ProcessTable.startTime(of: process.pid) != process.startTime
  }

  /// Where the management socket can be reached from here: the path as given when the process
  /// shares this mount namespace, and through `/proc/PID/root` (or `cwd` for a relative path)
  /// for one in another (NetworkManager's plugin keeps its socket in its own /run). `/var/run`
  /// is spelled `/run`: it is an absolute symlink and would resolve in the caller's root.
  static func reachable(_ path: String, of pid: Int32) -> [String] {
    var inside = path
    if inside.hasPrefix("/var/run/") { inside = "/run/" + inside.dropFirst("/var/run/".count) }
    let base = inside.hasPrefix("/") ? "/proc/\(pid)/root" : "/proc/\(pid)/cwd/"
    let through = base + inside
    return ProcessTable.namespace("mnt", of: pid) == ProcessTable.namespace("mnt", of: nil)
      ? [path, through] : [through]
  }

  enum Answer {
    case success
    case failure(String)
  }

  /// `signal SIGTERM` on the first socket that `served` serves and that lies where no other
  /// user may write: OpenVPN greets with `>INFO:` and answers `SUCCESS: signal SIGTERM thrown`
  /// (lines end in CRLF). One bounded exchange: a socket that asks for a password takes the
  /// command for one and refuses, which is a failure too.
  static func signal(paths: [String], served: Int32) -> Answer {
    var problem = "unreachable"
    for path in paths {
      if let unsafe = DirectoryTrust.socketProblem(path) {
        problem = unsafe
        continue
      }
      do {
        let answer = try LocalSocketExchange.exchange(
          path: SystemPath(path), request: Array("signal SIGTERM\n".utf8), limit: 1 << 16, idle: .seconds(2),
          total: .seconds(3), peer: .process(served), isComplete: { Self.verdict($0) != nil })
        if Self.verdict(answer) == true { return .success }
        problem = TerminalText.sanitize(String(decoding: answer, as: UTF8.self).trimmingASCIIWhitespace())
      } catch .wrongPeer(let pid, _) {
        problem = "served by \(pid.map { "pid \($0)" } ?? "another process"), not by pid \(served): nothing sent"
      } catch {
        problem = "\(error)"
      }
    }
    return .failure(problem)
  }

  /// Whether the management interface's answer says the command was taken (`SUCCESS:`), refused
  /// (`ERROR:`), or nil while neither line has come.
  static func verdict(_ answer: [UInt8]) -> Bool? {
    for line in answer.split(separator: 0x0A) {
      if line.starts(with: Array("SUCCESS:".utf8)) { return true }
      if line.starts(with: Array("ERROR:".utf8)) { return false }
    }
    return nil
  }
}

extension String {
  /// The text without ASCII whitespace at either end (a program's answer ends in a newline).
  func trimmingASCIIWhitespace() -> String {
    String(decoding: Array(utf8).trimmingASCIIWhitespace(), as: UTF8.self)
  }
}
