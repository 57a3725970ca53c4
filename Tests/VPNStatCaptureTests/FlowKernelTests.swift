import Foundation
import Testing

@testable import VPNStatTestSupport

/// `vpnstat flows` against real captures, in namespaces the tests make: attribution to the
/// sending processes through a tun and a veth, sockets closed before the lookup, a tunnel
/// recreated while capturing, `any`, files written by tcpdump, and the error exits.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct FlowKernelTests {
  /// Starts `vpnstat flows` in `ns` and waits until the capture runs.
  func startFlows(_ ns: TestNamespace, _ arguments: [String]) throws -> BackgroundProcess {
    let flows = try ns.start(Built.vpnstat, ["flows"] + arguments)
    try flows.waitForError("listening on")
    return flows
  }

  /// Stops a capture with SIGTERM (it reports the interval in progress) and returns its last report.
  func finish(_ flows: BackgroundProcess) throws -> [String: Any] {
    let status = flows.stop(SIGTERM)
    #expect(status == 0, "flows exited \(status): \(flows.errors)")
    let reports = try jsonLines(
      CommandResult(status: status, stdout: Data(flows.output.utf8), stderr: Data()))
    return try #require(reports.last, "no report; stderr: \(flows.errors)")
  }

  func process(_ report: [String: Any], pid: pid_t) -> [String: Any]? {
    (report["processes"] as? [[String: Any]])?.first { ($0["pid"] as? NSNumber)?.int32Value == pid }
  }

  func unknownProcess(_ report: [String: Any]) -> [String: Any]? {
    (report["processes"] as? [[String: Any]])?.first { $0["pid"] is NSNull }
  }

  func within(_ value: UInt64?, _ expected: Int, _ fraction: Double) -> Bool {
    guard let value else { return false }
    return abs(Double(value) - Double(expected)) <= Double(expected) * fraction
  }

  @Test(
    "two processes sending through a tun: each one's bytes land on its pid and command; totals match the counters"
  )
  func tunAttribution() throws {
    let ns = try TestNamespace("fltun")
    let tun = try ns.echoTunnel("tunf1", local: "169.254.51.1", peer: "169.254.51.2")
    let sink = try ns.peer("udp-sink", "9101")
    try sink.waitFor("ready")
    let flows = try startFlows(ns, ["tunf1", "--json", "--interval", "5s"])
    // The echo swaps addresses, not ports: what a sender sends comes back to the sink's port.
    // The senders keep their sockets until the report: it finds their owners however late the
    // capture's lookups come on a loaded machine.
    let a = try ns.peer("udp-send", "169.254.51.2", "9101", "200", "600", "--gap-us", "2000", "--hold")
    let b = try ns.peer("udp-send", "169.254.51.2", "9101", "150", "1100", "--gap-us", "2500", "--hold")
    defer {
      a.stop()
      b.stop()
    }
    try a.waitFor("sent")
    try b.waitFor("sent")
    let report = try finish(flows)
    let expectedA = 200 * (600 + 28)
    let expectedB = 150 * (1100 + 28)
    let processA = try #require(process(report, pid: a.pid), "\(report["processes"] ?? "")")
    let processB = try #require(process(report, pid: b.pid))
    #expect(within(uint(processA["tx_bytes"]), expectedA, 0.05), "\(processA)")
    #expect(within(uint(processB["tx_bytes"]), expectedB, 0.05), "\(processB)")
    #expect(processA["command"] as? String == "vpnstat-testpee")
    #expect(processB["command"] as? String == "vpnstat-testpee")
    let sinkProcess = try #require(process(report, pid: sink.pid))
    #expect(within(uint(sinkProcess["rx_bytes"]), expectedA + expectedB, 0.05), "\(sinkProcess)")

    // Nothing lost: what the tun's counters saw is what was captured (a tun has no link header).
    let kernel = try ns.kernelCounters("tunf1")
    let captured = try #require(report["captured"] as? [String: Any])
    let kernelBytes = kernel.rxBytes + kernel.txBytes
    #expect(
      within(uint(captured["bytes"]), Int(kernelBytes), 0.01),
      "captured \(captured) kernel \(kernel)")
    let coverage = try #require(report["coverage"] as? Double)
    #expect(coverage > 0.99 && coverage < 1.01, "coverage \(coverage)")
    #expect(
      uint((report["interface_counters"] as? [String: Any])?["tx_bytes"]) ?? 0
        >= UInt64(expectedA + expectedB))
    sink.stop()
    tun.stop()
  }

  @Test(
    "UDP and TCP senders over a veth: attributed within 5%; frame bytes agree with the counters; --write reads back the same"
  )
  func vethAttribution() throws {
    let pair = try VethPair("flv", subnet: 62)
    let udpSink = try pair.right.peer("udp-sink", "9201")
    try udpSink.waitFor("ready")
    let tcpSink = try pair.right.peer("tcp-sink", "9202")
    try tcpSink.waitFor("ready")
    let directory = try CaptureDirectory()
    let saved = directory.path("veth.pcap")
    let flows = try startFlows(
      pair.left, [pair.leftName, "--json", "--interval", "5s", "--write", saved])
    let udp = try pair.left.peer(
      "udp-send", pair.rightAddress, "9201", "300", "900", "--gap-us", "1500", "--hold")
    let tcp = try pair.left.peer(
      "tcp-send", pair.rightAddress, "9202", "400000", "--rate", "1000000", "--hold")
    defer {
      udp.stop()
      tcp.stop()
    }
    try udp.waitFor("sent")
    // Printed once the sink acknowledged every byte: all of it is in the counters and the capture.
    try tcp.waitFor("sent")
    let report = try finish(flows)
    let udpProcess = try #require(process(report, pid: udp.pid), "\(report["processes"] ?? "")")
    #expect(within(uint(udpProcess["tx_bytes"]), 300 * 928, 0.05), "\(udpProcess)")
    let tcpProcess = try #require(process(report, pid: tcp.pid))
    let tcpTx = uint(tcpProcess["tx_bytes"]) ?? 0
    #expect(tcpTx >= 400_000 && tcpTx <= 420_000, "TCP payload plus headers: \(tcpTx)")
    #expect(uint(tcpProcess["rx_packets"]) ?? 0 > 0, "the ACKs belong to the sender too")

    let kernel = try pair.left.kernelCounters(pair.leftName)
    let counters = kernel.rxBytes + kernel.txBytes
    let captured = try #require(report["captured"] as? [String: Any])
    let ipBytes = uint(captured["bytes"]) ?? 0
    let packets = uint(captured["packets"]) ?? 0
    let linkBytes = uint(captured["link_bytes"]) ?? 0
    #expect(within(linkBytes, Int(counters), 0.01), "frames \(linkBytes) counters \(counters)")
    // IP bytes miss exactly the Ethernet headers (and non-IP frames such as ARP).
    #expect(
      ipBytes <= counters
        && counters - ipBytes <= 14 * packets + 64 * (uint(captured["non_ip_packets"]) ?? 0)
          + counters / 100
    )

    let reread = try run(
      Built.vpnstat, ["flows", "--read", saved, "--json", "--local", pair.leftAddress])
    #expect(reread.status == 0, "\(reread.errors)")
    let fileFlows = flowsByKey(try #require(try jsonLines(reread).last))
    for (key, live) in flowsByKey(report) {
      let fromFile = try #require(fileFlows[key], "\(key) missing from the saved file")
      #expect(
        uint(fromFile["tx_bytes"]) == uint(live["tx_bytes"])
          && uint(fromFile["rx_bytes"]) == uint(live["rx_bytes"]), "\(key)")
    }
    udpSink.stop()
    tcpSink.stop()
  }

  @Test("traffic from a socket closed before the lookup lands in unknown, not lost")
  func closedBeforeLookup() throws {
    let ns = try TestNamespace("flclose")
    let tun = try ns.echoTunnel("tunf3", local: "169.254.53.1", peer: "169.254.53.2")
    let sink = try ns.peer("udp-sink", "9301")
    try sink.waitFor("ready")
    // /proc is read at the start (the sink's socket is known) and then not again for 30 s,
    // except at the report: by then the sender's socket is closed.
    let flows = try startFlows(
      ns, ["tunf3", "--json", "--interval", "30s", "--lookup-interval", "30s"])
    let sender = try ns.peer("udp-close-early", "169.254.53.2", "9301", "50", "400")
    try sender.waitFor("closed")
    usleep(100_000)
    let report = try finish(flows)
    let sent = 50 * 428
    let senderFlows = (report["flows"] as? [[String: Any]] ?? []).filter {
      ($0["remote_port"] as? NSNumber)?.intValue == 9301 && (uint($0["tx_bytes"]) ?? 0) > 0
    }
    #expect(senderFlows.count == 1)
    let flow = try #require(senderFlows.first)
    #expect(flow["pid"] is NSNull && flow["command"] is NSNull, "\(flow)")
    #expect(flow["attribution"] as? String == "no_socket")
    #expect(uint(flow["tx_bytes"]) == UInt64(sent))
    #expect(process(report, pid: sender.pid) == nil)
    let unknown = try #require(unknownProcess(report))
    #expect(uint(unknown["tx_bytes"]) ?? 0 >= UInt64(sent))
    // The sink's socket was in the table from the start: its echo traffic is attributed.
    #expect(within(uint(process(report, pid: sink.pid)?["rx_bytes"]), sent, 0.05))
    let kernel = try ns.kernelCounters("tunf3")
    #expect(
      uint((report["captured"] as? [String: Any])?["bytes"]) == kernel.rxBytes + kernel.txBytes)
    sender.stop()
    sink.stop()
    tun.stop()
  }

  @Test("a tunnel deleted and recreated while capturing: the capture follows the new instance")
  func followsRecreatedTunnel() throws {
    let ns = try TestNamespace("flre")
    func bringUp() throws -> BackgroundProcess {
      let tun = try ns.echoTunnel("tunf4", local: "169.254.54.1", peer: "169.254.54.2")
      return tun
    }
    func index() throws -> Int {
      let result = try ns.ip("-j", "link", "show", "dev", "tunf4")
      let links = try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]]
      return try #require(links?.first?["ifindex"] as? Int)
    }
    let first = try bringUp()
    let oldIndex = try index()
    let flows = try startFlows(ns, ["tunf4", "--json", "--interval", "200ms"])
    try ns.peerRun("udp-send", "169.254.54.2", "9401", "100", "500", "--gap-us", "500")
    usleep(100_000)
    first.stop()
    let second = try bringUp()
    let newIndex = try index()
    #expect(newIndex != oldIndex)
    // Wait for a report on the new instance before sending again.
    let deadline = Date().addingTimeInterval(10)
    while !flows.output.contains("\"interface_index\":\(newIndex),") {
      #expect(Date() < deadline, "no report on ifindex \(newIndex): \(flows.errors)")
      if Date() > deadline { break }
      usleep(20_000)
    }
    try ns.peerRun("udp-send", "169.254.54.2", "9402", "80", "300", "--gap-us", "500")
    usleep(150_000)
    let report = try finish(flows)
    #expect(uint(report["capture_restarts"]) ?? 0 >= 1)
    #expect((report["interface_index"] as? NSNumber)?.intValue == newIndex)
    let sent = (report["flows"] as? [[String: Any]] ?? []).filter {
      (uint($0["tx_bytes"]) ?? 0) > 0 && $0["protocol"] as? String == "udp"
    }
    let before = sent.first { ($0["remote_port"] as? NSNumber)?.intValue == 9401 }
    let after = sent.first { ($0["remote_port"] as? NSNumber)?.intValue == 9402 }
    #expect(uint(before?["tx_bytes"]) == UInt64(100 * 528), "traffic of the old instance stays counted")
    #expect(uint(after?["tx_bytes"]) == UInt64(80 * 328), "traffic of the new instance is captured")
    second.stop()
  }

  @Test("capturing on 'any' reads Linux cooked frames and takes the direction from the packet type")
  func anyInterface() throws {
    let pair = try VethPair("flany", subnet: 65)
    let sink = try pair.right.peer("udp-sink", "9501")
    try sink.waitFor("ready")
    let flows = try startFlows(pair.left, ["any", "--json", "--interval", "5s"])
    // Its socket stays open until the report, however late the capture's lookups come.
    let sender = try pair.left.peer(
      "udp-send", pair.rightAddress, "9501", "120", "700", "--gap-us", "4000", "--hold")
    defer { sender.stop() }
    try sender.waitFor("sent")
    let report = try finish(flows)
    #expect((report["link_type"] as? String)?.hasPrefix("LINUX_SLL") == true)
    let flow = try #require(
      (report["flows"] as? [[String: Any]])?.first {
        ($0["remote_port"] as? NSNumber)?.intValue == 9501
      })
    #expect(uint(flow["tx_bytes"]) == UInt64(120 * 728))
    #expect(flow["local_by"] as? String == "packet_type")
    #expect((flow["pid"] as? NSNumber)?.int32Value == sender.pid)
    sink.stop()
  }

  @Test("a file tcpdump wrote on a veth gives exact totals for known flows")
  func tcpdumpFile() throws {
    try Tool.require("/usr/bin/tcpdump")
    let pair = try VethPair("fltd", subnet: 66)
    let sink = try pair.right.peer("udp-sink", "9601")
    try sink.waitFor("ready")
    let directory = try CaptureDirectory()
    let file = directory.path("tcpdump.pcap")
    let tcpdump = try pair.left.start(
      "/usr/bin/tcpdump",
      ["-i", pair.leftName, "-w", file, "-U", "--immediate-mode", "-n", "-Z", "root", "udp"])
    try tcpdump.waitForError("listening on")
    try pair.left.peerRun("udp-send", pair.rightAddress, "9601", "90", "321", "--gap-us", "300")
    try pair.left.peerRun("udp-send", pair.rightAddress, "9601", "40", "1200", "--gap-us", "300")
    usleep(150_000)
    tcpdump.stop(SIGINT)
    let result = try run(
      Built.vpnstat, ["flows", "--read", file, "--json", "--local", pair.leftAddress])
    #expect(result.status == 0, "\(result.errors)")
    let report = try #require(try jsonLines(result).last)
    #expect(report["link_type"] as? String == "EN10MB")
    let totals = (report["flows"] as? [[String: Any]] ?? []).compactMap { uint($0["tx_bytes"]) }
      .sorted()
    #expect(totals == [UInt64(40 * 1228), UInt64(90 * 349)].sorted(), "\(totals)")
    sink.stop()
  }

  @Test(
    "no CAP_NET_RAW → 77 naming it; no such interface → 69; a bad filter → 64 with libpcap's words")
  func liveErrors() throws {
    let ns = try TestNamespace("flerr")
    let denied = try ns.run(
      "/usr/bin/setpriv",
      [
        "--bounding-set", "-net_raw", "--inh-caps", "-net_raw", Built.vpnstat, "flows", "lo",
        "--count", "1",
      ])
    #expect(denied.status == 77, "\(denied.errors)")
    #expect(denied.errors.contains("CAP_NET_RAW"))
    let missing = try ns.vpnstat("flows", "nosuch0", "--count", "1")
    #expect(missing.status == 69, "\(missing.errors)")
    #expect(missing.errors.contains("no interface named 'nosuch0'"))
    let badFilter = try ns.vpnstat("flows", "lo", "--count", "1", "--filter", "hots 169.254.1.1")
    #expect(badFilter.status == 64, "\(badFilter.errors)")
    #expect(
      badFilter.errors.contains("bad filter 'hots 169.254.1.1'")
        && badFilter.errors.contains("syntax error"))
  }
}
