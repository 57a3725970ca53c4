import Foundation

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
  }
  let kernel: FakeKernel
  private let lock = NSLock()
  private(set) var connections: [String: Connection] = [:]
  private(set) var commands: [[String]] = []
  /// `connection down` fails (exit 1) without doing anything.
  var refusesDown = false
  /// `connection down` takes the device away but NM goes on listing the connection as active.
  var staysActive = false

  init(_ kernel: FakeKernel) { self.kernel = kernel }

  func add(uuid: String, name: String, device: String, autoconnect: Bool) {
    lock.withLock {
      connections[uuid] = Connection(name: name, device: device, autoconnect: autoconnect, active: false)
    }
  }

  /// `nmcli connection up`: the device appears, up; returns the kernel's notification.
  func up(_ uuid: String) -> LinkNotifications.Change {
    let device = lock.withLock { () -> String in
      connections[uuid]!.active = true
      return connections[uuid]!.device
    }
    return kernel.add(device, up: true)
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
    case ["-t", "-f", "DEVICE,STATE,CONNECTION,CON-UUID", "device"]:
      let lines = lock.withLock {
        connections.filter(\.value.active).map { "\($0.value.device):connected:\($0.value.name):\($0.key)\n" }
      }
      return ok(lines.sorted().joined())
    default:
      return fail("unexpected command \(arguments)")
    }
  }
}

/// wg-quick on the fake kernel: `wg-quick down CONF` deletes the device named like the file
/// (or fails, as it does when the device is not a WireGuard interface it can reach).
final class FakeWgQuick: ProgramRunner, @unchecked Sendable {
  let kernel: FakeKernel
  var fails = false
  private(set) var commands: [[String]] = []
  init(_ kernel: FakeKernel) { self.kernel = kernel }

  func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    commands.append(arguments)
    guard arguments.count == 3, arguments[0] == "wg-quick", arguments[1] == "down" else {
      return ProgramRun(outcome: .failedToStart(.noSuchFile))
    }
    let name = String(arguments[2].split(separator: "/").last!.dropLast(".conf".count))
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
