import Foundation
import Testing
import VPNStatSimulation

@testable import VPNStatCapture
@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Random argument vectors for every command and mutated capture files, fed to the built
/// binary: it may refuse anything, but only with a documented exit status, within seconds, and
/// without putting a raw escape, C1 or BiDi character on a terminal. Seeded: every failure names
/// the seed and the input, and `VPNSTAT_FUZZ_SEED=N swift test --filter FuzzTests` replays it.
struct FuzzTests {
  static let seed: UInt64 = {
    if let text = ProcessInfo.processInfo.environment["VPNSTAT_FUZZ_SEED"], let seed = UInt64(text) {
      return seed
    }
    return UInt64.random(in: 1...UInt64(UInt32.max))
  }()

  /// Exit statuses vpnstat documents; 70 (internal error) is a bug, so it is not among them.
  static let allowed = Set(ExitStatus.allCases.filter { $0 != .software }.map(\.rawValue))

  /// How one run ended.
  struct Outcome {
    var status: Int32
    var timedOut: Bool
    var stdout: Data
    var stderr: Data
  }

  /// How long a run that must end may take before it counts as hung. Every vector ends in
  /// milliseconds on an idle machine, but under load (builds on both cores) starting one
  /// process — `ip netns exec` and vpnstat — took 1.6 s, and 5 s budgets ran out for commands
  /// that exit at once (`session check`, `alert`, `flows --count 0`): a hang never ends, so a
  /// generous budget catches every one and mistakes no slow start for one.
  static let hangTimeout: TimeInterval = 60

  /// Runs vpnstat (inside `namespace` when given); a run still going after `timeout` is killed,
  /// with whatever it started, and reported as timed out (`check` names the seed and vector).
  static func run(
    _ arguments: [String], environment: [String: String], timeout: TimeInterval, in namespace: TestNamespace? = nil
  ) throws -> Outcome {
    let child =
      if let namespace {
        try ChildProcess(
          "/usr/sbin/ip", ["netns", "exec", namespace.name, Built.vpnstat] + arguments, environment: environment)
      } else {
        try ChildProcess(Built.vpnstat, arguments, environment: environment)
      }
    child.closeInput()
    let (status, timedOut) = child.finish(within: timeout)
    return Outcome(status: status, timedOut: timedOut, stdout: child.stdoutData, stderr: child.stderrData)
  }

  /// What must never reach a terminal raw: ESC, C1 controls, BiDi controls.
  static func rawControl(in data: Data) -> String? {
    let text = String(decoding: data, as: UTF8.self)
    for scalar in text.unicodeScalars {
      let value = scalar.value
      if value == 0x1B || (0x80...0x9F).contains(value) || (0x202A...0x202E).contains(value)
        || (0x2066...0x2069).contains(value)
      {
        return "U+" + String(value, radix: 16)
      }
    }
    return nil
  }

  /// Checks one outcome: a documented status, no signal, no hang (unless the command may run
  /// on), nothing raw on the way out.
  static func check(_ outcome: Outcome, input: String, mayRunOn: Bool = false) {
    let context = "seed \(seed), input: \(input)"
    if outcome.timedOut {
      #expect(mayRunOn, "hung (killed after the timeout); \(context)")
      return
    }
    if outcome.status >= 128 {
      Issue.record("killed by signal \(outcome.status - 128); \(context)")
    } else if !allowed.contains(outcome.status) {
      Issue.record(
        "exit \(outcome.status) is not a documented status; \(context); stderr: \(String(decoding: outcome.stderr, as: UTF8.self))"
      )
    }
    for (stream, data) in [("stdout", outcome.stdout), ("stderr", outcome.stderr)] {
      if let found = rawControl(in: data) { Issue.record("raw \(found) on \(stream); \(context)") }
    }
  }

  // MARK: - capture files

  /// The real capture files the mutations start from: every link type vpnstat reads, pcap and
  /// pcapng, whole packets and headers only.
  static func seedFiles(in directory: CaptureDirectory) throws -> [Data] {
    let packets = KnownTraffic(seed: 3, flows: 6).packets
    var files: [Data] = []
    for (index, link) in [CaptureLinkType.rawIP, .ethernet, .linuxCooked, .linuxCooked2].enumerated() {
      let path = directory.path("seed\(index).pcap")
      try CaptureFiles.writePcap(
        Array(packets.prefix(12)), link: link, to: path, snapshotLength: index == 1 ? 64 : 65535)
      files.append(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
    files.append(CaptureFiles.pcapng(Array(packets.prefix(12)), link: .rawIP))
    files.append(CaptureFiles.pcapng(Array(packets.prefix(6)), link: .ethernet))
    return files
  }

  static let interestingBytes: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF, 0x40, 0x45, 0x60]
  static let interestingWords: [UInt32] = [
    0, 1, 0xFFFF_FFFF, 0x7FFF_FFFF, 0x8000_0000, 0x0021_0000, 0xFFFF, 0x1_0000, 262_144, 262_145, 14, 20, 40,
  ]

  /// One mutation of `data`, and what it was (for the failure message).
  static func mutate(_ data: inout [UInt8], _ random: inout SplitMix) -> String {
    guard !data.isEmpty else { return "empty" }
    // Headers are where lengths and times live: aim there a third of the time.
    func offset() -> Int {
      random.next() % 3 == 0
        ? Int(random.next() % UInt64(min(data.count, 96))) : Int(random.next() % UInt64(data.count))
    }
    switch random.next() % 8 {
    case 7 where data.count >= 64 && data[0] == 0x0A && data[1] == 0x0D:
      // The first pcapng packet's time, high word: past 2262 when large.
      let word = interestingWords[Int(random.next() % UInt64(interestingWords.count))]
      data.replaceSubrange(60..<64, with: withUnsafeBytes(of: word.littleEndian, Array.init))
      return "time high word=\(word)"
    case 0:
      let at = offset()
      let bit = UInt8(1) << (random.next() % 8)
      data[at] ^= bit
      return "flip \(at):\(bit)"
    case 1:
      let at = offset()
      data[at] = interestingBytes[Int(random.next() % UInt64(interestingBytes.count))]
      return "byte \(at)=\(data[at])"
    case 2:
      let at = min(offset(), max(0, data.count - 4))
      let word = interestingWords[Int(random.next() % UInt64(interestingWords.count))]
      let bytes =
        random.next() % 2 == 0
        ? withUnsafeBytes(of: word.littleEndian, Array.init) : withUnsafeBytes(of: word.bigEndian, Array.init)
      for (i, byte) in bytes.enumerated() where at + i < data.count { data[at + i] = byte }
      return "word \(at)=\(word)"
    case 3:
      let at = offset()
      data.removeSubrange(at...)
      return "truncate \(at)"
    case 4:
      let at = offset()
      let length = min(data.count - at, 1 + Int(random.next() % 64))
      data.insert(contentsOf: Array(data[at..<(at + length)]), at: at)
      return "repeat \(at)+\(length)"
    case 5:
      let at = offset()
      let length = 1 + Int(random.next() % 16)
      data.insert(contentsOf: (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: at)
      return "insert \(at)+\(length)"
    default:
      let at = offset()
      let length = min(data.count - at, 1 + Int(random.next() % 32))
      data.removeSubrange(at..<(at + length))
      return "delete \(at)+\(length)"
    }
  }

  @Test("mutated pcap and pcapng files: flows --read ends with 0 or 65, never a signal or a hang")
  func captureFiles() throws {
    let directory = try CaptureDirectory()
    let seeds = try Self.seedFiles(in: directory)
    var random = SplitMix(seed: Self.seed)
    let environment = ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"]
    let optionSets: [[String]] = [
      [], ["--json"], ["--interval", "1ms"], ["--interval", "1ms", "--json", "--top", "1"],
      ["--count", "2", "--interval", "1ms"], ["--local", "169.254.7.1"], ["--filter", "udp or ip6"],
      ["--write", directory.path("out.pcap")], ["--interval", "100d", "--json"],
    ]
    let started = Date()
    for iteration in 0..<200 {
      var data = [UInt8](seeds[Int(random.next() % UInt64(seeds.count))])
      var steps: [String] = []
      for _ in 0...(random.next() % 4) { steps.append(Self.mutate(&data, &random)) }
      let path = directory.path("fuzz.pcap")
      try Data(data).write(to: URL(fileURLWithPath: path))
      let options = optionSets[Int(random.next() % UInt64(optionSets.count))]
      let outcome = try Self.run(
        ["flows", "--read", path] + options, environment: environment, timeout: Self.hangTimeout)
      let failed = outcome.timedOut || !Self.allowed.contains(outcome.status) || outcome.status >= 128
      var input = "iteration \(iteration), flows --read FILE \(options.joined(separator: " ")), mutations \(steps)"
      if failed {
        // Kept for replaying by hand.
        let kept = "/tmp/vpnstat-fuzz-\(Self.seed)-\(iteration).pcap"
        try? Data(data).write(to: URL(fileURLWithPath: kept))
        input += ", file kept as \(kept)"
      }
      Self.check(outcome, input: input)
      if !failed {
        #expect([0, 65].contains(outcome.status), "exit \(outcome.status); seed \(Self.seed), \(input)")
      }
    }
    print("capture fuzz: seed \(Self.seed), 200 files in \(Int(Date().timeIntervalSince(started) * 1000)) ms")
  }

  // MARK: - argument vectors

  /// One command as its `--help` shows it: its options with the kind of value each takes.
  struct Command {
    var path: [String]
    /// Long option → value name (`duration`, `n`, `path` …), nil for a flag; `command` for a
    /// remainder.
    var options: [String: String?]
    var positional: Bool
  }

  static func commands() throws -> [Command] {
    try DocumentationTests.allCommands().filter { $0.subcommands.isEmpty }.map { command in
      let help = try FuzzTests.run(
        Array(command.path.dropFirst()) + ["--help"], environment: [:], timeout: hangTimeout)
      let text = String(decoding: help.stdout, as: UTF8.self)
      var options: [String: String?] = [:]
      for match in text.matches(of: /\n  (?:-[a-z], )?--([a-z-]+)(?: \[?<([a-z=]+)>)?/) {
        options[String(match.1)] = match.2.map(String.init)
      }
      return Command(path: Array(command.path.dropFirst()), options: options, positional: text.contains("ARGUMENTS:"))
    }
  }

  /// A fixture sysfs tree whose names and files hold what a hostile or broken kernel could.
  static func hostileSysfs() throws -> SysfsFixture {
    let tree = try SysfsFixture()
    let values = [
      "18446744073709551615", "18446744073709551616", "", "garbage", "-1", "0x10", "99999999999999999999999", "0",
    ]
    for (index, name) in ["wg0", "e\u{1B}[2Jv", "\u{202E}x", "q\"\\x", "a\u{9B}b", "tun\u{200B}"].enumerated() {
      try tree.add(
        name, index: index + 2, rx: UInt64.max, tx: UInt64(index), type: [65534, 1, 772, 65535, 0, 512][index],
        directories: index % 2 == 0 ? ["device"] : [],
        attributes: [
          "statistics/tx_bytes": values[index % values.count], "ifindex": index == 5 ? "4294967296" : "\(index + 2)",
          "speed": values[(index + 3) % values.count], "operstate": "\u{1B}[31mup",
        ])
    }
    return tree
  }

  /// Values by the kind of option: valid ones (short durations only, so nothing waits long
  /// legitimately) and hostile ones. Paths all point into `directory` or at a directory that
  /// does not exist — never a relative path (it would land in the working directory) and never
  /// a missing directory a writing command would create as root.
  static func pools(_ directory: TemporaryDirectory, capture: String, sysfs: String) -> [String: [String]] {
    let junk = [
      "", "0", "-1", "0.0000000001", "0.0009", "9223372036854775807", "9223372036854775808",
      "18446744073709551616", "nan", "inf", "-inf", "1e9", "\u{1B}[2J", "\u{9B}31m", "\u{202E}x", "a b", "=", "--", "-",
      "\\x", "\\xff", "\\", String(repeating: "9", count: 400), String(repeating: "x", count: 5000), "100000d", "1s1",
      "0x10", "1.2.3", "天気", "+5",
    ]
    return [
      "": junk,
      "duration": ["1ms", "10ms", "0.05", "1ms1ms", "101d", "0s", "-5s", "1 ms", "1h-1h"],
      "n": [
        "1", "2", "3", "576", "577", "168", "62", "25", "2000000000", "9223372036854775807", "99999999999999999999",
      ],
      "rate": ["10Gbit", "1B", "1TiB/s", "0B", "1e400B", "1Ebit", "5 MB"],
      "reader": ["netlink", "sysfs", "getifaddrs", "proc"],
      "name": ["lo", "wg0", "vpnstat-none0", "\\xff", "\\x1b[2J", "a b"],
      "class": ["tunnel", "wifi,other", "tunnel,,", "satellite"],
      "name=class": ["wg0=tunnel", "lo=wifi", "=tunnel", "a=b=c", "\\xff=other", "wg0="],
      "path": [
        directory.file("a.db"), directory.file("sub/b.db"), directory.path, capture, directory.file("c.pcap/x.db"),
        directory.file("\u{1B}[2J.db"),
      ],
      "dir": [directory.path, sysfs, "/nonexistent", directory.file("none\u{1B}[2J"), capture],
      "file": [capture, directory.file("none.pcap"), directory.path, "-", directory.file("a.db")],
      "address": ["169.254.7.1", "::1", "fe80::1", "256.1.1.1", "::ffff:1.2.3.4", "1::2::3"],
      "bytes": ["0", "64", "262144", "63", "262145", "-1"],
      "expression": ["udp", "tcp port 80", "(((", "ip6 and not icmp6", "ether host zz"],
      "format": ["openmetrics", "prometheus", "json"],
      "grouping": ["class", "interface", "host"],
      "action": ["link-down", "reboot"],
      "command": ["/bin/true", "/nonexistent/cmd", "/bin/false"],
      "positional": ["lo", "vpnstat-none0", "any", "free", "premium", "gold", "a b", "\u{1B}[2J", "\\xff", ""],
    ]
  }

  /// What a command's positional may be: `lo` for the read-only commands only. The ones that
  /// may change a link (`LinkChanging`) get names no interface has — even in the fuzz's own
  /// namespace, a run must not take a link down (seeds used to run `disconnect -- lo` on the
  /// host and take its loopback down).
  static func positionals(for command: String, _ pools: [String: [String]]) -> [String] {
    switch command {
    case "enforce": ["vpnstat-none0", "vpnstat-none1", "a b", ""]
    case _ where LinkChanging.commands.contains(command): pools["positional"]!.filter { $0 != "lo" }
    default: pools["positional"]!
    }
  }

  @Test(
    "random argument vectors for every command, in a namespace of the test's own: a documented status, no signal, no hang, nothing raw"
  )
  func argumentVectors() throws {
    // Whatever a vector does, it does to the namespace's links, never the host's (without root
    // there is no namespace, and no vector can change a link either).
    let namespace = Privilege.isRoot ? try TestNamespace("fuzz") : nil
    let commands = try Self.commands()
    #expect(commands.count >= 10, "\(commands.map(\.path))")
    let directory = try TemporaryDirectory("fuzzargv")
    let capture = directory.file("c.pcap")
    try CaptureFiles.writePcap(KnownTraffic().packets, link: .rawIP, to: capture)
    let sysfs = try Self.hostileSysfs()
    let pools = Self.pools(directory, capture: capture, sysfs: sysfs.directory.path)
    // Nothing real is touched: the database, the configuration and the state all live in the
    // test's directory.
    let environment = [
      "VPNSTAT_DB": directory.file("env.db"), "VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config",
      "HOME": directory.path, "XDG_STATE_HOME": directory.path, "XDG_CONFIG_HOME": directory.path,
    ]
    var random = SplitMix(seed: Self.seed ^ 0xA5A5)
    func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
    let started = Date()
    var runs = 0
    while runs < 300 {
      let command = pick(commands)
      let name = command.path.first ?? ""
      var arguments = command.path
      var given = Set<String>()
      for _ in 0..<(random.next() % 5) {
        let roll = random.next() % 20
        if roll == 0 {
          arguments.append(pick(["--no-such-option", "-z", "--", "--help", "-h", pick(pools[""]!)]))
          continue
        }
        // Sorted: a dictionary's order changes from run to run, and the seed must replay.
        let options = command.options.filter { $0.key != "help" }.sorted { $0.key < $1.key }
        guard !options.isEmpty else { continue }
        let (option, kind) = pick(options)
        // The remainder option takes the rest: it is added last, below.
        if kind == "command" { continue }
        given.insert(option)
        guard let kind else {
          arguments.append("--\(option)")
          continue
        }
        // Counts of watch, record and flows stay small: a huge one is a legitimate long run.
        let values: [String]
        if option == "count" {
          values = ["1", "0", "-1", "x", "", "1.5", "99999999999999999999"]
        } else if ["path", "dir", "file"].contains(kind) {
          values = pools[kind]!
        } else {
          values = roll < 4 ? pools[""]! : pools[kind] ?? pools[""]!
        }
        let value = pick(values)
        if random.next() % 3 == 0 || value.hasPrefix("-") {
          arguments.append("--\(option)=\(value)")
        } else {
          arguments += ["--\(option)", value]
        }
      }
      // What keeps a run short and harmless: a count and a short interval for the commands that
      // repeat, and for enforce a tunnel that does not exist (it then waits, as it should).
      if ["watch", "record", "flows"].contains(name) {
        if !given.contains("count") { arguments += ["--count", "1"] }
        if !given.contains("interval") { arguments += ["--interval", "10ms"] }
      }
      if command.positional {
        let positional = pick(Self.positionals(for: name, pools))
        if random.next() % 4 != 0 { arguments += ["--", positional] }
      }
      if name == "enforce", random.next() % 2 == 0 { arguments += ["--exec", pick(pools["command"]!), "a\u{1B}b"] }
      let enforces = name == "enforce"
      // An enforcer runs until stopped: killed after a moment, the rest within the hang budget.
      let outcome = try Self.run(
        arguments, environment: environment, timeout: enforces ? 0.3 : Self.hangTimeout, in: namespace)
      let shown = arguments.map { TerminalText.sanitize($0).prefix(80) }.joined(separator: " ")
      Self.check(outcome, input: "run \(runs): vpnstat \(shown)", mayRunOn: enforces)
      runs += 1
    }
    print("argv fuzz: seed \(Self.seed), \(runs) runs in \(Int(Date().timeIntervalSince(started) * 1000)) ms")
  }
}
