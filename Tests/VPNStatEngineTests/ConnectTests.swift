import Foundation
import Testing
import VPNStatSystem

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// `connect`'s state machine in-process: the real controls and probe, wg-quick and NetworkManager
/// played on the fake kernel, a fake WireGuard source and a manual clock (every wait is instant,
/// and the time the machine spent is exact).
struct ConnectTests {
  static let uuid = "5b0c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"
  let kernel = FakeKernel()
  let clock = ManualTimeSource()
  let wireGuard = FakeWireGuard()
  let datagrams = RecordedDatagrams()

  func attempt(_ control: any TunnelControl, runner: any ProgramRunner, timeout: Duration = .seconds(30))
    -> ConnectAttempt
  {
    let manager = control.manager ?? TunnelManager(kind: .none, id: nil, foundBy: .nothing, evidence: "test")
    return ConnectAttempt(
      name: "wg0", manager: manager, control: control,
      probe: ConnectionProbe(
        runner: runner, links: FakeLinks(kernel: kernel), wireGuard: wireGuard, datagrams: datagrams),
      clock: clock, timeout: timeout)
  }

  @Test(
    "a quiet peer: no handshake until connect's datagram goes into wg0 to the peer's address, port 9; then connected; at most one a second"
  )
  func provokedHandshake() throws {
    let (fake, control) = wgQuick()
    var attempt = attempt(control, runner: fake, timeout: .seconds(10))
    attempt.handle(.start)
    let key = WireGuardKey(bytes: [UInt8](repeating: 7, count: 32))!
    func status(_ handshake: Timestamp?) -> WireGuardStatus {
      WireGuardStatus(
        evidence: .wireguardGo,
        reading: .success(
          WireGuardReading(
            device: WireGuardDevice(
              listenPort: 51820,
              peers: [
                WireGuardPeer(
                  publicKey: key, latestHandshake: handshake, allowedIPs: 2,
                  allowedRanges: [
                    IPRange(address: [10, 7, 0, 1], prefixLength: 32)!,
                    IPRange(address: [0xFD] + [UInt8](repeating: 0, count: 14) + [1], prefixLength: 128)!,
                  ])
              ]), source: .uapi)))
    }
    wireGuard.statuses[InterfaceName("wg0")] = status(nil)
    datagrams.own = [[10, 7, 0, 2]]
    // The peer answers 2.5 s after the first datagram reached it (a slow one), not before.
    datagrams.refusing = true
    attempt.handle(.check)
    #expect(attempt.waiting == "no handshake on wg0 yet", "\(attempt.waiting ?? "")")
    #expect(datagrams.sent.map(\.address) == [[10, 7, 0, 1], [0xFD] + [UInt8](repeating: 0, count: 14) + [1]])
    datagrams.refusing = false
    clock.advance(.milliseconds(500))
    attempt.handle(.check)
    #expect(datagrams.sent.count == 2, "sent again within a second")
    clock.advance(.milliseconds(500))
    attempt.handle(.check)
    #expect(datagrams.sent.count == 3)
    #expect(datagrams.sent.last.map { ($0.address, $0.port, $0.device) } ?? ([], 0, "") == ([10, 7, 0, 1], 9, "wg0"))
    #expect(
      attempt.waiting == "no handshake on wg0 yet (a datagram went into it to 10.7.0.1, port 9, to start one)",
      "\(attempt.waiting ?? "")")
    clock.advance(.milliseconds(300))
    wireGuard.statuses[InterfaceName("wg0")] = status(clock.now().wall)
    ConnectLoop.run(&attempt)
    #expect(attempt.state == .connected)
    #expect(attempt.report.elapsed == .milliseconds(1300))
    #expect(datagrams.sent.count == 3)
  }

  func wgQuick() -> (FakeWgQuick, WgQuickControl) {
    let fake = FakeWgQuick(kernel)
    let manager = TunnelManager(
      kind: .wgQuick, id: "/etc/wireguard/wg0.conf", foundBy: .configuration, evidence: "test")
    return (fake, WgQuickControl(configuration: "/etc/wireguard/wg0.conf", manager: manager, runner: fake))
  }

  @Test("wg-quick accepted, but no handshake ever: times out at --timeout, saying what never happened")
  func acceptedNeverReal() throws {
    let (fake, control) = wgQuick()
    var attempt = attempt(control, runner: fake, timeout: .seconds(30))
    let before = clock.now().monotonic
    attempt.handle(.start)
    #expect(attempt.state == .accepted)
    #expect(fake.commands == [["wg-quick", "up", "/etc/wireguard/wg0.conf"]])
    #expect(kernel.index(of: "wg0") != nil, "wg-quick up made no device")
    // The device answers, without a handshake.
    wireGuard.statuses[InterfaceName("wg0")] = FakeWireGuard.device(handshake: nil)
    ConnectLoop.run(&attempt)
    #expect(attempt.state == .timedOut)
    // Checked until the timeout, not past it (the last wait ends at the timeout).
    let waited = clock.now().monotonic - before
    #expect(waited == Duration.seconds(30).nanoseconds, "waited \(waited) ns")
    #expect(wireGuard.asked.count > 100, "checked \(wireGuard.asked.count) times in 30 s")
    let report = attempt.report
    #expect(report.outcome == .timedOut)
    #expect(report.missing == .wireGuardHandshake(InterfaceName("wg0")))
    let message = TunnelControlText.message(report)
    #expect(message.hasPrefix("accepted, but no WireGuard handshake on wg0 within 30 s"), "\(message)")
    #expect(message.contains("no handshake on wg0 yet"), "\(message)")
    #expect(report.acceptedAt != nil && report.confirmedAt == nil)
    #expect(report.elapsed == .seconds(30))
  }

  @Test("a handshake older than the start does not count; the first one after it does, and its instant is the proof's")
  func oldHandshake() throws {
    let (fake, control) = wgQuick()
    var attempt = attempt(control, runner: fake, timeout: .seconds(5))
    let start = clock.now().wall
    attempt.handle(.start)
    // A handshake from an earlier connection (a kernel device keeps its peers' times).
    wireGuard.statuses[InterfaceName("wg0")] = FakeWireGuard.device(handshake: start - .seconds(3))
    attempt.handle(.check)
    #expect(attempt.state == .accepted)
    #expect(attempt.waiting?.contains("older than the start") == true, "\(attempt.waiting ?? "")")
    ConnectLoop.run(&attempt)
    #expect(attempt.state == .timedOut, "an old handshake was taken for this connection")

    // Again, and this time the peer answers 1.5 s after the start.
    for index in kernel.links.keys { _ = kernel.delete(index) }
    var second = self.attempt(control, runner: fake, timeout: .seconds(5))
    let secondStart = clock.now().wall
    second.handle(.start)
    second.handle(.check)
    #expect(second.state == .accepted)
    clock.advance(.milliseconds(1500))
    wireGuard.statuses[InterfaceName("wg0")] = FakeWireGuard.device(handshake: clock.now().wall)
    ConnectLoop.run(&second)
    #expect(second.state == .connected)
    let report = second.report
    #expect(report.outcome == .connected)
    #expect(report.confirmedAt == secondStart + .milliseconds(1500))
    #expect(report.elapsed == .milliseconds(1500))
    #expect(TunnelControlText.message(report) == "connected: a WireGuard handshake on wg0, 1.50 s after the start")
  }

  @Test("a start the manager refused: its words, nothing waited for, no proof asked")
  func refused() throws {
    let (fake, control) = wgQuick()
    fake.upRefusal = "free plan pause: you can reconnect in 12 min"
    var attempt = attempt(control, runner: fake)
    attempt.handle(.start)
    ConnectLoop.run(&attempt)
    guard case .refused(let why) = attempt.state else {
      Issue.record("not refused: \(attempt.state)")
      return
    }
    #expect(why.contains("free plan pause: you can reconnect in 12 min"), "\(why)")
    #expect(why.hasPrefix("wg-quick up exited with status 1"), "\(why)")
    #expect(wireGuard.asked.isEmpty)
    #expect(kernel.index(of: "wg0") == nil)
    let report = attempt.report
    #expect(report.outcome == .refused)
    #expect(report.acceptedAt == nil)
    #expect(TunnelControlText.message(report).hasPrefix("the start was refused: wg-quick up exited with status 1"))
  }

  @Test("a refusal that says the user may not: not-permitted, not a plain refusal")
  func refusedPermission() throws {
    let (fake, control) = wgQuick()
    fake.upRefusal = "wg-quick must be run as root. Please enter the password for root to continue:"
    var attempt = attempt(control, runner: fake)
    attempt.handle(.start)
    #expect(attempt.report.outcome == .notPermitted)
  }

  func networkManager() -> (FakeNetworkManager, NetworkManagerControl) {
    let nm = FakeNetworkManager(kernel)
    nm.add(uuid: Self.uuid, name: "vpnt", device: "nmtun0", autoconnect: false)
    return (nm, NetworkManagerControl(uuid: Self.uuid, runner: nm))
  }

  @Test("NetworkManager: accepted with --wait 0, real once the activation reaches activated")
  func networkManagerActivated() throws {
    let (nm, control) = networkManager()
    nm.activatingQueries = 5
    var attempt = attempt(control, runner: nm)
    attempt.handle(.start)
    #expect(attempt.state == .accepted)
    #expect(nm.commands.contains(["nmcli", "--wait", "0", "connection", "up", "uuid", Self.uuid]))
    attempt.handle(.check)
    #expect(attempt.waiting == "NetworkManager says activating")
    ConnectLoop.run(&attempt)
    #expect(attempt.state == .connected)
    let report = attempt.report
    #expect(report.device == InterfaceName("nmtun0"))
    #expect(report.detail == "NetworkManager reports it activated")
    // Five answers `activating` (two at once: the check above and the loop's first), then one
    // 100 ms apart each.
    #expect(report.elapsed == .milliseconds(400), "\(String(describing: report.elapsed))")
  }

  @Test("NetworkManager re-activating a connection that was up: the activation from before does not count")
  func networkManagerReactivated() throws {
    let (nm, control) = networkManager()
    _ = nm.up(Self.uuid)
    // NetworkManager takes the request, but goes on showing the old activation for a moment.
    let stale = FakeStaleActivation(nm)
    var attempt = attempt(control, runner: stale)
    attempt.handle(.start)
    stale.staleQueries = 3
    attempt.handle(.check)
    #expect(attempt.state == .accepted)
    #expect(attempt.waiting == "NetworkManager still shows the activation from before the start")
    ConnectLoop.run(&attempt)
    #expect(attempt.state == .connected)
    #expect(stale.staleQueries == 0)
  }

  @Test("NetworkManager drops the activation after accepting it: gave up at once, not a 30 s wait")
  func networkManagerGaveUp() throws {
    let (nm, control) = networkManager()
    nm.dropsActivation = true
    var attempt = attempt(control, runner: nm)
    let before = clock.now().monotonic
    attempt.handle(.start)
    ConnectLoop.run(&attempt)
    guard case .gaveUp(let why) = attempt.state else {
      Issue.record("did not give up: \(attempt.state)")
      return
    }
    #expect(why.contains("no longer lists the connection as active"))
    #expect(clock.now().monotonic - before < 1_000_000_000)
    #expect(attempt.report.outcome == .gaveUp)
  }

  @Test("a NetworkManager WireGuard connection: activated is not enough, a handshake on its device must follow")
  func networkManagerWireGuard() throws {
    let nm = FakeNetworkManager(kernel)
    nm.add(uuid: Self.uuid, name: "vwg", device: "nmwg0", autoconnect: false, type: "wireguard")
    let control = NetworkManagerControl(uuid: Self.uuid, connectionType: "wireguard", runner: nm)
    #expect(control.proofs == [.networkManagerActivated(uuid: Self.uuid), .wireGuardHandshake(nil)])
    var attempt = attempt(control, runner: nm, timeout: .seconds(2))
    attempt.handle(.start)
    ConnectLoop.run(&attempt)
    #expect(attempt.state == .timedOut)
    #expect(attempt.report.missing == .wireGuardHandshake(InterfaceName("nmwg0")))
    // The device NetworkManager named is the one asked about.
    #expect(wireGuard.asked.last?.first?.name == InterfaceName("nmwg0"))
    #expect(TunnelControlText.message(attempt.report).hasPrefix("accepted, but no WireGuard handshake on nmwg0 within"))
  }

  @Test("a tunnel no manager runs: raised with link-up, real once up and running")
  func bareTun() throws {
    let change = kernel.add("tun9", up: false)
    let control = DirectLinkControl(links: FakeLinks(kernel: kernel), tunnel: InterfaceName("tun9"))
    var attempt = attempt(control, runner: FakeWgQuick(kernel))
    attempt.handle(.start)
    ConnectLoop.run(&attempt)
    #expect(kernel.isUp(change.record.index))
    #expect(attempt.state == .connected)
    #expect(attempt.report.detail == "tun9 is up and running")
    // A name that is gone: refused, not waited for.
    var gone = self.attempt(
      DirectLinkControl(links: FakeLinks(kernel: kernel), tunnel: InterfaceName("tun8")), runner: FakeWgQuick(kernel))
    gone.handle(.start)
    #expect(gone.state == .refused("tun8 does not exist"))
  }

  @Test("systemd's wg-quick@wg0: active, then a handshake on wg0; a unit that failed is given up on")
  func systemdUnit() throws {
    let systemd = FakeSystemd()
    let control = SystemdUnitControl(unit: "wg-quick@wg0.service", runner: systemd)
    #expect(control.proofs == [.unitActive("wg-quick@wg0.service"), .wireGuardHandshake(InterfaceName("wg0"))])
    kernel.add("wg0", up: true, kind: "wireguard")
    wireGuard.statuses[InterfaceName("wg0")] = FakeWireGuard.device(handshake: clock.now().wall + .seconds(1))
    var attempt = attempt(control, runner: systemd)
    attempt.handle(.start)
    ConnectLoop.run(&attempt)
    #expect(attempt.state == .connected)
    #expect(systemd.commands.first == ["systemctl", "start", "--", "wg-quick@wg0.service"])

    systemd.state = "failed"
    var failed = self.attempt(control, runner: systemd)
    failed.handle(.start)
    ConnectLoop.run(&failed)
    #expect(failed.state == .gaveUp("systemd reports wg-quick@wg0.service failed"))
  }
}

/// systemd as `systemctl` answers: `start` succeeds, `is-active` says `state`.
final class FakeSystemd: ProgramRunner, @unchecked Sendable {
  var state = "active"
  private(set) var commands: [[String]] = []
  func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    commands.append(arguments)
    switch Array(arguments.prefix(3)) {
    case ["systemctl", "start", "--"]: return ProgramRun(outcome: .exited(0))
    case ["systemctl", "is-active", "--"]:
      return ProgramRun(outcome: .exited(state == "active" ? 0 : 3), output: state + "\n")
    default: return ProgramRun(outcome: .exited(1), errors: "unexpected \(arguments)\n")
    }
  }
}

/// NetworkManager that, for `staleQueries` state queries after a start, still shows the
/// activation from before it (its old D-Bus path, activated).
final class FakeStaleActivation: ProgramRunner, @unchecked Sendable {
  let nm: FakeNetworkManager
  var staleQueries = 0
  private var before: ProgramRun?
  init(_ nm: FakeNetworkManager) { self.nm = nm }
  func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    let isState = arguments.contains("GENERAL.STATE,GENERAL.IP-IFACE,GENERAL.DBUS-PATH")
    if isState, before == nil {
      before = nm.run(arguments, timeout: timeout)
      return before!
    }
    if isState, staleQueries > 0, let before {
      staleQueries -= 1
      return before
    }
    return nm.run(arguments, timeout: timeout)
  }
}

/// The datagrams `connect` would send, recorded instead; `refusing`: the kernel refuses them all.
final class RecordedDatagrams: HandshakeDatagrams, @unchecked Sendable {
  struct Sent {
    var address: [UInt8]
    var port: UInt16
    var device: String
  }
  var sent: [Sent] = []
  var own: [[UInt8]] = []
  var refusing = false
  struct Refused: Error {}

  func addresses(of device: InterfaceName) -> [[UInt8]] { own }
  func send(to address: [UInt8], port: UInt16, through device: InterfaceName) throws {
    sent.append(Sent(address: address, port: port, device: device.escaped))
    if refusing { throw Refused() }
  }
}
