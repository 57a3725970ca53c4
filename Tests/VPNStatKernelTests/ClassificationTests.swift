import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Classification on fixture sysfs trees: the devices this kernel cannot create.
struct ClassificationTests {
  func fixture() throws -> SysfsFixture {
    let tree = try SysfsFixture()
    try tree.add("wlan0", index: 3, uevent: "DEVTYPE=wlan", directories: ["phy80211", "wireless", "device"])
    try tree.add("wlp2s0", index: 4, directories: ["phy80211", "device"])
    try tree.add("wwan0", index: 5, type: 519, uevent: "DEVTYPE=wwan", directories: ["device"])
    try tree.add("rmnet_data0", index: 6, type: 519, directories: ["device"])
    try tree.add("wg0", index: 7, type: 65534, uevent: "DEVTYPE=wireguard")
    try tree.add("ppp0", index: 8, type: 512)
    try tree.add("en0", index: 9, type: nil)
    try tree.add("pdp_ip0", index: 10, type: nil)
    try tree.add("utun3", index: 11, type: nil)
    try tree.add("enp3s0", index: 12, type: 1, directories: ["device"])
    try tree.add("usb0", index: 13, type: 1, directories: ["device"])
    try tree.add("veth9", index: 14, type: 1)
    try tree.add("lo", index: 1, type: 772)
    try tree.add("gre1", index: 15, type: 778)
    try tree.add("br0", index: 16, type: 1, uevent: "DEVTYPE=bridge")
    try tree.add("tap0", index: 17, type: 1, attributes: ["tun_flags": "0x1002\n"])
    return tree
  }

  @Test(
    "a uevent's DEVTYPE is read from the line that starts with it, the last such line's, whatever comes around it",
    arguments: [
      ("INTERFACE=wlan0\nIFINDEX=3\nDEVTYPE=wlan\n", "wlan"), ("DEVTYPE=wwan", "wwan"),
      ("DEVTYPE=a\nDEVTYPE=b\n", "b"), ("DEVTYPE=\n", ""), ("XDEVTYPE=wlan\n", nil), ("DEVTYPE wlan\n", nil),
      ("", nil), ("\n\n", nil), ("DEVTYPE=wl\u{0}an", "wl\u{0}an"), ("A=1\nDEVTYPE=wlan\r\n", "wlan\r"),
      ("DEVTYPE=\u{FF}", "\u{FF}"), ("DEVTYPE", nil),
    ] as [(String, String?)]
  )
  func ueventDevtype(uevent: String, devtype: String?) {
    #expect(InterfaceFacts.ueventValue("DEVTYPE=", in: uevent) == devtype)
  }

  static let expected: [(String, InterfaceClass, ClassEvidence)] = [
    ("wlan0", .wifi, .devtype), ("wlp2s0", .wifi, .wireless), ("wwan0", .cellular, .devtype),
    ("rmnet_data0", .cellular, .type), ("wg0", .tunnel, .devtype), ("ppp0", .tunnel, .type),
    ("en0", .wifi, .name), ("pdp_ip0", .cellular, .name), ("utun3", .tunnel, .name),
    ("enp3s0", .ethernet, .name), ("usb0", .ethernet, .type), ("veth9", .other, .type),
    ("lo", .loopback, .type), ("gre1", .tunnel, .type), ("br0", .other, .devtype),
    ("tap0", .tunnel, .tunFlags),
  ]

  @Test("each fixture device gets its class and the evidence that decided it")
  func fixtureClasses() throws {
    let tree = try fixture()
    var source = SysfsCounterSource(root: tree.root)
    var catalog = InterfaceCatalog(root: tree.root)
    let sample = try source.sample(at: ManualTimeSource())
    let snapshot = StatusSnapshot.make(sample: sample, catalog: &catalog, selection: InterfaceSelection())
    #expect(snapshot.interfaces.count == Self.expected.count)
    for (name, interfaceClass, evidence) in Self.expected {
      let report = try #require(snapshot.interfaces.first { $0.name == InterfaceName(name) }, "\(name)")
      #expect(report.interfaceClass == interfaceClass, "\(name)")
      #expect(report.classBy == evidence, "\(name)")
    }
  }

  @Test("an override beats every other evidence and says so")
  func overrideWins() throws {
    let tree = try fixture()
    var source = SysfsCounterSource(root: tree.root)
    var catalog = InterfaceCatalog(
      root: tree.root, classifier: Classifier(overrides: [InterfaceName("wlan0"): .cellular]))
    let sample = try source.sample(at: ManualTimeSource())
    let snapshot = StatusSnapshot.make(sample: sample, catalog: &catalog, selection: InterfaceSelection())
    let wlan = try #require(snapshot.interfaces.first { $0.name == InterfaceName("wlan0") })
    #expect(wlan.interfaceClass == .cellular)
    #expect(wlan.classBy == .override)
  }

  /// Every link kind that decides a class, as netlink names it, and kinds merely like one.
  static let kinds: [(String, InterfaceClass?)] = [
    ("tun", .tunnel), ("wireguard", .tunnel), ("ovpn", .tunnel), ("ipip", .tunnel), ("sit", .tunnel),
    ("gre", .tunnel), ("gretap", .tunnel), ("ip6gre", .tunnel), ("ip6gretap", .tunnel), ("ip6tnl", .tunnel),
    ("vti", .tunnel), ("vti6", .tunnel), ("xfrm", .tunnel), ("ppp", .tunnel), ("l2tp_eth", .tunnel),
    ("vxlan", .tunnel), ("geneve", .tunnel), ("wwan", .cellular), ("rmnet", .cellular), ("veth", .other),
    ("ifb", .other), ("bridge", .other), ("bond", .other), ("team", .other), ("macvlan", .other),
    ("macvtap", .other), ("ipvlan", .other), ("ipvtap", .other), ("vlan", .other), ("vrf", .other),
    ("dummy", .other), ("netkit", .other), ("nlmon", .other), ("batadv", .other), ("hsr", .other),
    ("netdevsim", .other),
    ("", nil), ("tu", nil), ("tun0", nil), ("TUN", nil), ("ifbx", nil), ("wireguar", nil), ("wireguardx", nil),
    ("ip6gretaq", nil), ("macvla", nil), ("l2tp_et", nil), ("vlan\u{0}", nil), ("bridge ", nil), ("wlan", nil),
  ]

  @Test("each netlink link kind decides its class; a kind merely like one does not")
  func kindTable() {
    for (kind, expected) in Self.kinds {
      #expect(Classifier.classByKind(kind) == expected, "\(kind.debugDescription)")
      #expect(Classifier.kindDecides(kind) == (expected != nil), "\(kind.debugDescription)")
    }
    let devtypes: [(String, InterfaceClass?)] = [
      ("wlan", .wifi), ("wwan", .cellular), ("wireguard", .tunnel), ("ppp", .tunnel), ("bridge", .other),
      ("vlan", .other), ("bond", .other), ("macsec", .other), ("", nil), ("wlan0", nil), ("tun", nil),
    ]
    for (devtype, expected) in devtypes {
      #expect(Classifier.classByDevtype(devtype) == expected, "\(devtype.debugDescription)")
    }
  }

  @Test("the link kind from netlink decides without reading sysfs")
  func kindDecidesWithoutSysfs() throws {
    let tree = try SysfsFixture()
    var catalog = InterfaceCatalog(root: tree.root)
    let sample = InterfaceSample(
      name: InterfaceName("eth9"), index: 4, counters: InterfaceCounters(.zero), width: .bits64,
      link: LinkAttributes(arpType: 65534, kind: "tun"))
    let entry = catalog.entry(for: sample)
    #expect(entry.interfaceClass == .tunnel)
    #expect(entry.evidence == .kind)
    #expect(catalog.factReads == 0)
  }

  @Test("a loopback type from netlink decides without reading sysfs, as the facts would; an override still wins")
  func loopbackTypeDecidesWithoutSysfs() throws {
    let tree = try SysfsFixture()
    try tree.add("lo", index: 1, type: 772)
    let lo = InterfaceSample(
      name: InterfaceName("lo"), index: 1, counters: InterfaceCounters(.zero), width: .bits64,
      link: LinkAttributes(arpType: 772))
    var catalog = InterfaceCatalog(root: tree.root)
    let entry = catalog.entry(for: lo)
    #expect(entry.interfaceClass == .loopback && entry.evidence == .type)
    #expect(catalog.factReads == 0)
    let fromFacts = Classifier().classify(InterfaceName("lo"), InterfaceFacts.read(InterfaceName("lo"), in: tree.root))
    #expect(fromFacts.0 == .loopback && fromFacts.1 == .type, "the facts say the same")
    var overridden = InterfaceCatalog(root: tree.root, classifier: Classifier(overrides: [InterfaceName("lo"): .other]))
    #expect(overridden.entry(for: lo).interfaceClass == .other)
    // An Ethernet type is not decided without the facts (it may be Wi-Fi or a modem).
    let eth = InterfaceSample(
      name: InterfaceName("eth0"), index: 2, counters: InterfaceCounters(.zero), width: .bits64,
      link: LinkAttributes(arpType: 1))
    _ = catalog.entry(for: eth)
    #expect(catalog.factReads == 1)
  }

  @Test("an instance is its ifindex and its name: a name new at a known ifindex is classified anew")
  func renamedIndexIsNewInstance() {
    var catalog = InterfaceCatalog()
    func sample(_ name: String, kind: String) -> InterfaceSample {
      InterfaceSample(
        name: InterfaceName(name), index: 9, counters: InterfaceCounters(.zero), width: .bits64,
        link: LinkAttributes(arpType: 65534, kind: kind))
    }
    #expect(catalog.entry(for: sample("tun0", kind: "tun")).interfaceClass == .tunnel)
    #expect(catalog.classified(index: 9, name: InterfaceName("tun0"))?.interfaceClass == .tunnel)
    #expect(catalog.classified(index: 9, name: InterfaceName("veth0")) == nil)
    #expect(catalog.entry(for: sample("veth0", kind: "veth")).interfaceClass == .other)
    #expect(catalog.classified(index: 9, name: InterfaceName("tun0")) == nil)
    #expect(catalog.classified(index: 8, name: InterfaceName("veth0")) == nil)
  }

  @Test("a verdict on instances the catalog has not seen classifies each, at the end and between")
  func verdictOfNewInstances() {
    var catalog = InterfaceCatalog()
    for (index, kind, expected) in [(3, "tun", InterfaceClass.tunnel), (9, "veth", .other), (5, "wwan", .cellular)] {
      let sample = InterfaceSample(
        name: InterfaceName("if\(index)"), index: Int32(index), counters: InterfaceCounters(.zero), width: .bits64,
        link: LinkAttributes(arpType: 1, kind: kind))
      #expect(catalog.verdict(for: sample).interfaceClass == expected, "\(kind)")
      #expect(catalog.classified(index: Int32(index), name: InterfaceName("if\(index)"))?.interfaceClass == expected)
    }
    #expect(catalog.factReads == 0)
  }

  @Test(
    "each way of asking (an entry, a sampler's verdict, a verdict on a sample's interface) answers for the interface asked about, met first before, between and after the known ones, or renamed"
  )
  func everyWayAnswersForItsInterface() {
    func link(_ name: String, _ index: Int32, kind: String) -> InterfaceSample {
      InterfaceSample(
        name: InterfaceName(name), index: index, counters: InterfaceCounters(.zero), width: .bits64,
        link: LinkAttributes(arpType: 65534, kind: kind))
    }
    let kinds: [String: (String, InterfaceClass)] = ["tun": ("tun", .tunnel), "veth": ("veth", .other)]
    // Met in this order, each at an ifindex the catalog does not hold yet; then one renamed.
    let sequence = [
      link("tun5", 5, kind: "tun"), link("veth9", 9, kind: "veth"), link("tun7", 7, kind: "tun"),
      link("veth2", 2, kind: "veth"), link("tun12", 12, kind: "tun"), link("tun9", 9, kind: "tun"),
    ]
    for way in 0..<3 {
      var catalog = InterfaceCatalog()
      for (step, interface) in sequence.enumerated() {
        let wanted = kinds[interface.link.kind ?? ""]!.1
        let got: InterfaceClass
        switch way {
        case 0: got = catalog.entry(for: interface).interfaceClass
        case 1: got = catalog.verdict(for: interface).interfaceClass
        default: got = catalog.verdict(of: sequence, at: step).interfaceClass
        }
        #expect(got == wanted, "way \(way), \(interface.name)")
        // Asked again, each one met so far is known (ifindex 9, renamed at the end, left out).
        for earlier in sequence[...step] where earlier.index != 9 {
          let known = kinds[earlier.link.kind ?? ""]!.1
          #expect(catalog.verdict(for: earlier).interfaceClass == known, "way \(way), \(earlier.name), step \(step)")
        }
      }
    }
  }

  @Test("--class wins over the link kind, without reading sysfs either")
  func overrideBeatsKind() {
    var catalog = InterfaceCatalog(classifier: Classifier(overrides: [InterfaceName("tun0"): .wifi]))
    let sample = InterfaceSample(
      name: InterfaceName("tun0"), index: 3, counters: InterfaceCounters(.zero), width: .bits64,
      link: LinkAttributes(arpType: 65534, kind: "tun"))
    let entry = catalog.entry(for: sample)
    #expect(entry.interfaceClass == .wifi)
    #expect(entry.evidence == .override)
    #expect(entry.facts.kind == "tun")
    #expect(catalog.factReads == 0)
  }

  @Test("sysfs facts are read once per new ifindex, not per sample")
  func factsAreCached() throws {
    let tree = try fixture()
    var source = SysfsCounterSource(root: tree.root)
    var catalog = InterfaceCatalog(root: tree.root)
    let clock = ManualTimeSource()
    for _ in 0..<3 {
      let sample = try source.sample(at: clock)
      _ = StatusSnapshot.make(sample: sample, catalog: &catalog, selection: InterfaceSelection())
    }
    #expect(catalog.factReads == Self.expected.count)
    // Recreate wg0 with a new ifindex: exactly one more read.
    try FileManager.default.removeItem(at: tree.directory.appendingPathComponent("wg0"))
    try tree.add("wg0", index: 40, type: 65534, uevent: "DEVTYPE=wireguard")
    let sample = try source.sample(at: clock)
    _ = StatusSnapshot.make(sample: sample, catalog: &catalog, selection: InterfaceSelection())
    #expect(catalog.factReads == Self.expected.count + 1)
  }

  @Test("missing, empty and garbage statistics leave the interface out with a problem; a ghost entry is skipped")
  func brokenStatistics() throws {
    let tree = try SysfsFixture()
    try tree.add("good0", index: 2)
    try tree.add("miss0", index: 3, omitStatistics: ["statistics/rx_bytes"])
    try tree.add("empty0", index: 4, attributes: ["statistics/tx_bytes": ""])
    try tree.add("junk0", index: 5, attributes: ["statistics/rx_packets": "12abc\n"])
    try tree.add("huge0", index: 6, attributes: ["statistics/rx_bytes": "99999999999999999999999\n"])
    try tree.add("badidx", index: 7, attributes: ["ifindex": "\u{1B}[2J\n"])
    try tree.addGhost("ghost0")
    var source = SysfsCounterSource(root: tree.root)
    let sample = try source.sample(at: ManualTimeSource())
    #expect(sample.interfaces.map(\.name) == [InterfaceName("good0")])
    let problems = Dictionary(uniqueKeysWithValues: sample.problems.map { ($0.name.escaped, $0.message) })
    #expect(Set(problems.keys) == ["miss0", "empty0", "junk0", "huge0", "badidx"])
    #expect(problems["miss0"]?.contains("rx_bytes") == true)
    #expect(problems["empty0"]?.contains("empty") == true)
    #expect(problems["junk0"]?.contains("12abc") == true)
    // The garbage is quoted escaped: no raw ESC in a message.
    #expect(problems["badidx"]?.contains("\u{1B}") == false)
  }

  @Test("status on a fixture tree through the binary: classes, problems on stderr-free JSON, exit 0")
  func binaryOnFixture() throws {
    let tree = try fixture()
    try tree.add("junk0", index: 30, attributes: ["statistics/rx_packets": "nope\n"])
    let result = try run(Built.vpnstat, ["status", "--json", "--sysfs-root", tree.directory.path])
    #expect(result.status == 0, "\(result.errors)")
    let status = try parseStatus(result)
    #expect(status["source"] as? String == "sysfs")
    for (name, interfaceClass, evidence) in Self.expected {
      let entry = try #require(interface(status, named: name), "\(name)")
      #expect(entry["class"] as? String == interfaceClass.rawValue, "\(name)")
      #expect(entry["class_by"] as? String == evidence.rawValue, "\(name)")
    }
    let problems = try #require(status["problems"] as? [[String: Any]])
    #expect(problems.map { $0["name"] as? String } == ["junk0"])
    let classes = try #require(status["classes"] as? [String: [String: Any]])
    #expect(classes["wifi"]?["interfaces"] as? Int == 3)
    #expect(uint(classes["cellular"]?["rx_bytes"]) == 3000)
    // The table says the same, and shows the problem as a warning.
    let table = try run(Built.vpnstat, ["status", "--sysfs-root", tree.directory.path, "--only", "wifi"])
    #expect(table.output.contains("wifi (3)"))
    #expect(!table.output.contains("cellular"))
    #expect(table.output.contains("warning: junk0"))
    let override = try run(
      Built.vpnstat,
      ["status", "--json", "--sysfs-root", tree.directory.path, "--class", "usb0=cellular", "-i", "usb0"])
    let overridden = try parseStatus(override)
    #expect(interfaces(overridden).count == 1)
    #expect(interface(overridden, named: "usb0")?["class_by"] as? String == "override")
  }

  @Test("netlink refused falls back to sysfs and says so")
  func fallback() throws {
    let tree = try SysfsFixture()
    try tree.add("wg0", index: 2, type: 65534)
    var reader = CounterReader(.netlink, root: tree.root, openNetlink: { throw Errno.permissionDenied })
    let sample = try reader.sample(at: ManualTimeSource())
    #expect(sample.source == .sysfs)
    #expect(sample.fallbackReason?.contains("netlink") == true)
    #expect(sample.interfaces.map(\.name) == [InterfaceName("wg0")])
  }
}
