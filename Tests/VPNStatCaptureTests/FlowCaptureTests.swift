import Foundation
import Testing

@testable import VPNStatCapture
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// `vpnstat flows` without the kernel: parsing, aggregation, attribution from a fixture /proc,
/// capture files of every supported link type, broken files, and the renderers.
struct FlowCaptureTests {
  static let links: [CaptureLinkType] = [.rawIP, .ethernet, .linuxCooked, .linuxCooked2]

  func parse(_ packet: TestPacket, _ link: CaptureLinkType, keep: Int? = nil) -> ParsedFrame {
    let frame = packet.frame(link)
    let kept = Array(frame.prefix(keep ?? frame.count))
    return kept.withUnsafeBytes { PacketParser.parse($0, wireLength: frame.count, link: link) }
  }

  @Test("every link type yields the same 5-tuple and IP length; cooked headers give the direction")
  func parserAcrossLinks() throws {
    let packets = [
      TestPacket(
        source: "169.254.1.1", destination: "169.254.1.2", ipProtocol: 17, sourcePort: 5000,
        destinationPort: 53, payload: 33),
      TestPacket(
        source: "fd00::1", destination: "fd00::2", ipProtocol: 6, sourcePort: 40_000,
        destinationPort: 443, payload: 1000),
      TestPacket(
        source: "169.254.1.1", destination: "169.254.1.9", ipProtocol: 1, payload: 56,
        outgoing: false),
    ]
    for packet in packets {
      for link in Self.links {
        guard case .ip(let summary) = parse(packet, link) else {
          Issue.record("\(link): not parsed as IP")
          continue
        }
        #expect(summary.source == IPAddress(parsing: packet.source))
        #expect(summary.destination == IPAddress(parsing: packet.destination))
        #expect(summary.ipProtocol == packet.ipProtocol)
        #expect(summary.ipLength == UInt32(packet.ipLength), "\(link)")
        #expect(summary.portsKnown == (packet.ipProtocol != 1), "\(link)")
        if summary.portsKnown {
          #expect(
            summary.sourcePort == packet.sourcePort
              && summary.destinationPort == packet.destinationPort)
        }
        switch link {
        case .linuxCooked, .linuxCooked2:
          #expect(summary.direction == (packet.outgoing ? .transmitted : .received), "\(link)")
        default:
          #expect(summary.direction == nil)
        }
      }
    }
  }

  @Test(
    "headers cut by the snapshot length still count the IP length; broken headers are not flows")
  func parserEdges() throws {
    let packet = TestPacket(
      source: "169.254.1.1", destination: "169.254.1.2", ipProtocol: 6, sourcePort: 1,
      destinationPort: 2, payload: 1400)
    // 20 bytes of IPv4 header and 2 of TCP: the length is known, the ports are not.
    guard case .ip(let cut) = parse(packet, .rawIP, keep: 22) else {
      Issue.record("cut packet lost")
      return
    }
    #expect(cut.ipLength == UInt32(packet.ipLength))
    #expect(!cut.portsKnown)
    #expect(parse(packet, .rawIP, keep: 12) == .malformed)
    #expect(parse(packet, .ethernet, keep: 10) == .malformed)
    // ARP over Ethernet is counted but is not IP.
    let arp: [UInt8] =
      [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 2, 0, 0, 0, 0, 1, 0x08, 0x06]
      + [UInt8](repeating: 0, count: 28)
    #expect(
      arp.withUnsafeBytes { PacketParser.parse($0, wireLength: arp.count, link: .ethernet) }
        == .notIP)
    // A non-first IPv4 fragment has no ports.
    var fragment = packet.ipBytes()
    fragment[7] = 0x10
    guard
      case .ip(let later) = fragment.withUnsafeBytes({
        PacketParser.parse($0, wireLength: fragment.count, link: .rawIP)
      })
    else {
      Issue.record("fragment lost")
      return
    }
    #expect(!later.portsKnown)
    // A VLAN tag is skipped.
    let frame = packet.frame(.ethernet)
    let tagged = Array(frame[0..<12]) + [0x81, 0x00, 0x00, 0x07] + Array(frame[12...])
    guard
      case .ip(let vlan) = tagged.withUnsafeBytes({
        PacketParser.parse($0, wireLength: tagged.count, link: .ethernet)
      })
    else {
      Issue.record("vlan lost")
      return
    }
    #expect(vlan.destinationPort == 2)
    // IPv6 with a hop-by-hop header before TCP.
    var v6 = TestPacket(
      source: "fd00::1", destination: "fd00::2", ipProtocol: 6, sourcePort: 7, destinationPort: 8,
      payload: 10
    ).ipBytes()
    let transport = Array(v6[40...])
    v6 = Array(v6[0..<40]) + [6, 0, 0, 0, 0, 0, 0, 0] + transport
    v6[6] = 0
    v6[5] = UInt8(transport.count + 8)
    guard
      case .ip(let hop) = v6.withUnsafeBytes({
        PacketParser.parse($0, wireLength: v6.count, link: .rawIP)
      })
    else {
      Issue.record("v6 lost")
      return
    }
    #expect(hop.ipProtocol == 6 && hop.sourcePort == 7 && hop.ipLength == UInt32(v6.count))
  }

  @Test("both directions of a conversation are one flow; local ends follow the evidence")
  func tableDirections() throws {
    let traffic = KnownTraffic(seed: 11)
    for link in Self.links {
      // Without local addresses only the cooked types know the direction for sure, and the
      // first-packet rule agrees because every flow here starts outgoing.
      var table = FlowTable(
        localAddresses: link == .rawIP
          ? [IPAddress(parsing: traffic.localV4)!, IPAddress(parsing: traffic.localV6)!] : [])
      for packet in traffic.packets {
        let frame = packet.frame(link)
        frame.withUnsafeBytes {
          table.add(
            frame: $0, wireLength: frame.count, link: link, at: Timestamp(nanoseconds: packet.time))
        }
      }
      #expect(table.flows.count == traffic.expected.count, "\(link)")
      #expect(table.totals.bytes == UInt64(traffic.totalIPBytes))
      #expect(
        table.totals.linkBytes == UInt64(traffic.packets.reduce(0) { $0 + $1.frame(link).count })
          - UInt64(traffic.packets.count * link.pseudoHeaderLength))
      for flow in table.flows {
        let key = ExpectedFlow(
          ipProtocol: PacketParser.protocolName(flow.ipProtocol),
          local: flow.localAddress.description,
          localPort: flow.portsKnown ? Int(flow.localPort) : nil,
          remote: flow.remoteAddress.description,
          remotePort: flow.portsKnown ? Int(flow.remotePort) : nil
        ).key
        let expected = try #require(traffic.expected[key], "\(link): unexpected flow \(key)")
        #expect(
          flow.counts.txBytes == UInt64(expected.txBytes)
            && flow.counts.rxBytes == UInt64(expected.rxBytes), "\(link) \(key)")
        #expect(
          flow.counts.txPackets == UInt64(expected.txPackets)
            && flow.counts.rxPackets == UInt64(expected.rxPackets))
        let evidence: LocalEvidence =
          link == .rawIP ? .localAddress : (link == .ethernet ? .firstPacket : .packetType)
        #expect(flow.localBy == evidence, "\(link)")
      }
    }
  }

  @Test("group traffic from another host is received, whatever came first; ours to a group is sent")
  func multicastDirection() throws {
    var table = FlowTable(localAddresses: [IPAddress(parsing: "fe80::1")!])
    let stranger = TestPacket(
      source: "fe80::2", destination: "ff02::16", ipProtocol: 58, payload: 20)
    let ours = TestPacket(
      source: "fe80::1", destination: "ff02::fb", ipProtocol: 17, sourcePort: 5353,
      destinationPort: 5353, payload: 40)
    let broadcast = TestPacket(
      source: "169.254.8.8", destination: "255.255.255.255", ipProtocol: 17, sourcePort: 68,
      destinationPort: 67, payload: 300)
    for packet in [stranger, ours, broadcast] { add(&table, packet) }
    let received = try #require(
      table.flows.first { $0.remoteAddress == IPAddress(parsing: "fe80::2") })
    #expect(received.localBy == .multicast && received.counts.rxBytes == UInt64(stranger.ipLength))
    let sent = try #require(table.flows.first { $0.localAddress == IPAddress(parsing: "fe80::1") })
    #expect(sent.localBy == .localAddress && sent.counts.txBytes == UInt64(ours.ipLength))
    let dhcp = try #require(
      table.flows.first { $0.remoteAddress == IPAddress(parsing: "169.254.8.8") })
    #expect(dhcp.counts.rxBytes == UInt64(broadcast.ipLength))
  }

  // MARK: process attribution from a fixture /proc

  final class FixtureProc: @unchecked Sendable {
    let directory: CaptureDirectory
    var root: SystemPath { SystemPath(directory.url.path) }
    init() throws {
      directory = try CaptureDirectory()
      try FileManager.default.createDirectory(
        atPath: directory.path("net"), withIntermediateDirectories: true)
      for table in ["tcp", "tcp6", "udp", "udp6"] { try setTable(table, []) }
    }
    func setTable(_ name: String, _ lines: [String]) throws {
      let header =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      try (header + lines.map { $0 + "\n" }.joined()).write(
        toFile: directory.path("net/\(name)"), atomically: true, encoding: .utf8)
    }
    func process(_ pid: Int, comm: String, sockets: [UInt64]) throws {
      let fd = directory.path("\(pid)/fd")
      try FileManager.default.createDirectory(atPath: fd, withIntermediateDirectories: true)
      try (comm + "\n").write(
        toFile: directory.path("\(pid)/comm"), atomically: true, encoding: .utf8)
      try FileManager.default.createSymbolicLink(
        atPath: fd + "/0", withDestinationPath: "/dev/null")
      for (n, inode) in sockets.enumerated() {
        try FileManager.default.createSymbolicLink(
          atPath: fd + "/\(n + 3)", withDestinationPath: "socket:[\(inode)]")
      }
    }
    /// `/proc/net` hex for an IPv4 endpoint on this (little-endian) machine.
    static func v4(_ address: String, _ port: UInt16) -> String {
      let value = UInt32(truncatingIfNeeded: IPAddress(parsing: address)!.low)
      return String(format: "%08X:%04X", value.byteSwapped, port)
    }
    static func v6(_ address: String, _ port: UInt16) -> String {
      let bytes = IPAddress(parsing: address)!.networkBytes
      var text = ""
      for word in 0..<4 {
        let chunk = bytes[(word * 4)..<(word * 4 + 4)]
        text += chunk.reversed().map { String(format: "%02X", $0) }.joined()
      }
      return text + String(format: ":%04X", port)
    }
    static func line(_ local: String, _ remote: String, state: String, inode: UInt64) -> String {
      "   0: \(local) \(remote) \(state) 00000000:00000000 00:00000000 00000000     0        0 \(inode) 1 0000000000000000 100 0 0 10 0"
    }
  }

  func add(_ table: inout FlowTable, _ packet: TestPacket) {
    let frame = packet.frame(.rawIP)
    frame.withUnsafeBytes {
      table.add(
        frame: $0, wireLength: frame.count, link: .rawIP, at: Timestamp(nanoseconds: packet.time))
    }
  }

  @Test("/proc/net entries parse: a connected TCP socket, a dual-stack UDP wildcard, a v6 listener")
  func socketTableParsing() throws {
    let proc = try FixtureProc()
    try proc.setTable(
      "tcp",
      [
        FixtureProc.line(
          FixtureProc.v4("169.254.3.1", 40_001), FixtureProc.v4("169.254.3.9", 443), state: "01",
          inode: 501)
      ])
    try proc.setTable(
      "udp6",
      [
        FixtureProc.line(
          FixtureProc.v6("::", 5353), FixtureProc.v6("::", 0), state: "07", inode: 502)
      ])
    try proc.setTable(
      "tcp6",
      [
        FixtureProc.line(
          FixtureProc.v6("fd00:3::1", 22), FixtureProc.v6("::", 0), state: "0A", inode: 503)
      ])
    let table = SocketTable.read(procRoot: proc.root)
    let a = IPAddress(parsing: "169.254.3.1")!
    let b = IPAddress(parsing: "169.254.3.9")!
    #expect(
      table.inode(ipProtocol: 6, local: a, localPort: 40_001, remote: b, remotePort: 443) == 501)
    #expect(
      table.inode(ipProtocol: 6, local: a, localPort: 40_002, remote: b, remotePort: 443) == nil)
    // An IPv4 datagram to port 5353 reaches the dual-stack :: socket.
    #expect(table.inode(ipProtocol: 17, local: a, localPort: 5353, remote: b, remotePort: 9) == 502)
    #expect(
      table.inode(
        ipProtocol: 6, local: IPAddress(parsing: "fd00:3::1")!, localPort: 22,
        remote: IPAddress(parsing: "fd00:3::7")!, remotePort: 5000) == 503)
  }

  @Test(
    "owners are found through /proc/PID/fd; a socket gone before the lookup leaves its bytes unknown"
  )
  func attribution() throws {
    let proc = try FixtureProc()
    let local = "169.254.3.1"
    try proc.setTable(
      "udp",
      [
        FixtureProc.line(
          FixtureProc.v4("0.0.0.0", 41_000), FixtureProc.v4("0.0.0.0", 0), state: "07", inode: 900)
      ])
    try proc.process(4242, comm: "curl\u{1B}[2J", sockets: [900])
    try proc.process(4243, comm: "idle", sockets: [901])
    let resolver = SocketOwnerResolver(procRoot: proc.root, minimumInterval: .seconds(1))
    var table = FlowTable(localAddresses: [IPAddress(parsing: local)!], attributionEnabled: true)
    let owned = TestPacket(
      source: local, destination: "169.254.3.9", ipProtocol: 17, sourcePort: 41_000,
      destinationPort: 53, payload: 100)
    let orphan = TestPacket(
      source: local, destination: "169.254.3.9", ipProtocol: 17, sourcePort: 41_001,
      destinationPort: 53, payload: 200)
    add(&table, owned)
    add(&table, orphan)
    #expect(table.pendingCount == 2)
    let wall = Timestamp(seconds: 1_800_000_000)
    #expect(resolver.resolve(&table, at: 0, wall: wall, force: false))
    #expect(table.pendingCount == 0)
    let ownedFlow = try #require(table.flows.first { $0.localPort == 41_000 })
    #expect(ownedFlow.owner == SocketOwner(pid: 4242, command: "curl\u{1B}[2J"))
    let orphanFlow = try #require(table.flows.first { $0.localPort == 41_001 })
    #expect(orphanFlow.owner == nil)
    #expect(orphanFlow.unknownCounts.txBytes == UInt64(orphan.ipLength))

    // A new flow inside the rate limit waits; forced (the end of an interval) it is looked up.
    let later = TestPacket(
      source: local, destination: "169.254.3.10", ipProtocol: 17, sourcePort: 41_002,
      destinationPort: 53, payload: 300)
    add(&table, later)
    #expect(!resolver.resolve(&table, at: 500_000_000, wall: wall, force: false))
    #expect(table.pendingCount == 1)
    // Its socket appears; the orphan's port is reused by another process before more traffic.
    try proc.setTable(
      "udp",
      [
        FixtureProc.line(
          FixtureProc.v4("0.0.0.0", 41_000), FixtureProc.v4("0.0.0.0", 0), state: "07", inode: 900),
        FixtureProc.line(
          FixtureProc.v4("0.0.0.0", 41_001), FixtureProc.v4("0.0.0.0", 0), state: "07", inode: 901),
        FixtureProc.line(
          FixtureProc.v4("0.0.0.0", 41_002), FixtureProc.v4("0.0.0.0", 0), state: "07", inode: 902),
      ])
    try proc.process(4244, comm: "dig", sockets: [902])
    var more = orphan
    more.time += 1_000_000_000
    add(&table, more)
    #expect(resolver.resolve(&table, at: 600_000_000, wall: wall + .seconds(1), force: true))
    #expect(table.flows.first { $0.localPort == 41_002 }?.owner?.pid == 4244)
    let matchedLate = try #require(table.flows.first { $0.localPort == 41_001 })
    #expect(matchedLate.owner?.pid == 4243)
    // The bytes from before the late match stay with unknown; only later ones would move.
    #expect(matchedLate.unknownCounts.txBytes == UInt64(orphan.ipLength * 2))
    #expect(matchedLate.attributedCounts.txBytes == 0)
    #expect(resolver.scans == 2)

    let aggregator = FlowAggregator(localAddresses: [], resolver: nil)
    aggregator.table = table
    let snapshot = aggregator.report(
      origin: .interface(InterfaceName("tun0"), index: 3), linkType: .rawIP, generatedAt: wall,
      startedAt: wall,
      intervalSeconds: 1, elapsedSeconds: 1, drops: nil, interfaceCounters: nil, restarts: 0,
      warnings: [],
      captureTime: nil)
    let unknown = try #require(snapshot.processes.first { $0.key == nil })
    #expect(unknown.total.txBytes == UInt64(orphan.ipLength * 2))
    let sum = snapshot.processes.reduce(TrafficCounts()) { $0 + $1.total }
    #expect(sum.bytes == table.totals.bytes, "every byte is in exactly one process entry")
  }

  @Test("frames added in one batch make the table that adding them one by one makes")
  func batchMatchesOneByOne() {
    let frames: [(bytes: [UInt8], time: Timestamp)] = (0..<600).map { i in
      let v6 = i % 4 == 0
      let near = v6 ? "fd00::1" : "169.254.0.1"
      let far = v6 ? "fd00::2:\(String(i % 37, radix: 16))" : "169.254.3.\(i % 37)"
      let reply = i % 3 == 0
      let packet = TestPacket(
        source: reply ? far : near, destination: reply ? near : far, ipProtocol: i % 2 == 0 ? 6 : 17,
        sourcePort: reply ? 443 : UInt16(40_000 + i % 5), destinationPort: reply ? UInt16(40_000 + i % 5) : 443,
        payload: i % 90, time: Int64(i) * 1_000_000)
      // Every 50th frame is cut inside its IP header: counted, never a flow.
      let frame = packet.frame(.rawIP)
      return (i % 50 == 49 ? Array(frame.prefix(12)) : frame, Timestamp(nanoseconds: Int64(i) * 1_000_000))
    }
    var single = FlowTable(localAddresses: [IPAddress(parsing: "169.254.0.1")!])
    var batched = single
    for frame in frames {
      frame.bytes.withUnsafeBytes { single.add(frame: $0, wireLength: frame.bytes.count, link: .rawIP, at: frame.time) }
    }
    batched.add(link: .rawIP) { add in
      for frame in frames { frame.bytes.withUnsafeBytes { add($0, frame.bytes.count, frame.time) } }
    }
    #expect(batched.totals == single.totals)
    #expect(batched.totals.nonIPPackets == 12 && batched.totals.packets == 600)
    #expect(batched.flows.count == single.flows.count && single.flows.count > 50)
    for (a, b) in zip(batched.flows, single.flows) {
      #expect(
        a.ipProtocol == b.ipProtocol && a.remoteAddress == b.remoteAddress && a.remotePort == b.remotePort
          && a.localPort == b.localPort && a.counts == b.counts && a.lastSeen == b.lastSeen
          && a.firstSeen == b.firstSeen
          && a.localAddress == b.localAddress && a.localBy == b.localBy)
    }
  }

  @Test(
    "a report lists flows by bytes this interval, then bytes in all, then remote end, ports, protocol; else in table order"
  )
  func reportOrder() {
    let aggregator = FlowAggregator(localAddresses: [IPAddress(parsing: "169.254.0.1")!], resolver: nil)
    // Sizes from a few values, so that many flows tie on bytes and the later keys decide; two
    // local addresses with the same ends otherwise (every 60th packet repeats the pattern), so
    // that some flows tie on every key and only the table's order is left.
    for i in 0..<400 {
      let base = i % 60
      let v6 = base % 5 == 0
      let near = v6 ? "fd00::1" : "169.254.0.\(1 + i / 60 % 2)"
      let far = v6 ? "fd00::\(String(base % 3 + 2, radix: 16))" : "169.254.9.\(base % 3)"
      let packet = TestPacket(
        source: near, destination: far, ipProtocol: base % 4 == 0 ? 6 : 17, sourcePort: UInt16(40_000 + base % 20),
        destinationPort: UInt16(53 + base / 20), payload: base % 3 * 10, time: Int64(i) * 1_000_000)
      let frame = packet.frame(.rawIP)
      frame.withUnsafeBytes {
        aggregator.table.add(
          frame: $0, wireLength: frame.count, link: .rawIP, at: Timestamp(nanoseconds: Int64(i) * 1_000_000))
      }
    }
    func report(_ seconds: Int64) -> FlowSnapshot {
      aggregator.report(
        origin: .file("order.pcap"), linkType: .rawIP, generatedAt: Timestamp(seconds: seconds),
        startedAt: Timestamp(seconds: 0), intervalSeconds: 1, elapsedSeconds: 1, drops: nil,
        interfaceCounters: nil, restarts: 0, warnings: [], captureTime: nil)
    }
    // The order a stable sort of the table's flows by the documented keys gives.
    func expected() -> [[UInt64]] {
      let flows = aggregator.table.flows.enumerated().map { ($0, $1, $1.counts - $1.reported) }
      return flows.sorted { a, b in
        if a.2.bytes != b.2.bytes { return a.2.bytes > b.2.bytes }
        if a.1.counts.bytes != b.1.counts.bytes { return a.1.counts.bytes > b.1.counts.bytes }
        let x = a.1
        let y = b.1
        if (x.remoteAddress, x.remotePort, x.localPort, x.ipProtocol) != (
          y.remoteAddress, y.remotePort, y.localPort, y.ipProtocol
        ) {
          return (x.remoteAddress, x.remotePort, x.localPort, x.ipProtocol) < (
            y.remoteAddress, y.remotePort, y.localPort, y.ipProtocol
          )
        }
        return a.0 < b.0
      }.map { [UInt64($0.0), $0.2.bytes] }
    }
    func listed(_ snapshot: FlowSnapshot) -> [[UInt64]] {
      snapshot.flows.map { report in
        let index = aggregator.table.flows.firstIndex {
          $0.key == report.flow.key && $0.localAddress == report.flow.localAddress
        }
        return [UInt64(index ?? -1), report.interval.bytes]
      }
    }
    let want = expected()
    let first = report(1)
    #expect(first.flows.count == aggregator.table.flows.count && first.flows.count > 50)
    #expect(listed(first) == want)
    // Ties on every key but the table's order: the report keeps it.
    let tied = Dictionary(grouping: first.flows) {
      "\($0.interval.bytes) \($0.flow.counts.bytes) \($0.flow.remoteAddress) \($0.flow.remotePort) \($0.flow.localPort) \($0.flow.ipProtocol)"
    }
    #expect(tied.values.contains { $0.count > 1 }, "the traffic makes flows that tie on every key")
    // A second report: nothing moved this interval, so the totals decide.
    let second = report(2)
    #expect(second.flows.allSatisfy { $0.interval.bytes == 0 })
    #expect(listed(second) == expected())
  }

  @Test("an IPv4 address is written as inet_ntop writes it")
  func ipv4Text() {
    let values: [UInt32] =
      [0, 0xFFFF_FFFF, 0x0102_0304, 0x0A64_0009, 0xA9FE_0001, 0x6463_0A09, 0x00FF_0010]
      + (0..<200).map { UInt32(truncatingIfNeeded: $0 &* 2_654_435_761) }
    for value in values {
      var address = in_addr(s_addr: value.bigEndian)
      var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
      inet_ntop(AF_INET, &address, &text, socklen_t(text.count))
      #expect(IPAddress(ipv4: value).description == String(cString: text))
    }
  }

  @Test("thousands of flows, v4 and v6, each direction found again; after idle flows leave, the rest still are")
  func manyFlowsFoundAgain() {
    var table = FlowTable(localAddresses: [])
    func packet(_ i: Int, reply: Bool, at seconds: Int64) -> TestPacket {
      let v6 = i % 3 == 0
      let near = v6 ? "fd00::1" : "169.254.0.1"
      let far = v6 ? "fd00::\(String(i / 500, radix: 16)):\(String(i, radix: 16))" : "169.254.\(1 + i / 250).\(i % 250)"
      let port = UInt16(30_000 + i % 7)
      return TestPacket(
        source: reply ? far : near, destination: reply ? near : far, ipProtocol: i % 2 == 0 ? 6 : 17,
        sourcePort: reply ? 443 : port, destinationPort: reply ? port : 443, payload: 10, time: seconds * 1_000_000_000)
    }
    func send(_ packet: TestPacket, at seconds: Int64) {
      let frame = packet.frame(.rawIP)
      frame.withUnsafeBytes {
        table.add(frame: $0, wireLength: frame.count, link: .rawIP, at: Timestamp(seconds: seconds))
      }
    }
    let count = 3000
    for i in 0..<count { send(packet(i, reply: false, at: 0), at: 0) }
    for i in 0..<count { send(packet(i, reply: true, at: 1), at: i < count / 2 ? 1 : 100) }
    #expect(table.flows.count == count)
    #expect(table.flows.allSatisfy { $0.counts.txPackets == 1 && $0.counts.rxPackets == 1 })
    let gone = table.removeIdle(before: Timestamp(seconds: 50))
    #expect(gone.count == count / 2 && table.flows.count == count / 2)
    for i in (count / 2)..<count { send(packet(i, reply: false, at: 101), at: 101) }
    #expect(table.flows.count == count / 2, "every remaining flow was found again, none added")
    #expect(table.flows.allSatisfy { $0.counts.txPackets == 2 && $0.counts.rxPackets == 1 })
  }

  @Test("a flow idle past the timeout leaves the flow list; its traffic stays in its host's and process's totals")
  func idleFlowsKeepTheirTraffic() throws {
    let local = "169.254.7.1"
    let aggregator = FlowAggregator(
      localAddresses: [IPAddress(parsing: local)!], resolver: nil, idleTimeout: .seconds(10))
    var sent: [TestPacket] = []
    func send(port: UInt16, payload: Int, at seconds: Int64) {
      let packet = TestPacket(
        source: local, destination: "169.254.7.2", ipProtocol: 17, sourcePort: port, destinationPort: 53,
        payload: payload, time: seconds * 1_000_000_000)
      sent.append(packet)
      let frame = packet.frame(.rawIP)
      frame.withUnsafeBytes {
        aggregator.table.add(frame: $0, wireLength: frame.count, link: .rawIP, at: Timestamp(seconds: seconds))
      }
    }
    func report(at seconds: Int64) -> FlowSnapshot {
      aggregator.report(
        origin: .file("idle.pcap"), linkType: .rawIP, generatedAt: Timestamp(seconds: seconds),
        startedAt: Timestamp(seconds: 0), intervalSeconds: 1, elapsedSeconds: Double(seconds), drops: nil,
        interfaceCounters: nil, restarts: 0, warnings: [], captureTime: Timestamp(seconds: seconds))
    }
    send(port: 40_000, payload: 100, at: 0)
    send(port: 40_001, payload: 200, at: 0)
    #expect(report(at: 1).flows.count == 2)
    send(port: 40_001, payload: 300, at: 20)
    _ = report(at: 21)  // the flow on port 40000, idle since 0, leaves after this report
    let later = report(at: 22)
    #expect(later.flows.map(\.flow.localPort) == [40_001])
    let everything = UInt64(sent.reduce(0) { $0 + $1.ipLength })
    let host = try #require(later.hosts.first)
    #expect(later.hosts.count == 1 && host.total.txBytes == everything && host.flows == 2)
    let unknown = try #require(later.processes.first { $0.key == nil })
    #expect(unknown.total.txBytes == everything && unknown.flows == 2)
    #expect(aggregator.table.totals.bytes == everything)
  }

  @Test("sockets known from the start resolve new flows without another walk of /proc")
  func startupScanIsACache() throws {
    let proc = try FixtureProc()
    try proc.setTable(
      "udp6",
      [FixtureProc.line(FixtureProc.v6("::", 53), FixtureProc.v6("::", 0), state: "07", inode: 31)])
    try proc.process(53, comm: "resolver", sockets: [31])
    let resolver = SocketOwnerResolver(procRoot: proc.root, minimumInterval: .seconds(10))
    resolver.rescan(for: [], at: 0)
    var table = FlowTable(
      localAddresses: [IPAddress(parsing: "fd00:5::1")!], attributionEnabled: true)
    add(
      &table,
      TestPacket(
        source: "fd00:5::9", destination: "fd00:5::1", ipProtocol: 17, sourcePort: 999,
        destinationPort: 53, payload: 30))
    resolver.resolve(&table, at: 1_000_000, wall: Timestamp(seconds: 0), force: false)
    #expect(table.flows.first?.owner == SocketOwner(pid: 53, command: "resolver"))
    #expect(resolver.scans == 1, "no walk beyond the one at the start")
  }

  @Test("a flow whose first packet came in is turned round when a local socket owns the other end")
  func socketDecidesLocalEnd() throws {
    let proc = try FixtureProc()
    try proc.setTable(
      "tcp",
      [
        FixtureProc.line(
          FixtureProc.v4("169.254.4.1", 8080), FixtureProc.v4("169.254.4.2", 50_000), state: "01",
          inode: 77)
      ])
    try proc.process(10, comm: "server", sockets: [77])
    let resolver = SocketOwnerResolver(procRoot: proc.root)
    var table = FlowTable(localAddresses: [], attributionEnabled: true)
    let request = TestPacket(
      source: "169.254.4.2", destination: "169.254.4.1", ipProtocol: 6, sourcePort: 50_000,
      destinationPort: 8080, payload: 10)
    add(&table, request)
    resolver.resolve(&table, at: 0, wall: Timestamp(seconds: 0), force: true)
    let flow = try #require(table.flows.first)
    #expect(flow.localBy == .socket)
    #expect(flow.localAddress == IPAddress(parsing: "169.254.4.1") && flow.localPort == 8080)
    #expect(flow.counts.rxBytes == UInt64(request.ipLength) && flow.counts.txBytes == 0)
    var reply = request
    swap(&reply.source, &reply.destination)
    swap(&reply.sourcePort, &reply.destinationPort)
    reply.payload = 99
    add(&table, reply)
    #expect(table.flows.first?.counts.txBytes == UInt64(reply.ipLength))
  }

  // MARK: files through the binary

  func readJSON(_ path: String, _ extra: [String] = []) throws -> (CommandResult, [[String: Any]]) {
    let result = try run(Built.vpnstat, ["flows", "--read", path, "--json"] + extra)
    return (result, try jsonLines(result))
  }

  func check(_ report: [String: Any], against traffic: KnownTraffic, _ label: String) throws {
    let flows = flowsByKey(report)
    #expect(flows.count == traffic.expected.count, "\(label): \(flows.keys.sorted())")
    for (key, expected) in traffic.expected {
      let flow = try #require(flows[key], "\(label): missing \(key) in \(flows.keys.sorted())")
      #expect(uint(flow["tx_bytes"]) == UInt64(expected.txBytes), "\(label) \(key)")
      #expect(uint(flow["rx_bytes"]) == UInt64(expected.rxBytes), "\(label) \(key)")
      #expect(uint(flow["tx_packets"]) == UInt64(expected.txPackets), "\(label) \(key)")
      #expect(uint(flow["rx_packets"]) == UInt64(expected.rxPackets), "\(label) \(key)")
      #expect(
        flow["pid"] is NSNull && flow["command"] is NSNull, "\(label): files have no processes")
    }
    let captured = try #require(report["captured"] as? [String: Any])
    #expect(uint(captured["bytes"]) == UInt64(traffic.totalIPBytes), "\(label)")
    #expect(uint(captured["packets"]) == UInt64(traffic.packets.count), "\(label)")
    #expect(report["estimate"] as? Bool == true)
    #expect(report["interface_counters"] is NSNull && report["coverage"] is NSNull)
  }

  @Test(
    "capture files in raw IP, Ethernet, cooked v1 and v2 (pcap and pcapng) give exact totals per flow"
  )
  func filesOfEveryLinkType() throws {
    let directory = try CaptureDirectory()
    let traffic = KnownTraffic(seed: 3, flows: 8)
    let local = ["--local", traffic.localV4, "--local", traffic.localV6]
    for link in Self.links {
      let pcap = directory.path("\(link).pcap")
      try CaptureFiles.writePcap(traffic.packets, link: link, to: pcap)
      let (result, reports) = try readJSON(pcap, local)
      #expect(result.status == 0, "\(link): \(result.errors)")
      let report = try #require(reports.last)
      #expect(reports.count == 1)
      #expect(report["link_type"] as? String == link.name)
      try check(report, against: traffic, "\(link) pcap")
      // Without --local the first packet's sender is local: the same here, every flow starts out.
      try check(
        try #require(try readJSON(pcap).1.last), against: traffic, "\(link) pcap first-packet rule")

      let pcapng = directory.path("\(link).pcapng")
      try CaptureFiles.pcapng(traffic.packets, link: link).write(to: URL(fileURLWithPath: pcapng))
      let (ngResult, ngReports) = try readJSON(pcapng, local)
      #expect(ngResult.status == 0, "\(link) pcapng: \(ngResult.errors)")
      try check(try #require(ngReports.last), against: traffic, "\(link) pcapng")
    }
  }

  @Test(
    "a filter selects, --write saves what was read, --interval slices packet time, --top limits")
  func filterWriteIntervalTop() throws {
    let directory = try CaptureDirectory()
    let traffic = KnownTraffic(seed: 5, flows: 6)
    let pcap = directory.path("in.pcap")
    try CaptureFiles.writePcap(traffic.packets, link: .ethernet, to: pcap)
    let saved = directory.path("udp.pcap")
    let (result, reports) = try readJSON(
      pcap,
      ["--filter", "udp", "--write", saved, "--local", traffic.localV4, "--local", traffic.localV6])
    #expect(result.status == 0, "\(result.errors)")
    let udpExpected = traffic.expected.values.filter { $0.ipProtocol == "udp" }
    let flows = flowsByKey(try #require(reports.last))
    #expect(Set(flows.keys) == Set(udpExpected.map(\.key)))
    let (again, rereports) = try readJSON(
      saved, ["--local", traffic.localV4, "--local", traffic.localV6])
    #expect(again.status == 0)
    for expected in udpExpected {
      #expect(
        uint(flowsByKey(try #require(rereports.last))[expected.key]?["tx_bytes"])
          == UInt64(expected.txBytes))
    }

    // "-" reads standard input, as tcpdump -w - writes it.
    let piped = try run(
      Built.vpnstat, ["flows", "--read", "-", "--json"],
      input: try Data(contentsOf: URL(fileURLWithPath: pcap)))
    #expect(piped.status == 0, "\(piped.errors)")
    #expect(
      uint((try jsonLines(piped).last?["captured"] as? [String: Any])?["bytes"])
        == UInt64(traffic.totalIPBytes))

    // Piped into head: more reports than a pipe holds, and vpnstat ends quietly with 0.
    let headed = try run(
      "/bin/bash",
      [
        "-c",
        "'\(Built.vpnstat)' flows --read '\(pcap)' --json --interval 1ms | head -c 10 >/dev/null; exit ${PIPESTATUS[0]}",
      ])
    #expect(headed.status == 0, "\(headed.errors)")

    // Slices of 20 ms of packet time: bytes per slice add up to the whole.
    let (sliced, slices) = try readJSON(pcap, ["--interval", "20ms"])
    #expect(sliced.status == 0)
    #expect(slices.count > 1)
    let sum = slices.compactMap { uint(($0["captured"] as? [String: Any])?["interval_bytes"]) }
      .reduce(0, +)
    #expect(sum == UInt64(traffic.totalIPBytes))
    let (_, limited) = try readJSON(pcap, ["--interval", "20ms", "--count", "2", "--top", "1"])
    #expect(limited.count == 2)
    #expect(limited.allSatisfy { ($0["flows"] as? [Any])?.count ?? 0 <= 1 })
  }

  @Test(
    "truncated and corrupt files exit 65, say how far they were read, and still report those flows")
  func brokenFiles() throws {
    let directory = try CaptureDirectory()
    let traffic = KnownTraffic(seed: 9, flows: 4)
    let pcap = directory.path("whole.pcap")
    try CaptureFiles.writePcap(traffic.packets, link: .rawIP, to: pcap)
    let whole = try Data(contentsOf: URL(fileURLWithPath: pcap))
    // Cut in the middle of the last packet's data.
    let truncated = directory.path("truncated.pcap")
    try whole.prefix(whole.count - 5).write(to: URL(fileURLWithPath: truncated))
    let (result, reports) = try readJSON(truncated)
    #expect(result.status == 65, "\(result.errors)")
    #expect(result.errors.contains("truncated"), "\(result.errors)")
    #expect(
      result.errors.contains("after \(traffic.packets.count - 1) packets"), "\(result.errors)")
    let partial = try #require(reports.last, "the flows read so far are printed")
    let lastLength = traffic.packets.last!.ipLength
    #expect(
      uint((partial["captured"] as? [String: Any])?["bytes"])
        == UInt64(traffic.totalIPBytes - lastLength))
    // The same in the plain output.
    let plain = try run(Built.vpnstat, ["flows", "--read", truncated])
    #expect(plain.status == 65)
    #expect(plain.output.contains("PROTO"))

    // A record claiming an absurd length: corrupt.
    var corrupt = whole.prefix(24 + 16 + traffic.packets[0].ipLength)
    corrupt.append(
      CaptureFiles.recordHeader(seconds: 1, captured: 0x7FFF_FFFF, original: 0x7FFF_FFFF))
    corrupt.append(Data(repeating: 0, count: 64))
    let corruptPath = directory.path("corrupt.pcap")
    try corrupt.write(to: URL(fileURLWithPath: corruptPath))
    let (bad, badReports) = try readJSON(corruptPath)
    #expect(bad.status == 65, "\(bad.errors)")
    #expect(bad.errors.contains("after 1 packets"), "\(bad.errors)")
    #expect(uint((badReports.last?["captured"] as? [String: Any])?["packets"]) == 1)

    // Not a capture file at all, and an empty one.
    for (name, content) in [
      ("garbage.pcap", Data("hello, this is not a capture\n".utf8)), ("empty.pcap", Data()),
    ] {
      let path = directory.path(name)
      try content.write(to: URL(fileURLWithPath: path))
      let result = try run(Built.vpnstat, ["flows", "--read", path])
      #expect(result.status == 65, "\(name): \(result.errors)")
      #expect(result.errors.contains("not a capture file"), "\(name): \(result.errors)")
      #expect(result.stdout.isEmpty)
    }
  }

  @Test("an unsupported link type, a missing file and a bad filter: 65, 69 and 64 with clear words")
  func refusedInputs() throws {
    let directory = try CaptureDirectory()
    let wifi = directory.path("wifi.pcap")
    try CaptureFiles.pcapHeader(dlt: 105).write(to: URL(fileURLWithPath: wifi))
    let unsupported = try run(Built.vpnstat, ["flows", "--read", wifi])
    #expect(unsupported.status == 65)
    #expect(
      unsupported.errors.contains("unsupported link type IEEE802_11"), "\(unsupported.errors)")

    let missing = try run(Built.vpnstat, ["flows", "--read", directory.path("nope.pcap")])
    #expect(missing.status == 69, "\(missing.errors)")
    #expect(missing.errors.contains("No such file"))

    let pcap = directory.path("ok.pcap")
    try CaptureFiles.writePcap(KnownTraffic(seed: 1, flows: 2).packets, link: .rawIP, to: pcap)
    let badFilter = try run(Built.vpnstat, ["flows", "--read", pcap, "--filter", "port 99999999"])
    #expect(badFilter.status == 64, "\(badFilter.errors)")
    #expect(badFilter.errors.contains("bad filter 'port 99999999'"))
    #expect(badFilter.errors.contains("port"), "libpcap's own message is passed on")
    // No privileges needed to check a filter (pcap_open_dead).
    let refused = #expect(throws: CaptureError.self) { try Pcap.check(filter: "tcp and and", linkType: .rawIP) }
    #expect(refused?.kind == .badFilter)
    #expect(throws: Never.self) { try Pcap.check(filter: "udp port 53", linkType: .rawIP) }

    for (arguments, fragment) in [
      (["flows"], "missing argument <interface>"),
      (["flows", "lo", "--read", pcap], "not both"),
      (["flows", "--read", pcap, "--local", "nowhere"], "'nowhere'"),
      (["flows", "--read", pcap, "--snaplen", "10"], "'10'"),
      (["flows", "--read", pcap, "--top", "0"], "'0'"),
    ] {
      let result = try run(Built.vpnstat, arguments)
      #expect(result.status == 64, "\(arguments): \(result.errors)")
      #expect(result.errors.contains(fragment), "\(arguments): \(result.errors)")
    }
  }

  // MARK: rendering

  func sampleSnapshot(command: String = "evil\u{1B}[2J\u{202E}name", flows: Int = 40)
    -> FlowSnapshot
  {
    let aggregator = FlowAggregator(
      localAddresses: [IPAddress(parsing: "169.254.9.1")!], resolver: nil)
    for i in 0..<flows {
      let packet = TestPacket(
        source: "169.254.9.1", destination: i % 2 == 0 ? "169.254.9.\(i + 2)" : "fd00:9::\(i)",
        ipProtocol: 17,
        sourcePort: UInt16(30_000 + i), destinationPort: 53, payload: 100 * i)
      var fixed = packet
      if i % 2 == 1 { fixed.source = "fd00:9::1" }
      let frame = fixed.frame(.rawIP)
      frame.withUnsafeBytes {
        aggregator.table.add(
          frame: $0, wireLength: frame.count, link: .rawIP, at: Timestamp(nanoseconds: packet.time))
      }
    }
    aggregator.table.attribute(final: true, retryUnmatched: false, now: Timestamp(seconds: 0)) {
      _ in nil
    }
    let hostile = InterfaceName(bytes: Array("tun\u{1B}]0;x\u{07}".utf8))
    var snapshot = aggregator.report(
      origin: .interface(hostile, index: 9), linkType: .rawIP,
      generatedAt: Timestamp(seconds: 1_800_000_000),
      startedAt: Timestamp(seconds: 1_799_999_999), intervalSeconds: 1, elapsedSeconds: 1,
      drops: CaptureDrops(dropped: 3, interfaceDropped: 1),
      interfaceCounters: TrafficCounts(rxBytes: 0, txBytes: 10_000, rxPackets: 0, txPackets: 10),
      restarts: 1,
      warnings: ["w\u{1B}[31m"], captureTime: nil)
    // A process with a hostile name, as /proc/PID/comm may hold one.
    snapshot.processes.append(
      .init(
        key: SocketOwner(pid: 7, command: command), total: TrafficCounts(txBytes: 5),
        interval: TrafficCounts(), flows: 1))
    snapshot.flows[0].flow.attribution = .owned(SocketOwner(pid: 7, command: command))
    return snapshot
  }

  @Test("the screen fits any terminal size and never carries a raw control or BiDi character")
  func screenFits() throws {
    let snapshot = sampleSnapshot()
    for (width, height) in [(20, 8), (40, 12), (80, 24), (132, 50), (300, 100)] {
      let screen = FlowView.render(
        snapshot, width: width, height: height, options: .init(display: DisplayOptions(color: true))
      )
      let lines = screen.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
      #expect(lines.count <= height, "\(width)x\(height)")
      for line in lines {
        let plain = line.replacingOccurrences(
          of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
        #expect(TerminalText.width(plain) <= width, "\(width)x\(height): \(plain)")
        #expect(!plain.unicodeScalars.contains { TerminalText.isUnsafe($0) }, "\(plain)")
      }
    }
    let wide = FlowView.render(snapshot, width: 200, height: 60, options: .init())
    #expect(wide.contains("evil\\x1b[2J\\xe2\\x80\\xaename"))
    #expect(wide.contains("tun\\x1b]0;x\\x07"))
    #expect(!wide.contains("\u{1B}"))
    let top = FlowView.render(snapshot, width: 200, height: 60, options: .init(top: 3))
    #expect(top.components(separatedBy: "udp ").count - 1 == 3)
    let plain = FlowView.renderPlain(snapshot, options: .init())
    #expect(plain.components(separatedBy: "udp ").count - 1 == 40)
    #expect(plain.contains("dropped 3, if-dropped 1"))
  }

  @Test("JSON is valid, keeps hostile names exactly, and uses null for what is unknown")
  func jsonContract() throws {
    let snapshot = sampleSnapshot()
    let object = try #require(
      try JSONSerialization.jsonObject(with: Data(FlowJSON.render(snapshot))) as? [String: Any])
    #expect(object["schema_version"] as? Int == 1)
    #expect(object["interface"] as? String == "tun\u{1B}]0;x\u{07}")
    #expect((object["estimate_notes"] as? [String])?.isEmpty == false)
    let captured = try #require(object["captured"] as? [String: Any])
    #expect(uint(captured["dropped"]) == 3 && uint(captured["if_dropped"]) == 1)
    let flows = try #require(object["flows"] as? [[String: Any]])
    #expect(flows.count == 40)
    #expect(flows[0]["command"] as? String == "evil\u{1B}[2J\u{202E}name")
    for flow in flows.dropFirst() {
      #expect(flow["pid"] is NSNull && flow["command"] is NSNull)
      for field in [
        "protocol", "local_address", "local_port", "remote_address", "remote_port", "rx_bytes",
        "tx_bytes", "rx_packets", "tx_packets",
      ] {
        #expect(flow[field] != nil, "\(field)")
      }
    }
    let coverage = try #require(object["coverage"] as? Double)
    #expect(abs(coverage - Double(snapshot.captured.linkBytes) / 10_000) < 0.001)
    let limited = try #require(
      try JSONSerialization.jsonObject(with: Data(FlowJSON.render(snapshot, top: 2)))
        as? [String: Any])
    #expect((limited["flows"] as? [Any])?.count == 2)
  }
}
