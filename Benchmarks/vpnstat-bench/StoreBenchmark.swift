import VPNStatCapture
import VPNStatCommandLine
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSimulation
import VPNStatStore
import VPNStatSystem

#if canImport(Glibc)
  import Glibc
#endif

/// The ledger's costs: one advance for 1000 interfaces (every counter moving, and all idle),
/// and the database's size after a simulated year of 5-second samples for 20 interfaces.
enum StoreBenchmark {
  static func run(quick: Bool) throws -> [String] {
    var lines = ["ledger: one advance of the ledger, in one transaction, temporary database"]
    let directory = try temporaryDirectory()
    defer { removeTree(directory) }
    guard let store = try Store.open(StoreLocation(path: directory + "/advance.db"), intent: .write) else {
      throw BenchError("cannot create a database")
    }
    let names = (0..<1000).map { InterfaceName("ifb\($0)") }
    var wall = Timestamp(seconds: 1_800_000_000)
    var boottime: Int64 = 1_000_000_000_000
    var counter: UInt64 = 0
    func observations(moving: Bool) -> [LedgerObservation] {
      if moving { counter += 1500 }
      return names.enumerated().map { i, name in
        LedgerObservation(
          name: name, interfaceClass: .other,
          baseline: LedgerBaseline(
            instance: InterfaceInstance(index: Int32(i + 2), bootID: "bench"),
            counters: TrafficCounts(
              rxBytes: counter, txBytes: counter / 2, rxPackets: counter / 1500, txPackets: counter / 3000),
            width: .bits64, wall: wall, boottime: boottime),
          plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
      }
    }
    _ = try store.advanceLedger(observations(moving: false), now: wall)
    for (label, moving) in [
      ("all 1000 counters moving (1000 rows + 4000 bucket upserts)", true), ("all 1000 idle (nothing to write)", false),
    ] {
      var samples: [Int64] = []
      let rounds = quick ? 20 : 100
      for _ in 0..<rounds {
        wall = wall + .seconds(5)
        boottime += 5_000_000_000
        let batch = observations(moving: moving)
        let start = monotonicNanoseconds()
        _ = try store.advanceLedger(batch, now: wall)
        samples.append(monotonicNanoseconds() - start)
      }
      let d = Distribution(samples)
      lines.append(
        "  1000 interfaces, \(label): median \(formatDuration(d.median)), p90 \(formatDuration(d.p90)) (\(d.count) advances)"
      )
    }
    if quick {
      lines.append("  (a simulated year's database size is measured by the full run)")
      return lines
    }
    lines.append(try yearOfSamples(directory: directory))
    return lines
  }

  /// A year of traffic on 20 interfaces with an injected clock (`SimulatedHistory`): the first two
  /// days at the recorder's 5-second interval, the rest in 5-minute steps — the same bucket rows a
  /// 5-second year writes, at 1/60 of the time.
  static func yearOfSamples(directory: String) throws -> String {
    let path = directory + "/year.db"
    guard let store = try Store.open(StoreLocation(path: path), intent: .write) else {
      throw BenchError("cannot create a database")
    }
    let start = monotonicNanoseconds()
    let advances = try SimulatedHistory().record(
      into: store, from: Timestamp(seconds: 1_800_000_000), duration: 365 * 86_400)
    store.checkpoint()
    var info = stat()
    stat(path, &info)
    let buckets = TrafficGranularity.allCases.map { g in "\(g.name) \((try? store.buckets(g, since: 0).count) ?? -1)" }
    return
      "  a simulated year, 20 interfaces: database \(fixed(Double(info.st_size) / 1_048_576, 2)) MiB (target < 20 MB); "
      + "bucket rows: \(buckets.joined(separator: ", ")); \(advances) advances in \(formatDuration(Double(monotonicNanoseconds() - start)))"
  }

  static func temporaryDirectory() throws -> String {
    var template = Array("/tmp/vpnstat-bench-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw BenchError("mkdtemp failed") }
    return String(cString: made)
  }

  static func removeTree(_ path: String) {
    let command = PreparedCommand(label: "", path: "/bin/rm", arguments: ["-rf", path])
    if let pid = try? command.spawn() { _ = try? waitForExit(pid) }
  }
}

/// The enforcer's latency: from a session's deadline to the tunnel down, over repeated windows,
/// measured inside a namespace with a tun and the release binary — alone, then with another
/// user's processes in the namespace holding ~200,000 descriptors (what a walk of /proc that
/// read everyone's descriptors paid for).
enum EnforceBenchmark {
  static func runInner(vpnstat: String, ip: String, quick: Bool) throws -> [String] {
    let directory = try StoreBenchmark.temporaryDirectory()
    defer { StoreBenchmark.removeTree(directory) }
    let db = directory + "/enforce.db"
    func ipRun(_ arguments: [String]) throws {
      let pid = try PreparedCommand(label: "", path: ip, arguments: arguments).spawn()
      guard try waitForExit(pid).succeeded else { throw BenchError("ip \(arguments) failed") }
    }
    try ipRun(["tuntap", "add", "mode", "tun", "name", "tunbench"])
    defer { try? ipRun(["link", "del", "tunbench"]) }
    try ipRun(["link", "set", "tunbench", "up"])
    let devnull = open("/dev/null", O_WRONLY)
    defer { close(devnull) }
    let enforcer = try PreparedCommand(
      label: "", path: vpnstat,
      arguments: ["enforce", "tunbench", "--db", db, "--session-length", "1s", "--pause-length", "1s"]
    ).spawn(stdout: devnull, stderr: devnull)
    defer {
      kill(enforcer, SIGTERM)
      _ = try? waitForExit(enforcer)
    }
    let cycles = quick ? 5 : 20
    var notes = [try measure(db: db, cycles: cycles, ip: ipRun, label: "no other process")]
    let crowd = try Crowd(processes: 10, descriptors: 19_990)
    defer { crowd.stop() }
    notes.append(
      try measure(
        db: db, cycles: cycles, ip: ipRun,
        label: "\(crowd.processes) processes of nobody holding \(crowd.processes * crowd.descriptors) descriptors"))
    return notes
  }

  static func measure(db: String, cycles: Int, ip ipRun: ([String]) throws -> Void, label: String) throws -> String {
    let control = try NetlinkLinkTable()
    var latencies: [Int64] = []
    var failures = 0
    for _ in 0..<cycles {
      // Wait until the enforcer has opened this window and the tunnel is up inside it.
      var window: SessionWindow?
      let waitStart = monotonicNanoseconds()
      while true {
        window = try Store.open(StoreLocation(path: db), intent: .read)?.sessionRecord().window
        if let w = window, SystemTimeSource().now().wall < w.sessionEndsAt, try control.isUp(InterfaceName("tunbench"))
        {
          break
        }
        if monotonicNanoseconds() - waitStart > 5_000_000_000 {
          // A window that ended while we waited: bring the tunnel up for the next.
          try ipRun(["link", "set", "tunbench", "up"])
          if monotonicNanoseconds() - waitStart > 15_000_000_000 { throw BenchError("no window opened") }
        }
        usleep(1000)
      }
      guard let current = window else { continue }
      while try control.isUp(InterfaceName("tunbench")) {
        usleep(200)
        if SystemTimeSource().now().wall > current.sessionEndsAt + .seconds(5) { break }
      }
      let down = SystemTimeSource().now().wall
      if try control.isUp(InterfaceName("tunbench")) { failures += 1 }
      latencies.append((down - current.sessionEndsAt).nanoseconds)
      // Past the pause, bring it up again: the enforcer opens the next window.
      while SystemTimeSource().now().wall < current.pauseEndsAt + .milliseconds(100) { usleep(5000) }
      try ipRun(["link", "set", "tunbench", "up"])
      usleep(50_000)
    }
    let d = Distribution(latencies)
    let worst = latencies.max() ?? 0
    return
      "enforce: session deadline → tunnel down (--action auto: a tun nobody manages, so link-down), \(label), \(latencies.count) windows of 1 s: median \(formatDuration(d.median)), p90 \(formatDuration(d.p90)), worst \(formatDuration(Double(worst)))"
      + (worst < 1_000_000_000 && failures == 0 ? " — under 1 s every time" : " — TARGET MISSED (\(failures) failures)")
  }
}

/// Processes of the user nobody in the namespace, each holding many descriptors open: the load
/// another user can put on anything that walks /proc. Each is this executable again
/// (`--inner-hold-fds N`) under `setpriv`, and says `ready` once it holds them.
struct Crowd {
  let processes: Int
  let descriptors: Int
  private(set) var pids: [pid_t] = []

  init(processes: Int, descriptors: Int) throws {
    self.processes = processes
    self.descriptors = descriptors
    guard let setpriv = findExecutable("setpriv") else { throw BenchError("setpriv (util-linux) is missing") }
    for _ in 0..<processes {
      var ends: [Int32] = [0, 0]
      guard pipe(&ends) == 0 else { throw BenchError("pipe: \(errno)") }
      let pid = try PreparedCommand(
        label: "", path: setpriv,
        arguments: [
          "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", ownExecutablePath(), "--inner-hold-fds",
          String(descriptors),
        ]
      ).spawn(stdout: ends[1])
      close(ends[1])
      pids.append(pid)
      var byte: UInt8 = 0
      let got = read(ends[0], &byte, 1)
      close(ends[0])
      guard got == 1 else {
        stop()
        throw BenchError("a crowd process did not start (is this directory reachable by nobody?)")
      }
    }
  }

  func stop() {
    for pid in pids {
      kill(pid, SIGKILL)
      _ = try? waitForExit(pid)
    }
  }

  /// The crowd process itself: raises its descriptor limit, opens /dev/null `descriptors`
  /// times, says so, and waits to be killed.
  static func hold(descriptors: Int) -> Int32 {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    limit.rlim_cur = min(limit.rlim_max, rlim_t(descriptors + 16))
    setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    for _ in 0..<descriptors where open("/dev/null", O_RDONLY) < 0 { break }
    _ = write(1, "r", 1)
    while true { pause() }
  }
}

/// `vpnstat watch`'s steady-state cost with the namespace's interfaces, on a real terminal
/// (tmux), with a database: CPU share of one core and resident memory.
enum WatchBenchmark {
  static func runInner(vpnstat: String, ifbCount: Int, quick: Bool) throws -> [String] {
    let directory = try StoreBenchmark.temporaryDirectory()
    defer { StoreBenchmark.removeTree(directory) }
    let db = directory + "/watch.db"
    let record = try PreparedCommand(label: "", path: vpnstat, arguments: ["record", "--count", "1", "--db", db])
      .spawn()
    _ = try waitForExit(record)
    guard let terminal = try TerminalSession(command: "exec \(vpnstat) watch --db \(db)") else {
      return ["watch: tmux not found; skipped"]
    }
    defer { terminal.end() }
    sleep(5)
    let seconds: UInt32 = quick ? 20 : 60
    guard let before = ProcessUsage.of(terminal.pid) else { throw BenchError("watch is gone") }
    sleep(seconds)
    guard let after = ProcessUsage.of(terminal.pid) else { throw BenchError("watch is gone") }
    let used = after.since(before, seconds: Double(seconds))
    let rss = "\(after.residentKiB) kB"
    return [
      "watch: \(ifbCount + 1) interfaces (idle), 1 s interval, on a 120×40 terminal with a database: \(fixed(used.cpuPercent, 2)) % of one core over \(seconds) s (target < 1 %), resident \(rss) (target < 30 MiB)"
    ]
  }
}

/// A command running on a 120×40 terminal of its own (a tmux server on a private socket), as a
/// person runs `watch`; `pid` is the command's. `end()` stops the server and the command.
struct TerminalSession {
  let tmux: String
  let socket: String
  let pid: pid_t

  /// Nil when tmux is not installed.
  init?(command: String) throws {
    guard let tmux = findExecutable("tmux") else { return nil }
    self.tmux = tmux
    socket = "vpnstat-bench-\(getpid())-\(monotonicNanoseconds())"
    let start = try PreparedCommand(
      label: "", path: tmux,
      arguments: ["-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", "120", "-y", "40", command]
    ).spawn()
    _ = try waitForExit(start)
    let paneQuery = try runCapturing(
      PreparedCommand(label: "", path: tmux, arguments: ["-L", socket, "display-message", "-p", "#{pane_pid}"]))
    guard let pid = Int32(String(decoding: paneQuery.output, as: UTF8.self).filter { $0.isNumber }) else {
      if let pid = try? PreparedCommand(label: "", path: tmux, arguments: ["-L", socket, "kill-server"]).spawn() {
        _ = try? waitForExit(pid)
      }
      throw BenchError("no pane pid")
    }
    self.pid = pid
  }

  func end() {
    if let pid = try? PreparedCommand(label: "", path: tmux, arguments: ["-L", socket, "kill-server"]).spawn() {
      _ = try? waitForExit(pid)
    }
  }
}
