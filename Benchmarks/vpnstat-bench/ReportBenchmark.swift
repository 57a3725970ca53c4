import VPNStatModel
import VPNStatSimulation
import VPNStatStore

#if canImport(Glibc)
  import Glibc
#endif

/// What people run to read history: each report against `history --json` (the report that was
/// there before: 30 daily rows) on a simulated year of 20 interfaces, whole commands timed
/// interleaved, and the data cap's and alert's period usage.
enum ReportBenchmark {
  static func run(vpnstat: String, quick: Bool) throws -> [String] {
    let directory = try StoreBenchmark.temporaryDirectory()
    defer { StoreBenchmark.removeTree(directory) }
    let db = directory + "/year.db"
    guard let store = try Store.open(StoreLocation(path: db), intent: .write) else {
      throw BenchError("cannot create a database")
    }
    // The benchmark's simulated year, in hourly steps (the same daily and monthly rows).
    var simulation = SimulatedHistory()
    simulation.fineSpan = 0
    simulation.step = 3600
    let now = Timestamp(seconds: Int64(time(nil)))
    try simulation.record(into: store, from: now - .seconds(365 * 86_400), duration: 365 * 86_400)
    store.checkpoint()
    let base = ["--db", db]
    let commands: [(String, [String])] = [
      ("history --json (peer: 30 days)", ["history", "--json"]),
      ("history (table)", ["history"]),
      ("history --top 5 (of 365 days)", ["history", "--top", "5"]),
      ("history --months --month-start-day 15 --json", ["history", "--months", "--month-start-day", "15", "--json"]),
      ("history --graph --hours", ["history", "--graph", "--hours"]),
      ("history --svg - (24 h, 30 d, 12 mo)", ["history", "--svg", "-"]),
      ("alert --limit 1TB --per month", ["alert", "--limit", "1TB", "--sysfs-root", directory]),
    ].map { ($0.0, $0.1 + base) }
    let prepared = commands.map { PreparedCommand(label: $0.0, path: vpnstat, arguments: $0.1) }
    for command in prepared {
      let run = try runCapturing(command)
      guard run.exit.succeeded || command.label.hasPrefix("alert") else {
        throw BenchError("\(command.label) failed: \(run.exit)")
      }
    }
    let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
    defer { close(null) }
    var samples = [[Int64]](repeating: [], count: prepared.count)
    let rounds = quick ? 10 : 40
    var order = RoundOrder(prepared.count)
    for round in 0..<(rounds + 2) {
      // A shuffled order, so noise and order effects hit every command alike.
      for i in order.nextRound() {
        let start = monotonicNanoseconds()
        let pid = try prepared[i].spawn(stdout: null, stderr: null)
        _ = try waitForExit(pid, interruptible: true)
        if round >= 2 { samples[i].append(monotonicNanoseconds() - start) }
      }
    }
    let peer = Distribution(samples[0]).median
    var lines = ["reports: whole commands on a simulated year of 20 interfaces (\(rounds) rounds, interleaved)"]
    for (i, command) in prepared.enumerated() {
      let d = Distribution(samples[i])
      lines.append(
        "  \(command.label): median \(formatDuration(d.median)), p90 \(formatDuration(d.p90))"
          + (i == 0 ? "" : " (\(formatRatio(d.median / peer)) the peer)"))
    }
    // In-process: one period's usage, as the enforcer reads it after every sample.
    let cap = DataCap(limitBytes: 1 << 40, period: UsagePeriod(.month, monthStartDay: 15))
    var usage: [Int64] = []
    for _ in 0..<(quick ? 200 : 2000) {
      let start = monotonicNanoseconds()
      _ = try store.usage(since: cap.period.start(of: now, in: store.calendar), of: .tunnel)
      usage.append(monotonicNanoseconds() - start)
    }
    let d = Distribution(usage)
    lines.append(
      "  a month's tunnel usage from the daily buckets (the enforcer's cap check): median \(formatDuration(d.median)), p90 \(formatDuration(d.p90))"
    )
    return lines
  }
}

/// `record --listen` with the namespace's interfaces: the latency of one scrape of `/metrics`
/// in each format, beside `vpnstat export` (the same exposition as a command, its peer).
enum MetricsBenchmark {
  static func runInner(vpnstat: String, ifbCount: Int, quick: Bool) throws -> [String] {
    let directory = try StoreBenchmark.temporaryDirectory()
    defer { StoreBenchmark.removeTree(directory) }
    let db = directory + "/metrics.db"
    let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
    defer { close(null) }
    let recorder = try PreparedCommand(
      label: "", path: vpnstat, arguments: ["record", "--db", db, "--interval", "5s", "--listen", "127.0.0.1:9586"]
    ).spawn(stdout: null, stderr: null)
    defer {
      kill(recorder, SIGTERM)
      _ = try? waitForExit(recorder)
    }
    func scrape(_ accept: String?) -> (Int64, Int)? {
      let start = monotonicNanoseconds()
      let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      guard fd >= 0 else { return nil }
      defer { close(fd) }
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = UInt16(9586).bigEndian
      address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
      guard connected == 0 else { return nil }
      let request = Array(("GET /metrics HTTP/1.1\r\n" + (accept.map { "Accept: \($0)\r\n" } ?? "") + "\r\n").utf8)
      _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      var buffer = [UInt8](repeating: 0, count: 1 << 16)
      var total = 0
      var head: [UInt8] = []
      while true {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n <= 0 { break }
        if head.count < 16 { head += buffer[0..<min(n, 16)] }
        total += n
      }
      guard head.starts(with: Array("HTTP/1.1 200".utf8)) else { return nil }
      return (monotonicNanoseconds() - start, total)
    }
    // Wait for the first sample to be served.
    let deadline = monotonicNanoseconds() + 20_000_000_000
    while scrape(nil) == nil {
      guard monotonicNanoseconds() < deadline else { throw BenchError("record --listen never served") }
      usleep(20_000)
    }
    let export = PreparedCommand(label: "", path: vpnstat, arguments: ["export", "--db", db])
    var results: [String: [Int64]] = [:]
    var size = 0
    let rounds = quick ? 20 : 100
    for _ in 0..<rounds {
      for accept in [nil, "application/openmetrics-text"] as [String?] {
        guard let (took, bytes) = scrape(accept) else { throw BenchError("a scrape failed") }
        results[accept == nil ? "text" : "openmetrics", default: []].append(took)
        size = max(size, bytes)
      }
      let start = monotonicNanoseconds()
      let pid = try export.spawn(stdout: null, stderr: null)
      guard try waitForExit(pid).succeeded else { throw BenchError("export failed") }
      results["export", default: []].append(monotonicNanoseconds() - start)
    }
    let peer = Distribution(results["export"]!).median
    return ["text", "openmetrics"].map { format in
      let d = Distribution(results[format]!)
      return
        "metrics: \(ifbCount + 1) interfaces, one scrape of record --listen (\(format)): median \(formatDuration(d.median)), p90 \(formatDuration(d.p90)); vpnstat export (the peer) \(formatDuration(peer)): \(formatRatio(d.median / peer)); response up to \(size / 1024) KiB"
    } + (try tlsRows(vpnstat: vpnstat, directory: directory, plainRecorder: recorder, ifbCount: ifbCount, quick: quick))
  }

  /// The same scrape over TLS (a client certificate, then basic auth too, as a fleet's
  /// Prometheus asks), beside the plain one, each through curl so the client's own cost is in
  /// every row; node_exporter with the same web configuration where it is installed; the
  /// recorders' resident memory with and without TLS.
  static func tlsRows(vpnstat: String, directory: String, plainRecorder: pid_t, ifbCount: Int, quick: Bool) throws
    -> [String]
  {
    let curl = "/usr/bin/curl"
    guard access(curl, X_OK) == 0, access("/usr/bin/openssl", X_OK) == 0 else {
      return ["metrics over TLS: skipped (curl and openssl are needed)"]
    }
    // bcrypt (cost 10) of "s3cret pass", as the test suite's.
    let hash = "$2b$10$..lkAcbT1toohgCSCfJQTeKZlxYWrRzuYGK8crjbEv8NTbIyNiWkG"
    let script = """
      set -e
      cd \(directory)
      key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1" 2>/dev/null; }
      key ca.key; key server.key; key client.key
      openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj /CN=bench-ca 2>/dev/null
      openssl req -new -key server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null
      printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext
      openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \\
        -extfile server.ext 2>/dev/null
      openssl req -new -key client.key -out client.csr -subj /CN=prometheus 2>/dev/null
      openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 2>/dev/null
      chmod 600 *.key
      tls='tls_server_config:\\n  cert_file: server.crt\\n  key_file: server.key\\n  client_ca_file: ca.crt\\n  client_auth_type: RequireAndVerifyClientCert\\n'
      printf "$tls" > tls.yml
      printf "$tls"'basic_auth_users:\\n  prometheus: %s\\n' '\(hash)' > auth.yml
      """
    let made = try PreparedCommand(label: "", path: "/bin/sh", arguments: ["-c", script]).spawn()
    guard try waitForExit(made).succeeded else { throw BenchError("openssl: making certificates failed") }
    let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
    defer { close(null) }
    var recorders: [pid_t] = []
    defer {
      for pid in recorders {
        kill(pid, SIGTERM)
        _ = try? waitForExit(pid)
      }
    }
    for (port, file) in [(9587, "tls.yml"), (9588, "auth.yml")] {
      recorders.append(
        try PreparedCommand(
          label: "", path: vpnstat,
          arguments: [
            "record", "--db", directory + "/tls-\(port).db", "--interval", "5s", "--listen", "127.0.0.1:\(port)",
            "--web-config", directory + "/" + file,
          ]
        ).spawn(stdout: null, stderr: null))
    }
    let client = [
      "--cacert", directory + "/ca.crt", "--cert", directory + "/client.crt", "--key", directory + "/client.key",
    ]
    let rows: [(label: String, arguments: [String])] = [
      ("plain", ["http://127.0.0.1:9586/metrics"]),
      ("TLS 1.3, client certificate", client + ["https://127.0.0.1:9587/metrics"]),
      (
        "TLS 1.3, client certificate, basic auth",
        client + ["-u", "prometheus:s3cret pass", "https://127.0.0.1:9588/metrics"]
      ),
    ]
    func fetch(_ arguments: [String]) throws -> Int64? {
      let start = monotonicNanoseconds()
      let pid = try PreparedCommand(label: "", path: curl, arguments: ["-s", "-f", "-o", "/dev/null"] + arguments)
        .spawn(stdout: null, stderr: null)
      return try waitForExit(pid).succeeded ? monotonicNanoseconds() - start : nil
    }
    // Until each serves its first sample.
    let deadline = monotonicNanoseconds() + 20_000_000_000
    for row in rows {
      while try fetch(row.arguments) == nil {
        guard monotonicNanoseconds() < deadline else { throw BenchError("record --web-config never served") }
        usleep(50_000)
      }
    }
    var times: [String: [Int64]] = [:]
    for _ in 0..<(quick ? 10 : 40) {
      for row in rows {
        guard let took = try fetch(row.arguments) else { throw BenchError("a scrape through curl failed") }
        times[row.label, default: []].append(took)
      }
    }
    let plain = Distribution(times["plain"]!).median
    var lines = rows.map { row in
      let d = Distribution(times[row.label]!)
      return
        "metrics over TLS: \(ifbCount + 1) interfaces, curl scrapes record --listen (\(row.label)): median \(formatDuration(d.median)), p90 \(formatDuration(d.p90)); plain (the peer) \(formatDuration(plain)): \(formatRatio(d.median / plain))"
    }
    let resident = [("plain", plainRecorder), ("TLS", recorders[0]), ("TLS and basic auth", recorders[1])].map {
      "\($0.0) \(formatBytes(Double((ProcessUsage.of($0.1)?.residentKiB ?? 0) * 1024)))"
    }
    lines.append("metrics over TLS: record --listen resident after the scrapes: \(resident.joined(separator: ", "))")
    // node_exporter's netdev collector with the very same web configuration file, where it is
    // installed (a service: the bench never installs it).
    let nodeExporter = "/usr/bin/prometheus-node-exporter"
    guard access(nodeExporter, X_OK) == 0 else {
      lines.append(
        "metrics over TLS: node_exporter with the same web configuration: skipped (prometheus-node-exporter is not installed)"
      )
      return lines
    }
    let exporter = try PreparedCommand(
      label: "", path: nodeExporter,
      arguments: [
        "--web.listen-address=127.0.0.1:9589", "--web.config.file=" + directory + "/auth.yml",
        "--collector.disable-defaults", "--collector.netdev",
      ]
    ).spawn(stdout: null, stderr: null)
    recorders.append(exporter)
    let peerArguments = client + ["-u", "prometheus:s3cret pass", "https://127.0.0.1:9589/metrics"]
    while try fetch(peerArguments) == nil {
      guard monotonicNanoseconds() < deadline + 10_000_000_000 else { throw BenchError("node_exporter never served") }
      usleep(50_000)
    }
    var peerTimes: [Int64] = []
    for _ in 0..<(quick ? 10 : 40) {
      guard let took = try fetch(peerArguments) else { throw BenchError("a node_exporter scrape failed") }
      peerTimes.append(took)
    }
    let ours = Distribution(times["TLS 1.3, client certificate, basic auth"]!).median
    let peer = Distribution(peerTimes).median
    lines.append(
      "metrics over TLS: node_exporter's netdev collector with the same web configuration: median \(formatDuration(peer)); vpnstat \(formatDuration(ours)): \(formatRatio(ours / peer))"
    )
    return lines
  }
}
