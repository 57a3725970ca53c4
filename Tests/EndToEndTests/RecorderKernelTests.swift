import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The recorder against the real kernel: teardown between polls, 32-bit wraps, concurrency.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct RecorderKernelTests {
  @Test("a tun torn down and recreated three times between two polls: every instance's bytes are booked")
  func teardownBetweenPolls() throws {
    let ns = try TestNamespace("tear")
    let directory = try TemporaryDirectory("tear")
    let db = directory.file("v.db")
    let recorder = try ns.startRecorder(db, ["--interval", "60s"])
    defer { recorder.stop() }
    var kernelTx: UInt64 = 0
    var kernelRx: UInt64 = 0
    var owners: [BackgroundProcess] = []
    for round in 0..<3 {
      let tun = try ns.echoTunnel("tun7", local: "169.254.77.1", peer: "169.254.77.2")
      try ns.peerRun("udp-send", "169.254.77.2", "9300", "\(100 + 50 * round)", "900", "--gap-us", "100")
      let counted = try ns.settledCounters("tun7")
      if round < 2 {
        kernelTx += counted.txBytes
        kernelRx += counted.rxBytes
        tun.stop()  // the tun goes with its owner: RTM_DELLINK carries its final counters
        // Wait until the kernel has removed it.
        var gone = false
        for _ in 0..<200 where !gone {
          gone = (try? ns.ip("link", "show", "tun7")) == nil
          if !gone { usleep(10_000) }
        }
        #expect(gone)
      } else {
        owners.append(tun)
      }
    }
    // The third instance still lives: status books it, and reads the kernel the same moment.
    let third = try ns.settledCounters("tun7")
    let status = try parseStatus(ns.vpnstat("status", "--json", "--db", db, "-i", "tun7"))
    let tun7 = try #require(interface(status, named: "tun7"))
    let totalTx = try #require(uint(tun7["total_tx_bytes"]))
    let totalRx = try #require(uint(tun7["total_rx_bytes"]))
    let expectedTx = kernelTx + third.txBytes
    let expectedRx = kernelRx + third.rxBytes
    #expect(expectedTx > 300_000)
    #expect(
      Double(totalTx) >= Double(expectedTx) * 0.999 && Double(totalTx) <= Double(expectedTx) * 1.001,
      "\(totalTx) vs \(expectedTx)")
    #expect(
      Double(totalRx) >= Double(expectedRx) * 0.999 && Double(totalRx) <= Double(expectedRx) * 1.001,
      "\(totalRx) vs \(expectedRx)")
    #expect((uint(tun7["resets"]) ?? 0) >= 2)
    #expect(totalTx < 1 << 32, "phantom wrap")
    #expect(recorder.stop() == 0)
    #expect(recorder.errors.contains("tun7: reset"), "one stderr line per reset: \(recorder.errors)")
    for owner in owners { owner.stop() }
  }

  @Test("32-bit counters wrapping for real: getifaddrs over more than 5 GiB of loopback traffic")
  func realWraps() throws {
    let ns = try TestNamespace("wrap")
    let directory = try TemporaryDirectory("wrap")
    let db = directory.file("v.db")
    let recorder = try ns.startRecorder(db, ["--interval", "1s", "--source", "getifaddrs", "-i", "lo"])
    defer { recorder.stop() }
    let sink = try ns.peer("tcp-sink", "9400")
    try sink.waitFor("ready")
    // Paced to ~1 GiB/s so one interval never holds more than one wrap.
    let sent = try ns.run(
      Built.testPeer, ["tcp-send", "127.0.0.1", "9400", "\(5_600_000_000)", "--rate", "\(1_000_000_000)"], timeout: 120)
    #expect(sent.status == 0, "\(sent.errors)")
    _ = sink.stop()
    _ = try ns.settledCounters("lo")
    #expect(recorder.stop() == 0)
    let truth = try ns.kernelCounters("lo")
    let ledger = try #require(try Store.open(StoreLocation(path: db), intent: .read)).loadLedger()
    let lo = try #require(ledger.entries[InterfaceName("lo")])
    #expect(truth.txBytes > 5 << 30)
    // The recorder's first sample saw lo at (almost) zero: its total is the whole 64-bit count.
    let ratio = Double(lo.totals.traffic.txBytes) / Double(truth.txBytes)
    #expect(ratio > 0.999 && ratio <= 1.0, "ledger \(lo.totals.traffic.txBytes) vs sysfs \(truth.txBytes)")
    #expect(lo.totals.wraps >= 1)
    #expect(lo.totals.discarded == 0)
    #expect(lo.baseline.width == .bits32)
  }

  @Test(
    "between checkpoints, readers stay exact over 32-bit turns: a getifaddrs recorder saving every 10 minutes, 6.45 GB over lo, and status (64-bit and 32-bit) gives the kernel's count to the byte"
  )
  func wrapsBetweenCheckpoints() throws {
    let ns = try TestNamespace("wrapcp")
    let directory = try TemporaryDirectory("wrapcp")
    let db = directory.file("v.db")
    let recorder = try ns.startRecorder(
      db, ["--interval", "200ms", "--save-interval", "10m", "--source", "getifaddrs", "-i", "lo"])
    defer { recorder.stop() }
    let lo = InterfaceName("lo")
    let start = try #require(try Store.open(StoreLocation(path: db), intent: .read)?.loadLedger().entries[lo])
    let sink = try ns.peer("tcp-sink", "9403")
    try sink.waitFor("ready")
    // 1.5 GB/s: a 200 ms interval holds far less than 2^31 bytes, a loaded one too.
    let sent = try ns.run(
      Built.testPeer, ["tcp-send", "127.0.0.1", "9403", "\(6_450_000_000)", "--rate", "\(1_500_000_000)"], timeout: 120)
    #expect(sent.status == 0, "\(sent.errors)")
    _ = sink.stop()
    // The recorder runs on; no save interval has passed. What a reader computes:
    for source in ["netlink", "getifaddrs"] {
      var status: [String: Any]?
      var kernel = try ns.kernelCounters("lo")
      // Read while lo is still (a FIN or an ACK may cross just then: read again).
      for _ in 0..<5 {
        status = interface(
          try parseStatus(ns.vpnstat("status", "--json", "--db", db, "-i", "lo", "--source", source)), named: "lo")
        let after = try ns.kernelCounters("lo")
        if after.txBytes == kernel.txBytes { break }
        kernel = after
      }
      let total = try #require(uint(status?["total_tx_bytes"]), "\(String(describing: status))")
      #expect(kernel.txBytes - start.baseline.counters.txBytes > 6_000_000_000)
      #expect(
        total == kernel.txBytes - start.baseline.counters.txBytes,
        "\(source): total \(total), kernel \(kernel.txBytes) − \(start.baseline.counters.txBytes): off by \(Int64(bitPattern: total &- (kernel.txBytes - start.baseline.counters.txBytes)))"
      )
      #expect(uint(status?["wraps"]) ?? 0 >= 1, "\(source): \(String(describing: status))")
    }
    #expect(recorder.isRunning, "\(recorder.errors)")
  }

  @Test(
    "a netlink recorder and a getifaddrs recorder in turn on one database: past 2^33 bytes, every switch of width books exactly the traffic"
  )
  func netlinkAndGetifaddrsShareOneDatabase() throws {
    let ns = try TestNamespace("width")
    let directory = try TemporaryDirectory("width")
    let db = directory.file("v.db")
    // Past 2^33 on lo before vpnstat first looks: the 32-bit view is then more than one wrap behind.
    let sink = try ns.peer("tcp-sink", "9401")
    try sink.waitFor("ready")
    let blast = try ns.run(Built.testPeer, ["tcp-send", "127.0.0.1", "9401", "\(9_000_000_000)"], timeout: 120)
    #expect(blast.status == 0, "\(blast.errors)")
    _ = sink.stop()
    #expect(try ns.kernelCounters("lo").txBytes > 1 << 33)
    let lo = InterfaceName("lo")
    func stored() throws -> LedgerEntry {
      try #require(try Store.open(StoreLocation(path: db), intent: .read)?.loadLedger().entries[lo])
    }
    func traffic() throws {
      try ns.peerRun("udp-send", "127.0.0.1", "9402", "200", "1000")
      _ = try ns.settledCounters("lo")
    }
    let first = try ns.vpnstat("record", "--count", "1", "--source", "netlink", "-i", "lo", "--db", db)
    #expect(first.status == 0, "\(first.errors)")
    let start = try stored().baseline
    #expect(start.width == .bits64 && start.counters.txBytes > 1 << 33)
    try traffic()
    // The same instance read through getifaddrs: 32-bit counters against the 64-bit baseline.
    let narrow = try ns.vpnstat("record", "--count", "1", "--source", "getifaddrs", "-i", "lo", "--db", db)
    #expect(narrow.status == 0, "\(narrow.errors)")
    let middle = try stored()
    #expect(middle.baseline.width == .bits32)
    try traffic()
    // And netlink again: 64-bit counters against the 32-bit baseline.
    let last = try ns.vpnstat("record", "--count", "1", "--source", "netlink", "-i", "lo", "--db", db)
    #expect(last.status == 0, "\(last.errors)")
    let end = try stored()
    #expect(end.baseline.width == .bits64)
    // Both ends are 64-bit readings of the kernel's own counters: the totals are their difference.
    #expect(end.totals.traffic.txBytes == end.baseline.counters.txBytes - start.counters.txBytes)
    #expect(end.totals.traffic.rxBytes == end.baseline.counters.rxBytes - start.counters.rxBytes)
    #expect(end.totals.traffic.txBytes >= 400_000 && end.totals.traffic.txBytes < 1 << 30)
    #expect(middle.totals.traffic.txBytes > 0 && middle.totals.traffic.txBytes < end.totals.traffic.txBytes)
    #expect(end.totals.resets == 0 && end.totals.discarded == 0)
  }

  @Test("a recorder and repeated status runs together keep totals equal to the kernel's counts")
  func recorderAndStatus() throws {
    let pair = try VethPair("conc", subnet: 33)
    let directory = try TemporaryDirectory("conc")
    let db = directory.file("v.db")
    let recorder = try pair.left.startRecorder(db, ["--interval", "200ms"])
    defer { recorder.stop() }
    let sink = try pair.right.peer("udp-sink", "9500")
    try sink.waitFor("ready")
    let sender = try pair.left.start(
      Built.testPeer, ["udp-send", pair.rightAddress, "9500", "3000", "1200", "--gap-us", "300"])
    var runs = 0
    while sender.isRunning || runs < 5 {
      let status = try pair.left.vpnstat("status", "--json", "--db", db)
      #expect(status.status == 0, "\(status.errors)")
      runs += 1
    }
    sender.stop()
    let kernel = try pair.left.settledCounters(pair.leftName)
    #expect(recorder.stop() == 0)
    let ledger = try #require(try Store.open(StoreLocation(path: db), intent: .read)).loadLedger()
    let veth = try #require(ledger.entries[InterfaceName(pair.leftName)])
    #expect(veth.totals.traffic.txBytes == kernel.txBytes)
    #expect(veth.totals.traffic.rxBytes == kernel.rxBytes)
    #expect(veth.totals.resets == 0 && veth.totals.discarded == 0)
    #expect(runs >= 5)
    sink.stop()
  }

  @Test("OpenMetrics from export and from record --textfile parse with prometheus_client and match the ledger")
  func openMetrics() throws {
    try Tool.requirePythonModule("prometheus_client", package: "python3-prometheus-client")
    let pair = try VethPair("prom", subnet: 34)
    let directory = try TemporaryDirectory("prom")
    let db = directory.file("v.db")
    try pair.left.ip("link", "add", "name", "q\"\\x", "type", "ifb")
    let first = try pair.left.vpnstat("record", "--count", "1", "--db", db, "--textfile", directory.path)
    #expect(first.status == 0, "\(first.errors)")
    try pair.left.peerRun("udp-send", pair.rightAddress, "9600", "100", "1000")
    _ = try pair.left.settledCounters(pair.leftName)
    let recorded = try pair.left.vpnstat("record", "--count", "1", "--db", db, "--textfile", directory.path)
    #expect(recorded.status == 0)
    let exported = try pair.left.vpnstat("export", "--db", db)
    #expect(exported.status == 0, "\(exported.errors)")
    let textfile = try #require(contents(directory.file("vpnstat.prom")))
    // export speaks OpenMetrics; the textfile the Prometheus text format node_exporter reads.
    func parser(_ module: String) -> String {
      """
      import sys, json
      from prometheus_client.\(module) import text_string_to_metric_families
      out = {}
      for family in text_string_to_metric_families(sys.stdin.read()):
          for s in family.samples:
              if s.name.endswith('_total') or s.name.startswith('vpnstat_session'):
                  out[s.name + '|' + s.labels.get('interface', s.labels.get('class', s.labels.get('vpnstat_session_state', '')))] = s.value
      print(json.dumps(out))
      """
    }
    for (text, module) in [(exported.stdout, "openmetrics.parser"), (textfile, "parser")] {
      let parsed = try python(parser(module), input: text)
      #expect(parsed.status == 0, "\(module) rejected it: \(parsed.errors)")
      let values = try #require(try JSONSerialization.jsonObject(with: parsed.stdout) as? [String: Double])
      let tx = try #require(values["vpnstat_interface_transmit_bytes_total|\(pair.leftName)"])
      #expect(tx >= 100_000)
      // The label is the name as vpnstat shows it: its backslash doubled (see EscapingTests).
      #expect(values["vpnstat_interface_receive_bytes_total|q\"\\\\x"] != nil)
      #expect(values["vpnstat_class_transmit_bytes_total|other"] != nil)
      #expect(values["vpnstat_session_state|none"] == 1, "\(module): the session gauges")
      #expect(values["vpnstat_session_can_connect|"] == 1)
    }
    #expect(!String(decoding: textfile, as: UTF8.self).contains("# EOF"))
    #expect(String(decoding: exported.stdout, as: UTF8.self).hasSuffix("# EOF\n"))
    let ledger = try #require(try Store.open(StoreLocation(path: db), intent: .read)).loadLedger()
    let fromExport = try python(parser("openmetrics.parser"), input: exported.stdout)
    let values = try #require(try JSONSerialization.jsonObject(with: fromExport.stdout) as? [String: Double])
    #expect(
      UInt64(values["vpnstat_interface_transmit_bytes_total|\(pair.leftName)"] ?? -1)
        == ledger.entries[InterfaceName(pair.leftName)]?.totals.traffic.txBytes)
  }
}
