#if canImport(Glibc)
  import Glibc
#endif

/// Wall time of whole commands, each started with posix_spawn and waited for, their output going
/// to /dev/null (the same sink for every command). Commands run interleaved, in a rotating
/// order, so the machine's noise and any order effect hit vpnstat and its peer alike.
enum CommandBenchmark {
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
    var commands = [
      PreparedCommand(label: Labels.ip, path: ip, arguments: ["-s", "-j", "link"]),
      PreparedCommand(label: Labels.status, path: vpnstat, arguments: ["status", "--json"]),
      PreparedCommand(
        label: Labels.status + " --source sysfs", path: vpnstat,
        arguments: ["status", "--json", "--source", "sysfs"]),
      PreparedCommand(
        label: Labels.status + " --source getifaddrs", path: vpnstat,
        arguments: ["status", "--json", "--source", "getifaddrs"]),
    ]
    if let alternative {
      commands.append(
        PreparedCommand(label: "alt " + Labels.status, path: alternative, arguments: ["status", "--json"]))
    }
    // Each command once with its output kept: it must succeed and list every interface, or its
    // timing would describe some other work.
    var interfaces = 0
    for command in commands {
      let run = try runCapturing(command)
      guard run.exit.succeeded else { throw BenchError("\(command.label) failed: \(run.exit)") }
      // ip lists `"ifname":`, vpnstat `"name_encoding":`, once per interface.
      let key = command.path == ip ? "\"ifname\":" : "\"name_encoding\":"
      let count = occurrences(of: Array(key.utf8), in: run.output)
      if command.path == ip { interfaces = count }
      guard count == interfaces else {
        throw BenchError("\(command.label) listed \(count) interfaces, ip listed \(interfaces)")
      }
    }
    let budget = RoundBudget(
      budgetNanoseconds: quick ? 2_000_000_000 : 12_000_000_000,
      minimumRounds: quick ? 10 : 30, maximumRounds: quick ? 150 : 600)
    return try time(commands, section: .command, ifbCount: ifbCount, interfaces: interfaces, budget: budget)
  }

  /// Start-up: commands that do next to nothing. `/bin/true` is the cost of any process,
  /// `ip -V` of a small dynamically linked C tool, `vpnstat --version` of vpnstat's runtime.
  static func startup(quick: Bool, ip: String, vpnstat: String, alternative: String?) throws
    -> [Measurement]
  {
    var commands = [
      PreparedCommand(label: Labels.trueCommand, path: "/bin/true", arguments: []),
      PreparedCommand(label: Labels.ipVersion, path: ip, arguments: ["-V"]),
      PreparedCommand(label: "vpnstat --version", path: vpnstat, arguments: ["--version"]),
    ]
    if let alternative {
      commands.append(PreparedCommand(label: "alt vpnstat --version", path: alternative, arguments: ["--version"]))
    }
    for command in commands {
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
  static func time(
    _ commands: [PreparedCommand], section: Measurement.Section, ifbCount: Int, interfaces: Int,
    budget: RoundBudget
  ) throws -> [Measurement] {
    let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
    guard null >= 0 else { throw BenchError("cannot open /dev/null") }
    defer { close(null) }
    func once(_ command: PreparedCommand) throws -> (Int64, Bool) {
      let start = monotonicNanoseconds()
      let pid = try command.spawn(stdout: null, stderr: null)
      let exit = try waitForExit(pid, interruptible: true)
      return (monotonicNanoseconds() - start, exit.succeeded)
    }
    for _ in 0..<3 { for command in commands { _ = try once(command) } }
    var samples = [[Int64]](repeating: [], count: commands.count)
    var failures = [Int](repeating: 0, count: commands.count)
    let start = monotonicNanoseconds()
    var rounds = 0
    while budget.shouldContinue(rounds: rounds, startedAt: start) {
      try Interruption.check()
      for offset in 0..<commands.count {
        let c = (rounds + offset) % commands.count
        let (elapsed, succeeded) = try once(commands[c])
        if succeeded { samples[c].append(elapsed) } else { failures[c] += 1 }
      }
      rounds += 1
    }
    return commands.indices.map { c in
      Measurement(
        section: section, label: commands[c].label, ifbCount: ifbCount, interfaces: interfaces,
        timing: Distribution(samples[c]), failures: failures[c])
    }
  }

  private static func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
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
