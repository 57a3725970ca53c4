import VPNStatKernel
import VPNStatModel
import VPNStatSystem

#if canImport(Glibc)
  import Glibc
#endif

/// What one WireGuard tunnel costs `status`: vpnstat's reader (find wireguard-go in /proc, then
/// `get=1` on its control socket) in-process, and whole commands, beside `wg show NAME dump` —
/// which asks the same socket — run in the same rounds. Inside a namespace with one wireguard-go
/// device `wgb0` (one peer, no traffic); the inner run's own mount namespace (from `ip netns exec`)
/// gets a directory of its own at /run/wireguard, so the machine's sockets are not touched.
enum WireGuardBenchmark {
  static let device = "wgb0"

  static func runInner(vpnstat: String, ip: String, quick: Bool) throws -> [String] {
    guard let wireguardGo = findExecutable("wireguard-go"), let wg = findExecutable("wg"),
      let mount = findExecutable("mount")
    else {
      throw BenchError("wireguard-go, wg or mount is missing (Debian packages wireguard-go, wireguard-tools, mount)")
    }
    let directory = try StoreBenchmark.temporaryDirectory()
    defer { StoreBenchmark.removeTree(directory) }
    let quiet = open("/dev/null", O_WRONLY | O_CLOEXEC)
    defer { close(quiet) }
    func check(_ path: String, _ arguments: [String], input: [UInt8]? = nil) throws -> String {
      // wireguard-go's banner and wg's warnings would land in the middle of the report.
      let run = try runCapturing(
        PreparedCommand(label: "", path: path, arguments: arguments), input: input, stderr: quiet)
      guard run.exit.succeeded else { throw BenchError("\(path) \(arguments.joined(separator: " ")): \(run.exit)") }
      return String(decoding: run.output, as: UTF8.self).trimmingCharacters(in: " \n")
    }
    mkdir("/run/wireguard", 0o755)
    _ = try check(mount, ["--bind", directory, "/run/wireguard"])
    setenv("WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD", "1", 1)
    _ = try check(wireguardGo, [device])
    // Deleting the tun ends wireguard-go, whose socket goes with it.
    defer { _ = try? check(ip, ["link", "del", device]) }
    let privateKey = try check(wg, ["genkey"])
    let keyFile = directory + "/private"
    let fd = open(keyFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw BenchError("cannot write \(keyFile)") }
    _ = privateKey.withCString { write(fd, $0, strlen($0)) }
    close(fd)
    let peer = try check(wg, ["pubkey"], input: Array((try check(wg, ["genkey"]) + "\n").utf8))
    _ = try check(
      wg,
      [
        "set", device, "listen-port", "51820", "private-key", keyFile, "peer", peer, "endpoint", "169.254.250.2:51820",
        "allowed-ips", "10.250.0.2/32",
      ])
    _ = try check(ip, ["link", "set", device, "up"])

    // In-process: each way of reading, interleaved in rounds like the readers above.
    let name = InterfaceName(device)
    let tunnel = WireGuardCandidate(name: name, index: 1, implementation: .tun)
    let plainTun = WireGuardCandidate(name: InterfaceName("tunx"), index: 2, implementation: .tun)
    var kept = WireGuardReader()
    func peers(_ statuses: [WireGuardStatus?]) -> Int { statuses.first??.device?.peers.count ?? -1 }
    let ways: [(label: String, run: () -> Int)] = [
      (
        "a new reader: walk /proc for wireguard-go, then get=1",
        {
          var fresh = WireGuardReader()
          return peers(fresh.read([tunnel]))
        }
      ),
      ("a kept reader (watch): get=1 only", { peers(kept.read([tunnel])) }),
      (
        "a tun wireguard-go does not hold: the /proc walk alone",
        {
          var fresh = WireGuardReader()
          return fresh.read([plainTun]).first! == nil ? 1 : -1
        }
      ),
      (
        "a tun where no /run/wireguard exists: one stat",
        {
          var fresh = WireGuardReader(runDirectory: "/nonexistent/wireguard")
          return fresh.read([plainTun]).first! == nil ? 1 : -1
        }
      ),
    ]
    guard peers(kept.read([tunnel])) == 1 else { throw BenchError("vpnstat's reader did not read \(device)") }
    let rounds = quick ? 4 : 10
    let slice: Int64 = (quick ? 250_000_000 : 1_500_000_000) / Int64(rounds)
    var samples = [[Int64]](repeating: [], count: ways.count)
    var failures = [Int](repeating: 0, count: ways.count)
    var order = RoundOrder(ways.count)
    for _ in 0..<rounds {
      try Interruption.check()
      for w in order.nextRound() {
        let sliceStart = monotonicNanoseconds()
        repeat {
          let start = monotonicNanoseconds()
          let result = ways[w].run()
          let end = monotonicNanoseconds()
          if result == 1 { samples[w].append(end - start) } else { failures[w] += 1 }
        } while monotonicNanoseconds() - sliceStart < slice
      }
    }

    // Whole commands, wg's first: the peer every ratio is taken against.
    let dump = PreparedCommand(label: "wg show \(device) dump", path: wg, arguments: ["show", device, "dump"])
    let commands = [
      CommandBenchmark.TimedCommand(dump),
      CommandBenchmark.TimedCommand(
        PreparedCommand(label: "vpnstat status --json", path: vpnstat, arguments: ["status", "--json"])),
      CommandBenchmark.TimedCommand(
        PreparedCommand(
          label: "vpnstat status --json --only loopback (no WireGuard read)", path: vpnstat,
          arguments: ["status", "--json", "--only", "loopback"])),
    ]
    let shown = try runCapturing(commands[1].command)
    guard String(decoding: shown.output, as: UTF8.self).contains("\"source\":\"uapi\"") else {
      throw BenchError("vpnstat status --json did not read \(device): \(String(decoding: shown.output, as: UTF8.self))")
    }
    let budget = RoundBudget(
      budgetNanoseconds: quick ? 2_000_000_000 : 10_000_000_000, minimumRounds: quick ? 10 : 30,
      maximumRounds: quick ? 150 : 600)
    let timed = try CommandBenchmark.time(commands, section: .command, ifbCount: 0, interfaces: 2, budget: budget)
    let wgMedian = timed[0].timing.median

    let processes =
      (try? SmallFile.directoryEntries("/proc"))?.filter { $0.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
      .count ?? 0
    var inProcess = TextColumns(
      ["in-process read of one wireguard-go tunnel (1 peer)", "median", "p10", "p90", "samples", "× wg dump"],
      rightAligned: [1, 2, 3, 4, 5])
    for (w, way) in ways.enumerated() {
      let d = Distribution(samples[w])
      inProcess.add([
        way.label + (failures[w] > 0 ? " (\(failures[w]) failed)" : ""), formatDuration(d.median),
        formatDuration(d.p10), formatDuration(d.p90), String(d.count), formatRatio(d.median / wgMedian),
      ])
    }
    var whole = TextColumns(
      ["command (wall time)", "median", "p10", "p90", "runs", "× wg dump", "paired"], rightAligned: [1, 2, 3, 4, 5, 6])
    for m in timed {
      whole.add([
        m.label + (m.failures > 0 ? " (\(m.failures) failed)" : ""), formatDuration(m.timing.median),
        formatDuration(m.timing.p10), formatDuration(m.timing.p90), String(m.timing.count),
        formatRatio(m.timing.median / wgMedian), formatRatio(m.pairedRatio),
      ])
    }
    let added = timed[1].timing.median - timed[2].timing.median
    // One note a line: the outer run keeps the lines it is given, one by one.
    let tables = (inProcess.render() + "\n" + whole.render()).split(separator: "\n", omittingEmptySubsequences: false)
    return ["WireGuard: one wireguard-go tunnel beside lo, \(processes) processes in /proc"]
      + tables.map { String($0).trailingSpacesRemoved } + [
        "  status's cost of the tunnel (status minus status --only loopback, medians): \(formatDuration(added))"
          + " = \(formatRatio(added / wgMedian)) of wg show dump"
      ]
  }
}
