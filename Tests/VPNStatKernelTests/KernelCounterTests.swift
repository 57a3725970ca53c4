import CLinux
import Foundation
import Testing

@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The readers and classification against the real kernel, in namespaces the tests make.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct KernelCounterTests {
  @Test("tun, tap, veth and ifb are found and classified; a tun named eth9 is a tunnel")
  func devicesAreClassified() throws {
    let ns = try TestNamespace("cls")
    let tun = try ns.peer("tun", "eth9")
    try tun.waitFor("ready")
    let tap = try ns.peer("tun", "tap7", "--tap")
    try tap.waitFor("ready")
    try ns.ip("link", "add", "vx0", "type", "veth", "peer", "name", "vx1")
    try ns.ip("link", "add", "ifb5", "type", "ifb")
    for source in ["netlink", "sysfs", "getifaddrs"] {
      let status = try parseStatus(ns.vpnstat("status", "--json", "--source", source))
      #expect(status["source"] as? String == source)
      let eth9 = try #require(interface(status, named: "eth9"), "\(source): eth9 missing")
      #expect(eth9["class"] as? String == "tunnel", "\(source)")
      #expect(["kind", "tun_flags"].contains(eth9["class_by"] as? String ?? ""), "\(source)")
      let tap7 = try #require(interface(status, named: "tap7"))
      #expect(tap7["class"] as? String == "tunnel", "\(source)")
      #expect(interface(status, named: "vx0")?["class"] as? String == "other", "\(source)")
      #expect(interface(status, named: "ifb5")?["class"] as? String == "other", "\(source)")
      #expect(interface(status, named: "lo")?["class"] as? String == "loopback", "\(source)")
      #expect(uint(eth9["counter_width"]) == (source == "getifaddrs" ? 32 : 64))
    }
    tun.stop()
    tap.stop()
  }

  @Test(
    "a fresh netlink reader's first sample is its link dump alone; the next ones read the stats dump through a table made from it"
  )
  func firstSampleIsTheLinkDump() throws {
    var source = try NetlinkCounterSource()
    let clock = SystemTimeSource()
    let first = try source.sample(at: clock)
    #expect(source.dumps == 1)
    #expect(first.interfaces.contains { $0.name == InterfaceName("lo") })
    #expect(Set(first.interfaces.map(\.index)).count == first.interfaces.count)
    let second = try source.sample(at: clock)
    // The stats dump, and a link dump only if a link appeared meanwhile (other tests make some).
    #expect(source.dumps == 2 || source.dumps == 3)
    let before = Dictionary(first.interfaces.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
    var compared = 0
    for entry in second.interfaces {
      guard let earlier = before[entry.index], earlier.name == entry.name else { continue }
      #expect(entry.link.kind == earlier.link.kind && entry.link.arpType == earlier.link.arpType, "\(entry.name)")
      #expect(entry.counters.traffic.rxBytes >= earlier.counters.traffic.rxBytes, "\(entry.name)")
      #expect(entry.counters.traffic.txPackets >= earlier.counters.traffic.txPackets, "\(entry.name)")
      compared += 1
    }
    #expect(compared > 0)
    let loopback = try #require(first.interfaces.first { $0.name == InterfaceName("lo") })
    #expect(source.links[loopback.index]?.name == InterfaceName("lo"))
  }

  @Test(
    "a link the netlink reader's table lacks is named after one fresh link dump, every name with its own index"
  )
  func unknownLinkJoinsTheTable() throws {
    // All in a namespace of the test's own: the reader's socket, the links and `ip` with them.
    let outcome = try inOwnNamespace(if: true) {
      Result {
        () throws -> (dumps: [Int], joined: CounterSample, next: CounterSample, kernel: [InterfaceName: Int32]) in
        for i in 0..<4 { try VPNStatTestSupport.ip("link", "add", "nlj\(i)", "type", "ifb") }
        var source = try NetlinkCounterSource()
        let clock = SystemTimeSource()
        _ = try source.sample(at: clock)
        _ = try source.sample(at: clock)
        let before = source.dumps
        // Appeared after the table was made, and no notification tells this reader.
        try VPNStatTestSupport.ip("link", "add", "nlj9", "type", "ifb")
        let joined = try source.sample(at: clock)
        let afterJoin = source.dumps
        let next = try source.sample(at: clock)
        return ([before, afterJoin, source.dumps], joined, next, try Self.linkIndexes())
      }
    }
    let (dumps, joined, next, kernel) = try outcome.get()
    #expect(dumps[1] == dumps[0] + 2, "the stats dump and one link dump")
    #expect(dumps[2] == dumps[1] + 1, "known now: the stats dump alone")
    #expect(joined.interfaces.count == kernel.count)
    for entry in joined.interfaces {
      #expect(kernel[entry.name] == entry.index, "\(entry.name)")
    }
    #expect(joined.interfaces.contains { $0.name == InterfaceName("nlj9") })
    #expect(next.interfaces.map(\.name) == joined.interfaces.map(\.name))
  }

  @Test(
    "a tun's carrier changes, as the link table reads them: moved when a process attaches it and when it lets go, never by an up or a down (what the enforcer's manager table trusts)"
  )
  func carrierChangesFollowHolders() throws {
    let outcome = try inOwnNamespace(if: true) {
      Result { () throws -> [(String, UInt32?)] in
        try VPNStatTestSupport.ip("tuntap", "add", "mode", "tun", "name", "cch0")
        let links = try NetlinkLinkTable()
        let name = InterfaceName("cch0")
        let index = try #require(try links.link(named: name)).index
        func count(_ moment: String) throws -> (String, UInt32?) {
          (moment, try links.link(index: index)?.carrierChanges)
        }
        var seen = [try count("made")]
        try links.setUp(index: index)
        try links.setDown(index: index)
        try links.setUp(index: index)
        seen.append(try count("up, down, up"))
        // Attached, as wireguard-go or OpenVPN attach a persistent tun: TUNSETIFF on its name.
        let fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw Errno.current }
        // Closed on every path: an open tun would keep this namespace alive to the process's end.
        var held = true
        defer { if held { close(fd) } }
        var request = [UInt8](repeating: 0, count: 64)
        request.replaceSubrange(0..<4, with: Array("cch0".utf8))
        // IFF_TUN | IFF_NO_PI, the flags field right after the 16-byte name.
        request[16] = 0x01
        request[17] = 0x10
        let attached = request.withUnsafeMutableBytes { clinux_ioctl_ptr(fd, clinux_tunsetiff(), $0.baseAddress) }
        if attached != 0 { throw Errno.current }
        seen.append(try count("attached"))
        try links.setDown(index: index)
        try links.setUp(index: index)
        seen.append(try count("attached, down, up"))
        close(fd)
        held = false
        seen.append(try count("let go"))
        return seen
      }
    }
    let seen = try outcome.get()
    let counts = seen.map(\.1)
    #expect(counts.allSatisfy { $0 != nil }, "no IFLA_CARRIER_CHANGES read: \(seen)")
    let made = try #require(counts[0])
    #expect(counts == [made, made, made + 1, made + 1, made + 2], "\(seen)")
  }

  @Test(
    "links deleted and added between samples with no notification to the reader: every name read with its own index and counters, the deleted ones absent"
  )
  func tableFollowsTheDump() throws {
    let outcome = try inOwnNamespace(if: true) {
      Result {
        () throws -> (samples: [CounterSample], kernel: [InterfaceName: Int32]) in
        for i in 0..<6 { try VPNStatTestSupport.ip("link", "add", "nlt\(i)", "type", "ifb") }
        var source = try NetlinkCounterSource()
        let clock = SystemTimeSource()
        _ = try source.sample(at: clock)
        var samples = [try source.sample(at: clock)]
        // Gaps in the table's order: the next link after one found is not the table's next.
        try VPNStatTestSupport.ip("link", "del", "nlt1")
        try VPNStatTestSupport.ip("link", "del", "nlt4")
        samples.append(try source.sample(at: clock))
        // And one the table lacks: read after a fresh link dump.
        try VPNStatTestSupport.ip("link", "add", "nlt9", "type", "ifb")
        samples.append(try source.sample(at: clock))
        samples.append(try source.sample(at: clock))
        return (samples, try Self.linkIndexes())
      }
    }
    let (samples, kernel) = try outcome.get()
    #expect(samples[0].interfaces.filter { $0.name.description.hasPrefix("nlt") }.count == 6)
    // The indexes of the links that remain are the kernel's to the end.
    for (number, sample) in samples.enumerated() where number > 0 {
      for entry in sample.interfaces {
        #expect(kernel[entry.name] == entry.index, "sample \(number): \(entry.name)")
      }
    }
    for sample in samples.dropFirst() {
      #expect(!sample.interfaces.contains { $0.name == InterfaceName("nlt1") || $0.name == InterfaceName("nlt4") })
      #expect(Set(sample.interfaces.map(\.index)).count == sample.interfaces.count)
    }
    #expect(samples[3].interfaces.map(\.name) == samples[2].interfaces.map(\.name))
    #expect(samples[3].interfaces.contains { $0.name == InterfaceName("nlt9") })
    #expect(Set(samples[3].interfaces.map(\.name)) == Set(kernel.keys))
  }

  /// Each link's ifindex in this thread's namespace, by name, as `ip` reads them.
  static func linkIndexes() throws -> [InterfaceName: Int32] {
    let listing = try VPNStatTestSupport.ip("-j", "link", "show")
    let links = try JSONSerialization.jsonObject(with: Data(listing.output.utf8)) as? [[String: Any]] ?? []
    var indexes: [InterfaceName: Int32] = [:]
    for link in links {
      if let name = link["ifname"] as? String, let index = link["ifindex"] as? Int {
        indexes[InterfaceName(name)] = Int32(index)
      }
    }
    return indexes
  }

  @Test("bytes over veth between two namespaces match the kernel's counters, for every reader")
  func vethBytesMatchKernel() throws {
    let pair = try VethPair("veth", subnet: 11)
    let sink = try pair.right.peer("udp-sink", "9000")
    try sink.waitFor("ready")
    try pair.left.peerRun("udp-send", pair.rightAddress, "9000", "300", "1000")
    // Let the last datagrams land before reading.
    usleep(100_000)
    let kernel = try pair.left.kernelCounters(pair.leftName)
    #expect(kernel.txBytes >= 300 * 1000)
    for source in ["netlink", "sysfs", "getifaddrs"] {
      let status = try parseStatus(pair.left.vpnstat("status", "--json", "--source", source))
      let veth = try #require(interface(status, named: pair.leftName))
      #expect(uint(veth["tx_bytes"]) == kernel.txBytes, "\(source)")
      #expect(uint(veth["rx_bytes"]) == kernel.rxBytes, "\(source)")
      #expect(uint(veth["tx_packets"]) == kernel.txPackets, "\(source)")
    }
    sink.stop()
  }

  @Test("bytes through a tun with a process on it appear in rx and tx as the kernel counts them")
  func tunBytesMatchKernel() throws {
    let ns = try TestNamespace("tunb")
    let tun = try ns.echoTunnel("tun3", local: "169.254.40.1", peer: "169.254.40.2")
    let sink = try ns.peer("udp-sink", "9001")
    try sink.waitFor("ready")
    try ns.peerRun("udp-send", "169.254.40.2", "9001", "200", "700", "--gap-us", "200")
    usleep(200_000)
    let kernel = try ns.kernelCounters("tun3")
    #expect(kernel.txBytes >= 200 * 728)
    #expect(kernel.rxBytes > 0)
    let status = try parseStatus(ns.vpnstat("status", "--json"))
    let tun3 = try #require(interface(status, named: "tun3"))
    #expect(tun3["class"] as? String == "tunnel")
    #expect(tun3["state"] as? String == "up")
    #expect(uint(tun3["tx_bytes"]) == kernel.txBytes)
    #expect(uint(tun3["rx_bytes"]) == kernel.rxBytes)
    let classes = try #require(status["classes"] as? [String: Any])
    let tunnel = try #require(classes["tunnel"] as? [String: Any])
    #expect(uint(tunnel["tx_bytes"]) == kernel.txBytes)
    sink.stop()
    tun.stop()
  }

  @Test("the three readers agree: netlink equals sysfs, getifaddrs equals sysfs modulo 2^32")
  func readersAgree() throws {
    let ns = try TestNamespace("agree")
    // Move some traffic over loopback so the counters are not all zero.
    let sink = try ns.peer("udp-sink", "9002")
    try sink.waitFor("ready")
    try ns.peerRun("udp-send", "127.0.0.1", "9002", "100", "1200")
    try ns.ip("link", "add", "ifb9", "type", "ifb")
    sink.stop()
    var readings: [String: [String: Any]] = [:]
    for source in ["netlink", "sysfs", "getifaddrs"] {
      readings[source] = try parseStatus(ns.vpnstat("status", "--json", "--source", source))
    }
    let reference = try #require(readings["sysfs"])
    #expect(interfaces(reference).count == 2)
    for entry in interfaces(reference) {
      let name = try #require(entry["name"] as? String)
      let netlink = try #require(interface(readings["netlink"]!, named: name))
      let getifaddrs = try #require(interface(readings["getifaddrs"]!, named: name))
      for field in ["rx_bytes", "tx_bytes", "rx_packets", "tx_packets"] {
        let expected = try #require(uint(entry[field]))
        #expect(uint(netlink[field]) == expected, "\(name) \(field)")
        #expect(uint(getifaddrs[field]) == expected % (1 << 32), "\(name) \(field)")
      }
      #expect(netlink["index"] as? Int == entry["index"] as? Int)
      #expect(getifaddrs["index"] as? Int == entry["index"] as? Int)
    }
  }

  @Test("interfaces deleted while vpnstat reads are skipped, never a crash or a made-up entry")
  func vanishingInterfaces() throws {
    let ns = try TestNamespace("gone")
    let batch = (0..<150).map { "link add gx\($0) type ifb" }.joined(separator: "\n") + "\n"
    try VPNStatTestSupport.run("/usr/sbin/ip", ["-n", ns.name, "-batch", "-"], input: Data(batch.utf8))
    let deleter = try BackgroundProcess(
      "/bin/sh",
      ["-c", "for i in $(seq 0 149); do ip -n \(ns.name) link del gx$i; done"])
    var runs = 0
    while deleter.isRunning && runs < 60 {
      for source in ["sysfs", "netlink", "getifaddrs"] {
        let result = try ns.vpnstat("status", "--json", "--source", source)
        #expect(result.status == 0, "\(source): \(result.errors)")
        let status = try parseStatus(result)
        for entry in interfaces(status) {
          // Every reported interface has a real index and was read whole.
          #expect((entry["index"] as? Int ?? 0) > 0)
          #expect(entry["rx_bytes"] is NSNumber)
        }
        #expect((status["problems"] as? [Any])?.isEmpty == true, "\(source): \(status["problems"] ?? "")")
      }
      runs += 1
    }
    // Let the deleter finish (a busy machine may be slower than 60 rounds of reads).
    #expect(deleter.child.wait(timeout: 60) == 0)
    #expect(runs > 0)
    let after = try parseStatus(ns.vpnstat("status", "--json", "--source", "sysfs"))
    #expect(interfaces(after).map { $0["name"] as? String } == ["lo"])
  }

  @Test("hostile interface names: JSON keeps them exactly, the table escapes every control byte")
  func hostileNames() throws {
    let ns = try TestNamespace("evil")
    let names: [[UInt8]] = [
      Array("e\u{1B}[2Jv".utf8),  // ESC [2J: clear screen
      [0x71, 0x22, 0x5C, 0x27, 0x6E],  // q"\'n
      [0x62, 0xFF, 0xFE, 0x61],  // not UTF-8
      Array("\u{202E}rtl".utf8),  // BiDi override
      Array("b\u{07}\u{9B}31m".utf8),  // BEL, then C1 CSI encoded as UTF-8
    ]
    for bytes in names {
      // ip takes the name as one argv word; raw bytes pass through Process as a C string.
      let word = String(decoding: bytes, as: UTF8.self)
      if String(validating: bytes, as: UTF8.self) != nil {
        try ns.ip("link", "add", "name", word, "type", "ifb")
      } else {
        let script = "ip -n \(ns.name) link add name \"$(printf 'b\\377\\376a')\" type ifb"
        let result = try VPNStatTestSupport.run("/bin/sh", ["-c", script])
        #expect(result.status == 0, "\(result.errors)")
      }
    }
    let json = try ns.vpnstat("status", "--json")
    #expect(json.status == 0)
    let status = try parseStatus(json)
    var seen: [[UInt8]] = []
    for entry in interfaces(status) {
      let text = try #require(entry["name"] as? String)
      let encoding = try #require(entry["name_encoding"] as? String)
      let bytes = encoding == "utf8" ? Array(text.utf8) : InterfaceName(parsingEscaped: text).bytes
      seen.append(bytes)
    }
    for bytes in names { #expect(seen.contains(bytes), "missing \(bytes)") }
    let table = try ns.vpnstat("status")
    #expect(table.status == 0)
    let screen = table.stdout
    for byte in screen {
      #expect(byte == 0x0A || (byte >= 0x20 && byte != 0x7F), "raw control byte \(byte) in the table")
    }
    let text = table.output
    #expect(!text.contains("\u{202E}"))
    #expect(!text.contains("\u{9B}"))
    #expect(text.contains("e\\x1b[2Jv"))
  }
}
