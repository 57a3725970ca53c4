import Foundation
import VPNStatSystem

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatSystem

/// NetworkManager as `nmcli` shows it, played on the fake kernel: connections with a device name,
/// autoconnect and an active flag. `connection down` deletes the device (NM's tun goes with its
/// connection), `up` creates it up. Every command run is kept, in order.
final class FakeNetworkManager: ProgramRunner, @unchecked Sendable {
  struct Connection {
    var name: String
    var device: String
    var autoconnect: Bool
    var active: Bool
    var type = "tun"
    /// The D-Bus path of its activation: a new one each `up`.
    var path = ""
    /// How many more state queries answer `activating` before `activated`.
    var activating = 0
  }
  let kernel: FakeKernel
  private let lock = NSLock()
  private(set) var connections: [String: Connection] = [:]
  private(set) var commands: [[String]] = []
  /// `connection down` fails (exit 1) without doing anything.
  var refusesDown = false
  /// `connection down` takes the device away but NM goes on listing the connection as active.
  var staysActive = false
  /// `connection up` fails (exit 4) as an activation that fails at once does.
  var refusesUp = false
  /// After `connection up`, state queries answer `activating` this many times first.
  var activatingQueries = 0
  /// `connection up` is accepted, then NetworkManager drops the activation (no longer active).
  var dropsActivation = false
  private var activations = 0

  init(_ kernel: FakeKernel) { self.kernel = kernel }

  func add(uuid: String, name: String, device: String, autoconnect: Bool, type: String = "tun") {
    lock.withLock {
      connections[uuid] = Connection(
        name: name, device: device, autoconnect: autoconnect, active: false, type: type)
    }
  }

  /// `nmcli connection up`: a new activation (a new D-Bus path), the device appears, up;
  /// returns the kernel's notification.
  func up(_ uuid: String) -> LinkNotifications.Change {
    let device = lock.withLock { () -> String in
      activations += 1
      connections[uuid]!.active = true
      connections[uuid]!.path = "/org/freedesktop/NetworkManager/ActiveConnection/\(activations)"
      connections[uuid]!.activating = activatingQueries
      return connections[uuid]!.device
    }
    if let index = kernel.index(of: device) { _ = kernel.delete(index) }
    return kernel.add(device, up: true)
  }

  /// A value as `nmcli -t` writes it: colons and backslashes escaped, newlines not.
  static func terse(_ value: String) -> String {
    value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ":", with: "\\:")
  }

  func autoconnect(_ uuid: String) -> Bool { lock.withLock { connections[uuid]!.autoconnect } }
  func isActive(_ uuid: String) -> Bool { lock.withLock { connections[uuid]!.active } }

  func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    lock.withLock { commands.append(arguments) }
    guard arguments.first == "nmcli" else { return ProgramRun(outcome: .failedToStart(.noSuchFile)) }
    let words = Array(arguments.dropFirst())
    func ok(_ output: String = "") -> ProgramRun { ProgramRun(outcome: .exited(0), output: output) }
    func fail(_ message: String) -> ProgramRun { ProgramRun(outcome: .exited(10), errors: "Error: \(message)\n") }
    let last = words.last ?? ""
    let fifth = words.count > 4 ? words[4] : ""
    switch words {
    case ["--wait", "10", "connection", "down", "uuid", last]:
      let uuid = last
      if refusesDown { return fail("not authorized to deactivate connections") }
      guard let connection = lock.withLock({ connections[uuid] }), connection.active else {
        return fail("'\(uuid)' is not an active connection.")
      }
      if let index = kernel.index(of: connection.device) { _ = kernel.delete(index) }
      if !staysActive { lock.withLock { connections[uuid]!.active = false } }
      return ok("Connection '\(connection.name)' successfully deactivated\n")
    case ["-t", "-f", "UUID", "connection", "show", "--active"]:
      return ok(lock.withLock { connections.filter(\.value.active).keys.sorted().map { $0 + "\n" }.joined() })
    case ["-g", "connection.autoconnect", "connection", "show", "uuid", last]:
      guard let connection = lock.withLock({ connections[last] }) else { return fail("no such connection") }
      return ok(connection.autoconnect ? "yes\n" : "no\n")
    case ["connection", "modify", "--temporary", "uuid", fifth, "connection.autoconnect", last]:
      guard lock.withLock({ connections[fifth] }) != nil else { return fail("no such connection") }
      lock.withLock { connections[fifth]!.autoconnect = last == "yes" }
      return ok()
    case ["--wait", "0", "connection", "up", "uuid", last]:
      guard lock.withLock({ connections[last] }) != nil else { return fail("unknown connection '\(last)'.") }
      if refusesUp { return ProgramRun(outcome: .exited(4), errors: "Error: Connection activation failed: no\n") }
      _ = up(last)
      if dropsActivation { lock.withLock { connections[last]!.active = false } }
      return ok()
    case ["-t", "-f", "GENERAL.STATE,GENERAL.IP-IFACE,GENERAL.DBUS-PATH", "connection", "show", "uuid", last]:
      let answer = lock.withLock { () -> String? in
        guard let connection = connections[last] else { return nil }
        guard connection.active else { return "" }
        let state = connection.activating > 0 ? "activating" : "activated"
        connections[last]!.activating = max(0, connection.activating - 1)
        return "GENERAL.STATE:\(state)\nGENERAL.IP-IFACE:\(connection.device)\nGENERAL.DBUS-PATH:\(connection.path)\n"
      }
      guard let answer else { return fail("\(last) - no such connection profile.") }
      return ok(answer)
    case ["-t", "-f", "UUID,TYPE,NAME", "connection", "show"]:
      let lines = lock.withLock { connections.map { "\($0.key):\($0.value.type):\(Self.terse($0.value.name))\n" } }
      return ok(lines.sorted().joined())
    case ["-t", "-f", "UUID,TYPE,NAME", "connection", "show", "--active"]:
      let lines = lock.withLock {
        connections.filter(\.value.active).map { "\($0.key):\($0.value.type):\(Self.terse($0.value.name))\n" }
      }
      return ok(lines.sorted().joined())
    case ["-t", "-f", "DEVICE,STATE,CON-UUID,CONNECTION", "device"]:
      // A VPN's device is the link under it; its tun shows as connected externally.
      let lines = lock.withLock {
        connections.filter(\.value.active).map { uuid, connection in
          connection.type == "vpn"
            ? "\(connection.device):connected (externally):0e0e0e0e-0000-4000-8000-00000000000e:\(connection.device)\n"
            : "\(connection.device):connected:\(uuid):\(Self.terse(connection.name))\n"
        }
      }
      return ok(lines.sorted().joined())
    case _ where words.starts(with: ["-t", "-f", "GENERAL.UUID,GENERAL.IP-IFACE", "connection", "show"]):
      let uuids = words.dropFirst(5).enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
      let answer = lock.withLock {
        uuids.compactMap { uuid in
          connections[uuid].map { "GENERAL.UUID:\(uuid)\nGENERAL.IP-IFACE:\($0.active ? $0.device : "")\n" }
        }.joined(separator: "\n")
      }
      return ok(answer)
    default:
      return fail("unexpected command \(arguments)")
    }
  }
}

/// wg-quick on the fake kernel: `wg-quick down CONF` deletes the device named like the file
/// (or fails, as it does when the device is not a WireGuard interface it can reach); `up CONF`
/// makes it, up (or fails, as its PreUp gate or an existing device make it).
final class FakeWgQuick: ProgramRunner, @unchecked Sendable {
  let kernel: FakeKernel
  var fails = false
  /// `up` fails with this on stderr (exit 1), creating nothing.
  var upRefusal: String?
  private(set) var commands: [[String]] = []
  init(_ kernel: FakeKernel) { self.kernel = kernel }

  func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    commands.append(arguments)
    guard arguments.count == 3, arguments[0] == "wg-quick", ["up", "down"].contains(arguments[1]) else {
      return ProgramRun(outcome: .failedToStart(.noSuchFile))
    }
    let name = String(arguments[2].split(separator: "/").last!.dropLast(".conf".count))
    if arguments[1] == "up" {
      if let upRefusal { return ProgramRun(outcome: .exited(1), errors: "[#] \(upRefusal)\n\(upRefusal)\n") }
      if kernel.index(of: name) != nil {
        return ProgramRun(outcome: .exited(1), errors: "wg-quick: `\(name)' already exists\n")
      }
      kernel.add(name, up: true, kind: "wireguard")
      return ProgramRun(outcome: .exited(0), errors: "[#] ip link set mtu 1420 up dev \(name)\n")
    }
    if fails {
      return ProgramRun(outcome: .exited(1), errors: "wg-quick: `\(name)' is not a WireGuard interface\n")
    }
    if let index = kernel.index(of: name) { _ = kernel.delete(index) }
    return ProgramRun(outcome: .exited(0), errors: "[#] ip link delete dev \(name)\n")
  }
}

/// A detector that names the manager the test says.
struct FixedDetector: ManagerDetecting {
  var manager: TunnelManager
  func managers(of links: [(name: InterfaceName, kind: String?)]) -> [InterfaceName: TunnelManager] {
    Dictionary(uniqueKeysWithValues: links.map { ($0.name, manager) })
  }
}
