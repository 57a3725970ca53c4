import Foundation
import Testing
import VPNStatSystem

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The programs of several managers at once, each answering its own command lines.
final class Managers: ProgramRunner, @unchecked Sendable {
  var programs: [String: any ProgramRunner] = [:]
  func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    guard let program = arguments.first, let runner = programs[program] else {
      return ProgramRun(outcome: .failedToStart(.noSuchFile))
    }
    return runner.run(arguments, timeout: timeout)
  }
}

/// systemd as `systemctl show -p LoadState`, `is-enabled` and `is-active` answer for the units
/// the test names.
final class FakeUnits: ProgramRunner, @unchecked Sendable {
  var loaded: Set<String> = []
  var enabled: Set<String> = []
  func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    let unit = arguments.last ?? ""
    switch Array(arguments.dropLast()) {
    // Every unit name must come after `--`: anything else is unexpected.
    case ["systemctl", "show", "--property=LoadState", "--value", "--"]:
      return ProgramRun(outcome: .exited(0), output: loaded.contains(unit) ? "loaded\n" : "not-found\n")
    case ["systemctl", "is-enabled", "--"]:
      return enabled.contains(unit)
        ? ProgramRun(outcome: .exited(0), output: "enabled\n")
        : ProgramRun(outcome: .exited(1), output: "disabled\n")
    case ["systemctl", "is-active", "--"]:
      return ProgramRun(outcome: .exited(3), output: "inactive\n")
    default:
      return ProgramRun(outcome: .exited(1), errors: "unexpected\n")
    }
  }
}

/// How a name given to connect/disconnect is resolved, and disconnect's stop and confirmation:
/// the real resolver, detector and controls over fake managers and the fake kernel.
struct TunnelControlTests {
  static let uuid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
  let kernel = FakeKernel()
  let clock = ManualTimeSource()
  let directory: TemporaryDirectory
  let managers = Managers()
  let nm: FakeNetworkManager
  let units = FakeUnits()

  init() throws {
    directory = try TemporaryDirectory("tunnelcontrol")
    nm = FakeNetworkManager(kernel)
    managers.programs = ["nmcli": nm, "systemctl": units, "wg-quick": FakeWgQuick(kernel)]
  }

  /// NetworkManager runs (the directory stands for /run/NetworkManager); systemd runs when asked
  /// (a directory of its own); wg-quick configurations are in `wireguard/`.
  func resolver(systemd: Bool = false) throws -> TunnelResolver {
    let wireguard = directory.file("wireguard")
    try FileManager.default.createDirectory(atPath: wireguard, withIntermediateDirectories: true)
    let systemdDirectory = directory.file("systemd")
    if systemd { try FileManager.default.createDirectory(atPath: systemdDirectory, withIntermediateDirectories: true) }
    let detector = ManagerDetector(
      runner: managers, wgQuickDirectories: [wireguard], procRoot: SystemPath(directory.file("no-proc")),
      networkManagerDirectory: directory.path, systemdDirectory: systemdDirectory)
    return TunnelResolver(detector: detector, links: FakeLinks(kernel: kernel))
  }

  func configuration(_ name: String) throws -> String {
    let path = directory.file("wireguard/\(name).conf")
    try FileManager.default.createDirectory(atPath: directory.file("wireguard"), withIntermediateDirectories: true)
    try Data("[Interface]\n".utf8).write(to: URL(fileURLWithPath: path))
    return path
  }

  // MARK: - Resolving NAME

  @Test(
    "a name that is a NetworkManager connection and a wg-quick configuration is ambiguous; --manager or the UUID decides"
  )
  func ambiguous() throws {
    nm.add(uuid: Self.uuid, name: "wg0", device: "wg0", autoconnect: false)
    let path = try configuration("wg0")
    let resolver = try resolver()
    do {
      _ = try resolver.resolve("wg0", kind: nil)
      Issue.record("resolved an ambiguous name")
    } catch {
      guard case .ambiguous(_, let candidates) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(Set(candidates.map(\.kind)) == [.networkManager, .wgQuick])
      let text = error.description
      #expect(text.contains("'wg0' names more than one tunnel"), "\(text)")
      #expect(text.contains(Self.uuid) && text.contains(path), "\(text)")
      #expect(text.contains("--manager networkmanager") && text.contains("--manager wg-quick"), "\(text)")
    }
    let wg = try resolver.resolve("wg0", kind: .wgQuick)
    #expect(wg.manager.id == path && wg.manager.foundBy == .configuration)
    #expect(wg.device == InterfaceName("wg0"))
    #expect(wg.control is WgQuickControl)
    let byUUID = try resolver.resolve(Self.uuid.uppercased(), kind: nil)
    #expect(byUUID.manager.kind == .networkManager && byUUID.manager.connectionName == "wg0")
    #expect((byUUID.control as? NetworkManagerControl)?.connectionType == "tun")
  }

  @Test(
    "two NetworkManager connections of one name: each kind said once, told apart by their UUIDs (it said '--manager networkmanager or --manager networkmanager')"
  )
  func ambiguousWithinOneKind() throws {
    let other = "f0e1d2c3-b4a5-4968-8776-655443322110"
    nm.add(uuid: Self.uuid, name: "work", device: "nmtun0", autoconnect: false)
    nm.add(uuid: other, name: "work", device: "nmtun1", autoconnect: false)
    let resolver = try resolver()
    let error = try #require(throws: TunnelNameError.self) { try resolver.resolve("work", kind: nil) }
    let text = error.description
    #expect(!text.contains("--manager networkmanager or --manager networkmanager"), "\(text)")
    #expect(
      text.hasSuffix("Choose one by giving the NetworkManager connection's UUID as NAME ('\(Self.uuid)' or '\(other)')")
        || text.hasSuffix(
          "Choose one by giving the NetworkManager connection's UUID as NAME ('\(other)' or '\(Self.uuid)')"),
      "\(text)")
    // And so it is: the UUID resolves to one.
    #expect(try resolver.resolve(other, kind: nil).manager.id == other)
    // Beside another kind: --manager for the kinds, each once, and the UUIDs for the two.
    let path = try configuration("work")
    let mixed = try #require(throws: TunnelNameError.self) { try resolver.resolve("work", kind: nil) }
    #expect(
      mixed.description.contains(
        "Choose one with --manager networkmanager or --manager wg-quick; or by giving the NetworkManager connection's UUID as NAME"
      ),
      "\(mixed.description)")
    #expect(mixed.description.contains(path))
  }

  @Test("NAME that is a kernel interface carries its class: a tunnel passes, a veth is NotATunnel, --class decides")
  func interfaceClass() throws {
    kernel.add("tun9", up: true)
    kernel.add("vx0", up: true, kind: "veth")
    let plain = try resolver()
    #expect(try plain.resolve("tun9", kind: nil).notATunnel == nil)
    let veth = try #require(try plain.resolve("vx0", kind: nil).notATunnel)
    #expect(veth.interfaceClass == .other && veth.evidence == .kind)
    #expect(veth.description.contains("vx0 is of class other (by its link kind), not a tunnel"), "\(veth)")
    #expect(veth.description.contains("--class vx0=tunnel") && veth.description.contains("`class = vx0=tunnel`"))
    var overridden = plain
    overridden.catalog = InterfaceCatalog(classifier: Classifier(overrides: [InterfaceName("vx0"): .tunnel]))
    #expect(try overridden.resolve("vx0", kind: nil).notATunnel == nil)
    // A connection, a unit or a configuration is a tunnel by definition: no class to judge.
    _ = try configuration("wgq")
    #expect(try plain.resolve("wgq", kind: nil).notATunnel == nil)
  }

  @Test("the same manager found twice (its configuration and the device it made) is one tunnel")
  func sameManagerOnce() throws {
    let path = try configuration("wg0")
    kernel.add("wg0", up: true, kind: "wireguard")
    let target = try resolver().resolve("wg0", kind: nil)
    #expect(target.manager.kind == .wgQuick && target.manager.id == path)
    #expect(target.device == InterfaceName("wg0"))
  }

  @Test("not found: says where it looked; a hostile name reaches no terminal raw")
  func notFound() throws {
    let resolver = try resolver()
    for name in ["nosuch", "evil\u{1B}[2Jname", "a/b.conf", "with space"] {
      do {
        _ = try resolver.resolve(name, kind: nil)
        Issue.record("found \(name)")
      } catch {
        guard case .notFound = error else {
          Issue.record("\(error)")
          continue
        }
        let text = error.description
        #expect(!text.contains("\u{1B}"), "\(text)")
        #expect(text.contains("no NetworkManager connection with that name or UUID"), "\(text)")
        #expect(text.contains("systemd does not run"), "\(text)")
      }
    }
    // Asked for a kind that is not there, though another is.
    _ = try configuration("wg1")
    #expect(throws: TunnelNameError.self) { try resolver.resolve("wg1", kind: .networkManager) }
    #expect(try resolver.resolve("wg1", kind: nil).manager.kind == .wgQuick)
  }

  @Test("a path to a wg-quick configuration is that configuration; its device is named after the file")
  func configurationPath() throws {
    let path = try configuration("wgp")
    let target = try resolver().resolve(path, kind: nil)
    #expect(target.manager.kind == .wgQuick && target.manager.id == path)
    #expect(target.device == InterfaceName("wgp"))
    #expect(target.control.proofs == [.wireGuardHandshake(InterfaceName("wgp"))])
  }

  @Test("where systemd runs: a unit by its name, and an enabled wg-quick@NAME beside wg-quick's own file is ambiguous")
  func systemd() throws {
    units.loaded = ["work-vpn.service"]
    units.enabled = ["wg-quick@wg0.service"]
    _ = try configuration("wg0")
    let resolver = try resolver(systemd: true)
    let unit = try resolver.resolve("work-vpn.service", kind: nil)
    #expect(unit.manager.kind == .systemd && unit.manager.id == "work-vpn.service")
    #expect(throws: TunnelNameError.self) { try resolver.resolve("wg0", kind: nil) }
    let chosen = try resolver.resolve("wg0", kind: .systemd)
    #expect(chosen.manager.id == "wg-quick@wg0.service")
    #expect(chosen.device == InterfaceName("wg0"))
    // A unit systemd does not know is no candidate.
    #expect(throws: TunnelNameError.self) { try resolver.resolve("other.service", kind: nil) }
  }

  @Test("an interface no manager runs is the kernel's link")
  func bareInterface() throws {
    kernel.add("tun9")
    let target = try resolver().resolve("tun9", kind: nil)
    #expect(target.manager.kind == TunnelManager.Kind.none)
    #expect(target.control.proofs == [.linkRunning(InterfaceName("tun9"))])
  }

  // MARK: - disconnect

  func disconnect(_ name: String, timeout: Duration = .seconds(10)) throws -> TunnelControlReport {
    let target = try resolver().resolve(name, kind: nil)
    return TunnelDisconnect(target, name: name, links: FakeLinks(kernel: kernel), clock: clock, timeout: timeout).run()
  }

  @Test("disconnect a NetworkManager connection by name: deactivated through nmcli, confirmed, never a link-down")
  func disconnectNetworkManager() throws {
    nm.add(uuid: Self.uuid, name: "vpnt", device: "nmtun0", autoconnect: true)
    _ = nm.up(Self.uuid)
    let report = try disconnect("vpnt")
    #expect(report.outcome == .disconnected, "\(report)")
    #expect(report.device == InterfaceName("nmtun0"))
    #expect(!nm.isActive(Self.uuid))
    #expect(kernel.setDownCalls == 0)
    #expect(nm.commands.contains(["nmcli", "--wait", "10", "connection", "down", "uuid", Self.uuid]))
    #expect(report.detail == "stopped through networkmanager 'vpnt' (\(Self.uuid))")
    #expect(report.confirmedAt != nil)
  }

  @Test("NetworkManager lets the device go but still lists the connection: still up, said so, not taken for success")
  func disconnectHalfDown() throws {
    nm.add(uuid: Self.uuid, name: "vpnt", device: "nmtun0", autoconnect: true)
    _ = nm.up(Self.uuid)
    nm.staysActive = true
    let report = try disconnect("vpnt", timeout: .seconds(3))
    #expect(report.outcome == .stillUp)
    #expect(report.detail?.contains("does not say it stopped") == true)
    #expect(TunnelControlText.message(report).hasSuffix("after 3 s"))
    #expect(kernel.setDownCalls == 0)
  }

  @Test("NetworkManager refuses the stop: not permitted, and no link-down behind its back")
  func disconnectRefused() throws {
    nm.add(uuid: Self.uuid, name: "vpnt", device: "nmtun0", autoconnect: true)
    let change = nm.up(Self.uuid)
    nm.refusesDown = true
    let report = try disconnect("vpnt")
    #expect(report.outcome == .notPermitted)
    #expect(report.detail?.contains("not authorized to deactivate connections") == true)
    #expect(kernel.isUp(change.record.index))
    #expect(kernel.setDownCalls == 0)
  }

  @Test("not connected: nothing is asked to stop")
  func disconnectNotConnected() throws {
    nm.add(uuid: Self.uuid, name: "vpnt", device: "nmtun0", autoconnect: true)
    let report = try disconnect("vpnt")
    #expect(report.outcome == .notConnected)
    #expect(!nm.commands.contains { $0.contains("down") })
    _ = try configuration("wg3")
    let wg = try disconnect("wg3")
    #expect(wg.outcome == .notConnected)
    #expect(wg.detail == "wg3 does not exist")
  }

  @Test("disconnect a tunnel no manager runs: link-down, confirmed by the kernel")
  func disconnectBare() throws {
    let change = kernel.add("tun9", up: true)
    let report = try disconnect("tun9")
    #expect(report.outcome == .disconnected)
    #expect(!kernel.isUp(change.record.index))
    #expect(report.detail == "stopped through link-down")
  }
}
