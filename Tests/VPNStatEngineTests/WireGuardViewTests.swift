import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// WireGuard as the test says it is: a status per device name (nil: not WireGuard), counting
/// what it was asked.
final class FakeWireGuard: WireGuardSource, @unchecked Sendable {
  var statuses: [InterfaceName: WireGuardStatus] = [:]
  private(set) var asked: [[WireGuardCandidate]] = []

  func read(_ candidates: [WireGuardCandidate]) -> [WireGuardStatus?] {
    asked.append(candidates)
    return candidates.map { statuses[$0.name] }
  }

  static func device(handshake: Timestamp?, rx: UInt64 = 1000, tx: UInt64 = 2000) -> WireGuardStatus {
    let key = WireGuardKey(bytes: [UInt8](repeating: 7, count: 32))!
    return WireGuardStatus(
      evidence: .wireguardGo,
      reading: .success(
        WireGuardReading(
          device: WireGuardDevice(
            listenPort: 51820,
            peers: [WireGuardPeer(publicKey: key, latestHandshake: handshake, rxBytes: rx, txBytes: tx)]),
          source: .uapi)))
  }
}

/// Which interfaces get WireGuard's own figures, and that nothing is asked when none can.
struct WireGuardViewTests {
  let clock = ManualTimeSource()

  func sample(_ links: [(String, Int32, String?)]) -> CounterSample {
    CounterSample(
      interfaces: links.map { name, index, kind in
        InterfaceSample(
          name: InterfaceName(name), index: index, counters: InterfaceCounters(.zero), width: .bits64,
          link: LinkAttributes(arpType: name == "lo" ? 772 : 65534, flags: 0x41, kind: kind))
      }, source: .netlink, taken: clock.now())
  }

  @Test("kind wireguard, DEVTYPE wireguard and tuns are asked about, in one call; veth, loopback and others are not")
  func candidates() throws {
    let sysfs = try SysfsFixture()
    try sysfs.add("wgk", index: 8, type: 65534, uevent: "DEVTYPE=wireguard")
    try sysfs.add("lo", index: 1, type: 772)
    var catalog = InterfaceCatalog(root: sysfs.root)
    let taken = sample([
      ("wg0", 4, "wireguard"), ("tun7", 5, "tun"), ("veth0", 6, "veth"), ("wgk", 8, nil), ("lo", 1, nil),
    ])
    var snapshot = StatusSnapshot.make(sample: taken, catalog: &catalog, selection: InterfaceSelection())
    let fake = FakeWireGuard()
    fake.statuses[InterfaceName("wg0")] = FakeWireGuard.device(handshake: clock.now().wall)
    var source: any WireGuardSource = fake
    snapshot.addWireGuard(sample: taken, catalog: &catalog, source: &source)
    #expect(fake.asked.count == 1)
    let asked = Set(try #require(fake.asked.first))
    #expect(
      asked == [
        WireGuardCandidate(name: InterfaceName("wg0"), index: 4, implementation: .kernel(.kind)),
        WireGuardCandidate(name: InterfaceName("tun7"), index: 5, implementation: .tun),
        WireGuardCandidate(name: InterfaceName("wgk"), index: 8, implementation: .kernel(.devtype)),
      ])
    let byName = Dictionary(uniqueKeysWithValues: snapshot.interfaces.map { ($0.name.escaped, $0) })
    #expect(byName["wg0"]?.wireguard?.device?.listenPort == 51820)
    // A tun the source says is not WireGuard, and everything else, has none.
    for name in ["tun7", "veth0", "wgk", "lo"] { #expect(byName[name]?.wireguard == nil, "\(name)") }
  }

  @Test(
    "a link whose kind decided a class other than tunnel is passed without a look at its facts: no kind that makes a candidate decides another class, and an override still gets asked"
  )
  func kindDecidedLinksAreNoCandidates() {
    // Every kind the classifier knows, and the two that make candidates: a candidate's kind
    // classifies as a tunnel, so only an override can give it another class.
    let kinds = [
      "tun", "sit", "gre", "vti", "ppp", "ifb", "vrf", "hsr", "ovpn", "ipip", "vti6", "xfrm", "wwan", "veth", "bond",
      "team", "vlan", "vxlan", "rmnet", "dummy", "nlmon", "gretap", "ip6gre", "ip6tnl", "geneve", "bridge", "ipvlan",
      "ipvtap", "netkit", "batadv", "macvlan", "macvtap", "l2tp_eth", "wireguard", "ip6gretap", "netdevsim",
    ]
    var makesCandidates: [String] = []
    for kind in kinds
    where WireGuardCandidate(name: InterfaceName("x"), index: 2, facts: InterfaceFacts(kind: kind)) != nil {
      makesCandidates.append(kind)
      #expect(Classifier.classByKind(kind) == .tunnel, "\(kind)")
    }
    #expect(makesCandidates.sorted() == ["tun", "wireguard"])
    // Moved to other classes by --class, WireGuard and a tun are still asked about.
    var catalog = InterfaceCatalog(
      classifier: Classifier(overrides: [InterfaceName("wg0"): .other, InterfaceName("tun7"): .ethernet]))
    let taken = sample([("wg0", 4, "wireguard"), ("tun7", 5, "tun"), ("ifb0", 6, "ifb")])
    var snapshot = StatusSnapshot.make(sample: taken, catalog: &catalog, selection: InterfaceSelection())
    #expect(snapshot.interfaces.map(\.interfaceClass).sorted() == [.ethernet, .other, .other])
    let fake = FakeWireGuard()
    var source: any WireGuardSource = fake
    snapshot.addWireGuard(sample: taken, catalog: &catalog, source: &source)
    #expect(Set(fake.asked.flatMap { $0 }.map(\.name.escaped)) == ["wg0", "tun7"])
  }

  @Test("no interface that can be WireGuard (or none selected): the source is not asked at all")
  func nothingAsked() {
    var catalog = InterfaceCatalog()
    let fake = FakeWireGuard()
    var source: any WireGuardSource = fake
    let plain = sample([("veth0", 6, "veth"), ("ifb0", 7, "ifb")])
    var snapshot = StatusSnapshot.make(sample: plain, catalog: &catalog, selection: InterfaceSelection())
    snapshot.addWireGuard(sample: plain, catalog: &catalog, source: &source)
    let withTunnel = sample([("wg0", 4, "wireguard"), ("veth0", 6, "veth")])
    var selected = StatusSnapshot.make(
      sample: withTunnel, catalog: &catalog, selection: InterfaceSelection(names: [InterfaceName("veth0")]))
    selected.addWireGuard(sample: withTunnel, catalog: &catalog, source: &source)
    #expect(fake.asked.isEmpty)
    #expect(snapshot.interfaces.allSatisfy { $0.wireguard == nil })
  }

  @Test("watch shows each refresh's WireGuard figures, on the screen and in the plain lines")
  func liveView() throws {
    let kernel = FakeKernel()
    kernel.add("wg0", up: true)
    var live = LiveView(
      sampler: fakeSampler(kernel, clock), store: nil, selection: InterfaceSelection(), interval: .seconds(1),
      nextLengths: .release, options: DisplayOptions(calendar: FixedOffsetCalendar.utc))
    let fake = FakeWireGuard()
    fake.statuses[InterfaceName("wg0")] = FakeWireGuard.device(handshake: clock.now().wall - .seconds(42), rx: 5000)
    live.wireGuard = fake
    let shown = try live.refresh()
    #expect(shown.interfaces.first?.wireguard?.device?.peers.first?.rxBytes == 5000)
    let screen = live.screen(size: TerminalSize(columns: 100, rows: 24)).joined(separator: "\n")
    #expect(screen.contains("wg: handshake 42 s ago · 1 peer · encrypted ≈ 4.88 KiB in"), "\(screen)")
    let plain = String(decoding: live.lines(.plain), as: UTF8.self)
    #expect(plain.contains(" wg_handshake=") && plain.contains(" wg_rx=≈5000 wg_tx=≈2000"), "\(plain)")
    #expect(fake.asked.count == 1)
  }

  @Test("latestHandshake(of:): the newest over the peers, nil before any, and a name that is not WireGuard says so")
  func latestHandshake() {
    let fake = FakeWireGuard()
    let instant = clock.now().wall
    fake.statuses[InterfaceName("wg0")] = FakeWireGuard.device(handshake: instant)
    fake.statuses[InterfaceName("wg1")] = FakeWireGuard.device(handshake: nil)
    fake.statuses[InterfaceName("wg2")] = WireGuardStatus(
      evidence: .kind, reading: .failure(.notPermitted("reading WireGuard from the kernel needs CAP_NET_ADMIN")))
    var source: any WireGuardSource = fake
    func candidate(_ name: String) -> WireGuardCandidate {
      WireGuardCandidate(name: InterfaceName(name), index: 3, kind: "wireguard")!
    }
    #expect(source.latestHandshake(of: candidate("wg0")) == .success(instant))
    #expect(source.latestHandshake(of: candidate("wg1")) == .success(nil))
    #expect(
      source.latestHandshake(of: candidate("wg2"))
        == .failure(.notPermitted("reading WireGuard from the kernel needs CAP_NET_ADMIN")))
    #expect(source.latestHandshake(of: candidate("tun9")) == .failure(.notWireGuard(InterfaceName("tun9"))))
    #expect(WireGuardCandidate(name: InterfaceName("veth0"), index: 3, kind: "veth") == nil)
  }
}
