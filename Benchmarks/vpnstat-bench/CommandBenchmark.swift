#if canImport(Glibc)
  import Glibc
#endif

/// Wall time of whole commands, each started with posix_spawn and waited for, their output going
/// to /dev/null (the same sink for every command). Commands run interleaved, in an order
/// shuffled every round, so the machine's noise and any order effect hit vpnstat and its peer
/// alike.
enum CommandBenchmark {
  /// A command and how often it runs: every round, or every `every`-th one; and how to count
  /// the interfaces in its output (each must list them all, or its time describes other work).
  struct TimedCommand {
    let command: PreparedCommand
    var every = 1
    var counting: Counting = .statusJSON
    init(_ command: PreparedCommand, every: Int = 1, counting: Counting = .statusJSON) {
      self.command = command
      self.every = every
      self.counting = counting
    }
  }

  /// How a command's output says how many interfaces it listed.
  enum Counting {
    /// `ip -j`: one `"ifname":` per interface.
    case ip
    /// vpnstat's status JSON: one `"name_encoding":` per interface.
    case statusJSON
    /// OpenMetrics: one receive-bytes sample per interface.
    case metrics
    /// The C floor: "N interfaces, …".
    case floor
    /// Output not checked (start-up commands).
    case none

    func interfaces(in output: [UInt8]) -> Int {
      switch self {
      case .ip: CommandBenchmark.occurrences(of: Array("\"ifname\":".utf8), in: output)
      case .statusJSON: CommandBenchmark.occurrences(of: Array("\"name_encoding\":".utf8), in: output)
      case .metrics: CommandBenchmark.occurrences(of: Array("vpnstat_interface_receive_bytes_total{".utf8), in: output)
      case .floor: Int(String(decoding: output.prefix { $0 != 0x20 }, as: UTF8.self)) ?? -1
      case .none: 0
      }
    }
  }

  /// The commands of the status comparison: `ip -s -j link` as the peer, `vpnstat status --json`
  /// with each reader, and an alternative vpnstat build when one is given.
  ///
  /// This runs in the inner process, already inside the namespace: `ip netns exec` entered its
  /// network namespace and mounted its /sys once, so the commands are spawned directly and the
  /// cost of `ip netns exec` (a mount namespace, a sysfs mount) is in neither figure, while
  /// `--source sysfs` and the sysfs facts vpnstat reads for `lo` still see the namespace's own /sys.
  static func status(
    ifbCount: Int, quick: Bool, ip: String, vpnstat: String, alternative: String?
  ) throws -> [Measurement] {
    // A database of this namespace's interfaces, as a recorder leaves it (no writer running):
    // the cost of opening it for reading is part of `status --db`.
    let directory = try StoreBenchmark.temporaryDirectory()
    defer { StoreBenchmark.removeTree(directory) }
    let db = directory + "/status.db"
    let recorded = try runCapturing(
      PreparedCommand(label: "", path: vpnstat, arguments: ["record", "--count", "1", "--db", db]))
    guard recorded.exit.succeeded else { throw BenchError("record --count 1 failed: \(recorded.exit)") }
    // The same, with nothing published beside it (`DB.published` removed, as after another
    // program's commit or a crash): what a reader pays in SQLite.
    let unpublished = directory + "/unpublished.db"
    let second = try runCapturing(
      PreparedCommand(label: "", path: vpnstat, arguments: ["record", "--count", "1", "--db", unpublished]))
    guard second.exit.succeeded else { throw BenchError("record --count 1 failed: \(second.exit)") }
    unlink(unpublished + ".published")
    // Published by the recorder, then changed by another vpnstat writer (`plan`), which
    // publishes the change again: readers stay off SQLite.
    let planned = directory + "/planned.db"
    // The same with a data cap set: published with its period's usage.
    let capped = directory + "/capped.db"
    for arguments in [
      ["record", "--count", "1", "--db", planned], ["plan", "premium", "--db", planned],
      ["record", "--count", "1", "--db", capped], ["plan", "--data-cap", "10GiB", "--db", capped],
    ] {
      let run = try runCapturing(PreparedCommand(label: "", path: vpnstat, arguments: arguments))
      guard run.exit.succeeded else { throw BenchError("\(arguments.joined(separator: " ")) failed: \(run.exit)") }
    }
    // The same again, its log grown to what writers leave before SQLite's checkpoint (1000
    // pages): the bench's other databases hold the few frames of one save.
    let longLog = directory + "/long-log.db"
    let third = try runCapturing(
      PreparedCommand(label: "", path: vpnstat, arguments: ["record", "--count", "1", "--db", longLog]))
    guard third.exit.succeeded else { throw BenchError("record --count 1 failed: \(third.exit)") }
    try StoreBenchmark.growLog(longLog, toFrames: 900)
    unlink(longLog + ".published")
    // A recorder its unit ran and stopped, and a reboot since: it published every save into
    // $RUNTIME_DIRECTORY with a link beside the database, and the directory is gone now. Each
    // build's own, as it leaves it.
    func stoppedUnit(_ binary: String, _ name: String) throws -> String {
      let database = directory + "/" + name
      let runtime = directory + "/run"
      guard mkdir(runtime, 0o755) == 0 else { throw BenchError("mkdir \(runtime) failed") }
      defer { StoreBenchmark.removeTree(runtime) }
      let run = try runCapturing(
        PreparedCommand(
          label: "", path: "/usr/bin/env",
          arguments: ["RUNTIME_DIRECTORY=" + runtime, binary, "record", "--count", "1", "--db", database]))
      guard run.exit.succeeded else { throw BenchError("\(binary) record --count 1 (as its unit) failed: \(run.exit)") }
      return database
    }
    let stopped = try stoppedUnit(vpnstat, "stopped.db")
    let floor = netlinkFloorPath()
    var commands = [
      TimedCommand(PreparedCommand(label: Labels.ip, path: ip, arguments: ["-s", "-j", "link"]), counting: .ip),
      TimedCommand(PreparedCommand(label: Labels.status, path: vpnstat, arguments: ["status", "--json"])),
      TimedCommand(PreparedCommand(label: Labels.export, path: vpnstat, arguments: ["export"]), counting: .metrics),
      TimedCommand(
        PreparedCommand(label: Labels.statusWithDatabase, path: vpnstat, arguments: ["status", "--json", "--db", db])),
      TimedCommand(
        PreparedCommand(label: Labels.exportWithDatabase, path: vpnstat, arguments: ["export", "--db", db]),
        counting: .metrics),
    ]
    for (label, database) in [
      (Labels.statusReadingDatabase, unpublished), (Labels.statusAfterStop, stopped), (Labels.statusAfterPlan, planned),
      (Labels.statusWithCap, capped),
    ] {
      commands.append(
        TimedCommand(
          PreparedCommand(label: label, path: vpnstat, arguments: ["status", "--json", "--db", database])))
    }
    commands += [
      TimedCommand(
        PreparedCommand(
          label: Labels.statusReadingLongLog, path: vpnstat, arguments: ["status", "--json", "--db", longLog]),
        every: 4)
    ]
    if access(floor, X_OK) == 0 {
      commands.append(
        TimedCommand(PreparedCommand(label: Labels.commandFloor, path: floor, arguments: []), counting: .floor))
    }
    let sqliteFloor = sqliteFloorPath()
    if access(sqliteFloor, X_OK) == 0 {
      commands.append(
        TimedCommand(
          PreparedCommand(label: Labels.sqliteFloor, path: sqliteFloor, arguments: [unpublished]), counting: .floor))
    }
    if let alternative {
      commands.append(
        TimedCommand(
          PreparedCommand(
            label: "alt " + Labels.status, path: alternative, arguments: ["status", "--json"])))
      // The same database (the schema is the same), so a change to the readers' path shows
      // before and after in one run.
      commands.append(
        TimedCommand(
          PreparedCommand(
            label: "alt " + Labels.statusWithDatabase, path: alternative, arguments: ["status", "--json", "--db", db])))
      commands.append(
        TimedCommand(
          PreparedCommand(
            label: "alt " + Labels.statusReadingDatabase, path: alternative,
            arguments: ["status", "--json", "--db", unpublished])))
      commands.append(
        TimedCommand(
          PreparedCommand(
            label: "alt " + Labels.statusAfterStop, path: alternative,
            arguments: ["status", "--json", "--db", try stoppedUnit(alternative, "alt-stopped.db")])))
    }
    // For context only, and slow with many interfaces: every 4th round, so that the comparison
    // with ip gets most of the time budget.
    for source in ["sysfs", "getifaddrs"] {
      commands.append(
        TimedCommand(
          PreparedCommand(
            label: Labels.status + " --source " + source, path: vpnstat,
            arguments: ["status", "--json", "--source", source]), every: 4))
    }
    // Each command once with its output kept: it must succeed and list every interface, or its
    // timing would describe some other work.
    var interfaces = 0
    for timed in commands {
      let run = try runCapturing(timed.command)
      guard run.exit.succeeded else { throw BenchError("\(timed.command.label) failed: \(run.exit)") }
      let count = timed.counting.interfaces(in: run.output)
      if timed.counting == .ip { interfaces = count }
      guard count == interfaces else {
        throw BenchError("\(timed.command.label) listed \(count) interfaces, ip listed \(interfaces)")
      }
    }
    let budget = RoundBudget(
      budgetNanoseconds: quick ? 3_000_000_000 : 16_000_000_000,
      minimumRounds: quick ? 10 : 30, maximumRounds: quick ? 150 : 600)
    return try time(
      commands, section: .command, ifbCount: ifbCount, interfaces: interfaces, budget: budget)
  }

  /// Start-up: commands that do next to nothing. `/bin/true` is the cost of any process,
  /// `ip -V` of a small dynamically linked C tool, `vpnstat --version` of vpnstat's runtime.
  static func startup(quick: Bool, ip: String, vpnstat: String, alternative: String?) throws
    -> [Measurement]
  {
    var commands = [
      TimedCommand(PreparedCommand(label: Labels.trueCommand, path: "/bin/true", arguments: []), counting: .none),
      TimedCommand(PreparedCommand(label: Labels.ipVersion, path: ip, arguments: ["-V"]), counting: .none),
      TimedCommand(
        PreparedCommand(label: "vpnstat --version", path: vpnstat, arguments: ["--version"]), counting: .none),
    ]
    if let alternative {
      commands.append(
        TimedCommand(
          PreparedCommand(
            label: "alt vpnstat --version", path: alternative, arguments: ["--version"]), counting: .none))
    }
    for command in commands.map(\.command) {
      let run = try runCapturing(command)
      guard run.exit.succeeded else { throw BenchError("\(command.label) failed: \(run.exit)") }
    }
    let budget = RoundBudget(
      budgetNanoseconds: quick ? 1_000_000_000 : 5_000_000_000,
      minimumRounds: quick ? 30 : 100, maximumRounds: quick ? 300 : 1000)
    return try time(commands, section: .startup, ifbCount: 0, interfaces: 0, budget: budget)
  }

  /// Runs the commands in rounds (warm-up first: page cache, dynamic loader cache) and
  /// summarises each one's wall times. A failed run counts as a failure, not as a time.
  /// The first command is the peer: each other command's paired ratio is taken against it.
  static func time(
    _ commands: [TimedCommand], section: Measurement.Section, ifbCount: Int, interfaces: Int,
    budget: RoundBudget
  ) throws -> [Measurement] {
    let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
    guard null >= 0 else { throw BenchError("cannot open /dev/null") }
    defer { close(null) }
    func once(_ command: PreparedCommand) throws -> Int64? {
      let start = monotonicNanoseconds()
      let pid = try command.spawn(stdout: null, stderr: null)
      let exit = try waitForExit(pid, interruptible: true)
      let elapsed = monotonicNanoseconds() - start
      return exit.succeeded ? elapsed : nil
    }
    for _ in 0..<3 { for timed in commands { _ = try once(timed.command) } }
    var samples = [[Int64]](repeating: [], count: commands.count)
    var ratios = [[Double]](repeating: [], count: commands.count)
    var failures = [Int](repeating: 0, count: commands.count)
    let start = monotonicNanoseconds()
    var rounds = 0
    var order = RoundOrder(commands.count)
    while budget.shouldContinue(rounds: rounds, startedAt: start) {
      try Interruption.check()
      var thisRound = [Int64?](repeating: nil, count: commands.count)
      // Shuffled, not rotated: a rotation keeps each command right after the same other one in
      // all but one round of each turn, and the command after `ip -s -j link` (9 ms and a
      // megabyte of output at 1000 interfaces) ran slower — vpnstat's own status, always, while
      // the alternative build followed the C floor: 0.6 ms of the difference at 1000 interfaces
      // where perf stat and callgrind found none.
      for c in order.nextRound() {
        guard rounds % commands[c].every == 0 else { continue }
        thisRound[c] = try once(commands[c].command)
        if let elapsed = thisRound[c] { samples[c].append(elapsed) } else { failures[c] += 1 }
      }
      if let peer = thisRound[0] {
        for c in commands.indices {
          if let elapsed = thisRound[c] { ratios[c].append(Double(elapsed) / Double(peer)) }
        }
      }
      rounds += 1
    }
    return commands.indices.map { c in
      Measurement(
        section: section, label: commands[c].command.label, ifbCount: ifbCount,
        interfaces: interfaces,
        timing: Distribution(samples[c]), failures: failures[c],
        pairedRatio: medianOf(ratios[c]))
    }
  }

  private static func medianOf(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  }

  static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
    guard !needle.isEmpty, haystack.count >= needle.count else { return 0 }
    var count = 0
    var i = 0
    while i <= haystack.count - needle.count {
      if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) {
        count += 1
        i += needle.count
      } else {
        i += 1
      }
    }
    return count
  }
}
