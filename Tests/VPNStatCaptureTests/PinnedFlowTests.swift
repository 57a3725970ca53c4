import Foundation
import Testing

@testable import VPNStatCapture
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

extension FlowCaptureTests {
  /// `flows --json` and the reports behind it pinned byte for byte (`Tests/Pinned/flows`): owned,
  /// orphaned and late-matched flows over intervals, idle flows retired into their host's and
  /// process's totals, every origin, limits, and the hostile sample. `FlowJSON.render` and
  /// `FlowAggregator.report` were split into pieces without changing a byte. Pinned: every
  /// interval; the hostile sample with no flows, with the top 3 (an interface with its index,
  /// drops, counters, warnings) and all 40 read from a file (no interface, drops or counters).
  /// Left out: the sample's other limits, and an interface without an index (one null field).
  static let pinnedCases = [
    "sample top 0", "sample top 3", "file", "interval 2", "interval 4", "interval 6, nothing new",
    "interval 21, idle retired", "interval 40, all idle",
  ]

  @Test("flows: the reports of intervals with owners, orphans and idle flows, as JSON, are the pinned bytes")
  func pinnedFlows() throws {
    var pins = PinnedCases("flows", Self.pinnedCases)
    let sample = sampleSnapshot()
    for top in [nil, 0, 1, 3] {
      pins.add("sample top \(top.map(String.init) ?? "all")", FlowJSON.render(sample, top: top))
    }
    var file = sample
    file.origin = .file("/tmp/a \"b\".pcap")
    file.drops = nil
    file.interfaceCounters = nil
    pins.add("file", FlowJSON.render(file))
    var noIndex = sample
    noIndex.origin = .interface(InterfaceName("tun0"), index: nil)
    pins.add("no index", FlowJSON.render(noIndex))

    let proc = try FixtureProc()
    let local = "169.254.5.1"
    try proc.setTable(
      "udp",
      [
        FixtureProc.line(FixtureProc.v4("0.0.0.0", 42_000), FixtureProc.v4("0.0.0.0", 0), state: "07", inode: 910),
        FixtureProc.line(FixtureProc.v4("0.0.0.0", 42_001), FixtureProc.v4("0.0.0.0", 0), state: "07", inode: 911),
      ])
    try proc.process(5001, comm: "curl", sockets: [910])
    try proc.process(5002, comm: "dig\u{1B}[2J", sockets: [911])
    let resolver = SocketOwnerResolver(procRoot: proc.root, minimumInterval: .seconds(1))
    let aggregator = FlowAggregator(
      localAddresses: [IPAddress(parsing: local)!, IPAddress(parsing: "fd00:5::1")!], resolver: resolver,
      idleTimeout: .seconds(10))
    let wall = Timestamp(seconds: 1_800_000_000)
    func send(_ port: UInt16, to remote: String, payload: Int, at seconds: Int64, incoming: Bool = false) {
      var packet = TestPacket(
        source: remote.contains(":") ? "fd00:5::1" : local, destination: remote, ipProtocol: port % 2 == 0 ? 17 : 6,
        sourcePort: port,
        destinationPort: 53, payload: payload, time: seconds * 1_000_000_000)
      if incoming {
        (packet.source, packet.destination) = (packet.destination, packet.source)
        (packet.sourcePort, packet.destinationPort) = (packet.destinationPort, packet.sourcePort)
      }
      let frame = packet.frame(.rawIP)
      frame.withUnsafeBytes {
        aggregator.table.add(frame: $0, wireLength: frame.count, link: .rawIP, at: Timestamp(seconds: seconds))
      }
    }
    func report(at seconds: Int64) -> FlowSnapshot {
      _ = resolver.resolve(&aggregator.table, at: seconds * 1_000_000_000, wall: wall, force: true)
      return aggregator.report(
        origin: .interface(InterfaceName("tun0"), index: 3), linkType: .rawIP, generatedAt: wall + .seconds(seconds),
        startedAt: wall, intervalSeconds: 2, elapsedSeconds: Double(seconds),
        drops: CaptureDrops(dropped: 0, interfaceDropped: 0),
        interfaceCounters: TrafficCounts(rxBytes: 5000, txBytes: 9000, rxPackets: 4, txPackets: 9), restarts: 0,
        warnings: seconds > 20 ? ["late"] : [], captureTime: Timestamp(seconds: seconds))
    }
    send(42_000, to: "169.254.5.2", payload: 100, at: 0)
    send(42_001, to: "169.254.5.3", payload: 300, at: 0)
    send(42_002, to: "169.254.5.2", payload: 300, at: 1)
    send(42_000, to: "169.254.5.2", payload: 50, at: 1, incoming: true)
    pins.add("interval 2", FlowJSON.render(report(at: 2)))
    try proc.setTable(
      "udp",
      [
        FixtureProc.line(FixtureProc.v4("0.0.0.0", 42_000), FixtureProc.v4("0.0.0.0", 0), state: "07", inode: 910),
        FixtureProc.line(FixtureProc.v4("0.0.0.0", 42_002), FixtureProc.v4("0.0.0.0", 0), state: "07", inode: 912),
      ])
    try proc.process(5003, comm: "late", sockets: [912])
    send(42_002, to: "169.254.5.2", payload: 10, at: 3)
    send(42_003, to: "fd00:5::9", payload: 700, at: 3)
    pins.add("interval 4", FlowJSON.render(report(at: 4)))
    pins.add("interval 6, nothing new", FlowJSON.render(report(at: 6)))
    send(42_001, to: "169.254.5.3", payload: 20, at: 20)
    pins.add("interval 21, idle retired", FlowJSON.render(report(at: 21)))
    pins.add("interval 40, all idle", FlowJSON.render(report(at: 40)))
    pins.expect()
  }
}
