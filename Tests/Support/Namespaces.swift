import Foundation
import Testing
import VPNStatKernel
import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// Whether the kernel tests can run: they need root (CI is root) to make namespaces and devices.
enum Privilege {
  static let isRoot = getuid() == 0
  static let reason: Comment = "needs root: creates network namespaces and devices (run the suite as root, as CI does)"

  /// Whether commands can be run as `nobody` here: root can switch users, and `nobody` can reach
  /// and run a program (a chroot whose "/" is mode 0700 lets it run nothing at all).
  static let canRunAsNobody: Bool = {
    guard isRoot else { return false }
    // Without setpriv the tests run and fail saying it is missing, rather than being skipped.
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else { return true }
    let probe = try? run(
      "/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "/bin/true"])
    return probe?.status == 0
  }()
  /// Whether `nobody` may make a user namespace here (`unshare -Urn`, which Debian 12 allows): the
  /// kernel refuses it to any process in a chroot (as the fresh-machine run is), and
  /// `kernel.unprivileged_userns_clone=0` refuses it everywhere.
  static let canMakeUserNamespaceAsNobody: Bool = {
    guard canRunAsNobody else { return false }
    let probe = try? run(
      "/usr/bin/setpriv",
      ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "/usr/bin/unshare", "-Urn", "/bin/true"])
    return probe?.status == 0
  }()
  static let userNamespaceReason: Comment =
    "needs root and a user 'nobody' allowed to make user namespaces (refused in a chroot, or with kernel.unprivileged_userns_clone=0)"
  static let nobodyReason: Comment =
    "needs root and a user 'nobody' that can run programs here (this root directory is not searchable by other users)"
}

/// A network namespace a test made, removed (with every device in it) when the test ends —
/// also when it fails. Names are unique per process and test, so tests can run in parallel.
final class TestNamespace: @unchecked Sendable {
  let name: String
  private static let counter = Counter()

  init(_ label: String) throws {
    name = "vpnst-\(getpid())-\(Self.counter.next())-\(label)"
    try VPNStatTestSupport.ip("netns", "add", name)
    try VPNStatTestSupport.ip("-n", name, "link", "set", "lo", "up")
    // No automatic IPv6 link-local addresses: router and neighbour solicitations would move
    // counters between a test's reads. Tests that want IPv6 add addresses themselves.
    let quiet = try VPNStatTestSupport.run(
      "/usr/sbin/ip",
      ["netns", "exec", name, "/bin/sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/default/addr_gen_mode"])
    if quiet.status != 0 { throw TestSetupError("addr_gen_mode: \(quiet.errors)") }
  }

  /// Runs `ip -n NS …`.
  @discardableResult
  func ip(_ arguments: String...) throws -> CommandResult {
    try VPNStatTestSupport.ip(["-n", name] + arguments)
  }

  /// Runs a program inside the namespace (with its own /sys, as `ip netns exec` mounts one).
  func run(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, timeout: TimeInterval = 60
  )
    throws -> CommandResult
  {
    try VPNStatTestSupport.run(
      "/usr/sbin/ip", ["netns", "exec", name, executable] + arguments, environment: environment,
      timeout: timeout)
  }

  /// Runs vpnstat inside the namespace.
  func vpnstat(_ arguments: String..., environment: [String: String]? = nil) throws -> CommandResult {
    try run(Built.vpnstat, arguments, environment: environment)
  }
  func vpnstat(_ arguments: [String], environment: [String: String]? = nil) throws -> CommandResult {
    try run(Built.vpnstat, arguments, environment: environment)
  }

  /// Starts a program inside the namespace in the background.
  func start(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws
    -> BackgroundProcess
  {
    try BackgroundProcess(
      "/usr/sbin/ip", ["netns", "exec", name, executable] + arguments, environment: environment)
  }

  /// Starts the test peer (a tun owner, a traffic sink …) inside the namespace.
  func peer(_ arguments: String...) throws -> BackgroundProcess {
    try start(Built.testPeer, arguments)
  }

  /// A tun owned by the test peer, echoing every packet back with the addresses swapped (so
  /// rx and tx both move), with `local` and `peer` as its point-to-point addresses, up.
  func echoTunnel(_ name: String, local: String, peer: String) throws -> BackgroundProcess {
    let owner = try self.peer("tun", name, "--echo")
    try owner.waitFor("ready")
    try ip("addr", "add", local, "peer", peer, "dev", name)
    try ip("link", "set", name, "up")
    return owner
  }

  /// Runs the test peer to completion inside the namespace.
  @discardableResult
  func peerRun(_ arguments: String...) throws -> CommandResult {
    let result = try run(Built.testPeer, arguments)
    if result.status != 0 { throw TestSetupError("testpeer \(arguments) failed: \(result.errors)") }
    return result
  }

  /// The kernel's own counters for a device, from `ip -s -j link` (the peer tool).
  func kernelCounters(_ device: String) throws -> (
    rxBytes: UInt64, txBytes: UInt64, rxPackets: UInt64, txPackets: UInt64
  ) {
    let result = try ip("-s", "-j", "link", "show", "dev", device)
    let parsed = try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]]
    guard let link = parsed?.first, let stats = link["stats64"] as? [String: Any],
      let rx = stats["rx"] as? [String: Any], let tx = stats["tx"] as? [String: Any]
    else { throw TestSetupError("no stats64 for \(device): \(result.output)") }
    func number(_ value: Any?) -> UInt64 { (value as? NSNumber)?.uint64Value ?? 0 }
    return (number(rx["bytes"]), number(tx["bytes"]), number(rx["packets"]), number(tx["packets"]))
  }

  /// The device's counters once traffic on it has stopped: two reads `quiet` apart that agree.
  /// After a sender exits, an echo peer may still be answering (later still on a loaded
  /// machine): a fixed sleep before one read raced it.
  func settledCounters(_ device: String, quiet: TimeInterval = 0.1, timeout: TimeInterval = 30) throws -> (
    rxBytes: UInt64, txBytes: UInt64, rxPackets: UInt64, txPackets: UInt64
  ) {
    var last = try kernelCounters(device)
    _ = try waitUntil(timeout: timeout, every: quiet) {
      let now = try kernelCounters(device)
      defer { last = now }
      return now == last
    }
    return last
  }

  deinit {
    _ = try? VPNStatTestSupport.run("/usr/sbin/ip", ["netns", "del", name])
  }
}

/// A count threads add to.
final class Counter: @unchecked Sendable {
  private var value = 0
  private let lock = NSLock()
  func next() -> Int {
    lock.lock()
    defer { lock.unlock() }
    value += 1
    return value
  }
  var count: Int {
    lock.lock()
    defer { lock.unlock() }
    return value
  }
}

/// A pair of namespaces joined by a veth pair with link-local addresses.
struct VethPair {
  let left: TestNamespace
  let right: TestNamespace
  let leftName: String
  let rightName: String
  let leftAddress: String
  let rightAddress: String

  init(_ label: String, subnet: Int) throws {
    left = try TestNamespace(label + "a")
    right = try TestNamespace(label + "b")
    leftName = "va\(subnet)"
    rightName = "vb\(subnet)"
    leftAddress = "169.254.\(subnet).1"
    rightAddress = "169.254.\(subnet).2"
    try left.ip("link", "add", leftName, "type", "veth", "peer", "name", rightName, "netns", right.name)
    try left.ip("addr", "add", leftAddress + "/30", "dev", leftName)
    try right.ip("addr", "add", rightAddress + "/30", "dev", rightName)
    try left.ip("link", "set", leftName, "up")
    try right.ip("link", "set", rightName, "up")
  }
}

/// Parses a `status --json` document.
func parseStatus(_ result: CommandResult) throws -> [String: Any] {
  guard let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
    throw TestSetupError("not a JSON object: \(result.output)")
  }
  return object
}

func interfaces(_ status: [String: Any]) -> [[String: Any]] {
  status["interfaces"] as? [[String: Any]] ?? []
}

func interface(_ status: [String: Any], named name: String) -> [String: Any]? {
  interfaces(status).first { $0["name"] as? String == name }
}

func uint(_ value: Any?) -> UInt64? { (value as? NSNumber)?.uint64Value }

extension TestNamespace {
  /// Starts `vpnstat record` in the namespace and returns once its first sample is committed, so
  /// traffic the test makes afterwards is traffic the ledger must count.
  func startRecorder(_ db: String, _ arguments: [String]) throws -> BackgroundProcess {
    let recorder = try start(Built.vpnstat, ["record", "--db", db] + arguments)
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
      if let store = try? Store.open(StoreLocation(path: db), intent: .read), let ledger = try? store.loadLedger(),
        !ledger.entries.isEmpty
      {
        return recorder
      }
      if let status = recorder.ended { throw TestSetupError("recorder exited (\(status)): \(recorder.errors)") }
      usleep(20_000)
    }
    throw TestSetupError("recorder never wrote: \(recorder.errors)")
  }
}

extension TestNamespace {
  /// A real Prometheus in this namespace, scraping every second with `scrapeConfigs` (the YAML
  /// list under `scrape_configs:`), its configuration and data in `directory`, and answering
  /// `prometheusQuery` on 127.0.0.1:9090.
  func startPrometheus(scrapeConfigs: String, in directory: TemporaryDirectory) throws -> BackgroundProcess {
    let config = directory.file("prometheus.yml")
    try """
    global:
      scrape_interval: 1s
      scrape_timeout: 1s
    scrape_configs:
    \(scrapeConfigs)
    """.write(toFile: config, atomically: true, encoding: .utf8)
    return try start(
      "/usr/bin/prometheus",
      [
        "--config.file=" + config, "--storage.tsdb.path=" + directory.file("tsdb"),
        "--web.listen-address=127.0.0.1:9090", "--log.level=warn",
      ])
  }

  /// The value of `expression`'s first series from a Prometheus in this namespace
  /// (127.0.0.1:9090's query API, through curl); nil when it has none (yet).
  func prometheusQuery(_ expression: String) throws -> String? {
    let result = try run(
      "/usr/bin/curl",
      ["-s", "--max-time", "2", "-G", "http://127.0.0.1:9090/api/v1/query", "--data-urlencode", "query=" + expression])
    guard result.status == 0, let object = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any],
      let data = object["data"] as? [String: Any], let first = (data["result"] as? [[String: Any]])?.first,
      let value = first["value"] as? [Any]
    else { return nil }
    return value.last as? String
  }
}
