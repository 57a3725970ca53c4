import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Bad numbers, files and names as a careless user or an attacker gives them: each one is a
/// clear error with a documented status, never a trap, a hang or an allocation without bound.
struct BadInputTests {
  /// Never the machine's own configuration file or database.
  static let environment = ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"]

  static func vpnstat(_ arguments: [String], environment: [String: String] = [:], timeout: TimeInterval = 10) throws
    -> CommandResult
  {
    try run(Built.vpnstat, arguments, environment: Self.environment.merging(environment) { $1 }, timeout: timeout)
  }

  // MARK: - durations

  @Test("a duration is 1 ms to 100 days: less rounds to nothing, and is refused")
  func durationRange() {
    #expect(parseDuration("1ms") == .milliseconds(1))
    #expect(parseDuration("0.001") == .milliseconds(1))
    #expect(parseDuration("100d") == .seconds(100 * 86_400))
    for tiny in ["0.0000000001", "0.9ms", "0.0009", "0.0001s", "1e-9"] {
      #expect(parseDuration(tiny) == nil, "\(tiny)")
    }
  }

  /// Every `--name <duration>` option of every command, read from `--help`.
  static func durationOptions() throws -> [(command: [String], option: String)] {
    var found: [(command: [String], option: String)] = []
    for command in try DocumentationTests.allCommands() {
      let help = try vpnstat(Array(command.path.dropFirst()) + ["--help"]).output
      for match in help.matches(of: /--([a-z-]+) \[?<duration>/) {
        found.append((Array(command.path.dropFirst()), String(match.1)))
      }
    }
    return found
  }

  /// The bounds a command's duration options say: every one 1 ms to 100 days, except the time
  /// `connect` and `disconnect` give a manager, which a person waits through.
  static func durationBounds(_ command: [String]) -> String {
    ["connect", "disconnect"].contains(command.first) ? "from 100ms to 10m" : "from 1ms to 100d"
  }

  @Test("every duration option refuses 0.0000000001 with 64 and names it (watch and record hung, flows --read trapped)")
  func tinyDurationsEverywhere() throws {
    let options = try Self.durationOptions()
    // The ones the issue names, so that a change in --help cannot make this test vacuous.
    for expected in ["watch interval", "record interval", "flows interval", "status rate", "enforce exec-timeout"] {
      #expect(options.contains { "\($0.command.joined(separator: " ")) \($0.option)" == expected }, "\(expected)")
    }
    let directory = try TemporaryDirectory("tiny")
    let capture = directory.file("c.pcap")
    try CaptureFiles.writePcap(KnownTraffic().packets, link: .rawIP, to: capture)
    for (command, option) in options {
      var arguments = command + ["--\(option)=0.0000000001", "--db", directory.file("v.db")]
      switch command.first {
      case "flows": arguments += ["--read", capture]
      case "enforce": arguments += ["vpnstat-none0"]
      case "watch", "record": arguments += ["--count", "2"]
      default: break
      }
      let result = try Self.vpnstat(arguments, timeout: 5)
      #expect(result.status == 64, "\(arguments): \(result.status) \(result.errors)")
      #expect(
        result.errors.contains("invalid value '0.0000000001' for '--\(option)")
          && result.errors.contains(Self.durationBounds(command)), "\(arguments): \(result.errors)")
    }
  }

  @Test(
    "history --since/--until: a local date from 2262-04-11 on is 64 like its RFC 3339 form, in any time zone (it died with SIGILL); 2262-04-10 is the last"
  )
  func farDates() throws {
    let directory = try TemporaryDirectory("fardates")
    let db = directory.file("v.db")
    #expect(try Self.vpnstat(["plan", "free", "--db", db]).status == 0)
    for zone in ["UTC", "Pacific/Kiritimati", "Etc/GMT+12"] {
      for option in ["--since", "--until"] {
        for value in ["2262-04-11", "2262-04-12", "2262-04-12T00:00:00Z", "2263-01-01", "9999-12-31"] {
          let result = try Self.vpnstat(["history", option, value, "--db", db], environment: ["TZ": zone])
          #expect(result.status == 64, "TZ=\(zone) \(option) \(value): \(result.status) \(result.errors.prefix(200))")
          #expect(result.errors.contains("invalid value '\(value)' for '\(option) <when>'"), "\(result.errors)")
        }
        for view in ["--five-minutes", "--hours", "--days", "--months"] {
          let last = try Self.vpnstat(
            ["history", option, "2262-04-10", view, "--json", "--db", db], environment: ["TZ": zone])
          #expect(
            last.status == 0, "TZ=\(zone) \(option) 2262-04-10 \(view): \(last.status) \(last.errors.prefix(200))")
        }
      }
    }
    let said = try Self.vpnstat(["history", "--until", "2262-04-12", "--db", db])
    #expect(said.errors.contains("a date from 1970-01-01 to 2262-04-10"), "\(said.errors)")
  }

  @Test("a rate is finite: three hundred digits of TiB are refused, not infinite")
  func rateRange() {
    #expect(parseRate("10Gbit") == 1.25e9)
    #expect(parseRate(String(repeating: "9", count: 300) + "TiB") == nil)
    #expect(parseRate(String(repeating: "9", count: 400) + "B") == nil)
  }

  // MARK: - the parser

  static let spec = CommandSpec(
    name: "tool", abstract: "t",
    subcommands: [
      CommandSpec(
        name: "history", abstract: "h",
        options: [
          OptionSpec(
            "hours", .optionalValue("n"), help: "h", accepts: { parseCount($0, in: 1...168) != nil },
            expected: "a number from 1 to 168")
        ]),
      CommandSpec(
        name: "show", abstract: "s",
        options: [OptionSpec("rate", .optionalValue("d"), help: "r", accepts: { parseDuration($0) != nil })],
        positionals: [PositionalSpec("name", help: "n", optional: true)]),
      CommandSpec(
        name: "run", abstract: "r", options: [OptionSpec("exec", .remainder("command"), help: "x")],
        positionals: [PositionalSpec("name", help: "n")]),
    ])

  @Test("a word the optional value refuses is its invalid value, unless the command takes a positional")
  func optionalValueWord() throws {
    let error = try #require(throws: UsageError.self) {
      try parseCommandLine(["history", "--hours", "0"], root: Self.spec)
    }
    #expect(error.message == "invalid value '0' for '--hours <n>': expected a number from 1 to 168")
    #expect(try parseCommandLine(["history", "--hours", "5"], root: Self.spec).value("hours") == "5")
    #expect(try parseCommandLine(["history", "--hours"], root: Self.spec).value("hours") == "")
    let show = try parseCommandLine(["show", "--rate", "wg0"], root: Self.spec)
    #expect(show.value("rate") == "" && show.positionals == ["wg0"])
  }

  @Test("a remainder keeps its words' exact bytes (inline, after --, not UTF-8); options stay text")
  func remainderBytes() throws {
    let raw: [[UInt8]] = [
      Array("run".utf8), [0x77, 0xFF], Array("--exec".utf8), Array("--".utf8), Array("/bin/x".utf8), [0xFF, 0xFE],
      Array("a\\xffb".utf8), Array("é".utf8),
    ]
    let parsed = try parseCommandLine(rawArguments: raw, root: Self.spec)
    #expect(parsed.positionals == ["w\\xff"])
    #expect(parsed.remainderBytes["exec"] == Array(raw[4...]))
    #expect(parsed.all("exec") == ["/bin/x", "\\xff\\xfe", "a\\xffb", "é"])
    let inline = try parseCommandLine(
      rawArguments: [Array("run".utf8), Array("wg0".utf8), Array("--exec=/bin/".utf8) + [0xE9], [0x80]],
      root: Self.spec)
    #expect(inline.remainderBytes["exec"] == [Array("/bin/".utf8) + [0xE9], [0x80]])
  }

  // MARK: - counts

  @Test("history counts: 0 names the option, beyond what is kept is refused at once, the bounds are in --help")
  func historyCounts() throws {
    let directory = try TemporaryDirectory("hcount")
    let db = directory.file("v.db")
    let recorded = try Self.vpnstat(["record", "--count", "2", "--interval", "50ms", "--db", db])
    #expect(recorded.status == 0, "\(recorded.errors)")
    let zero = try Self.vpnstat(["history", "--hours", "0", "--db", db])
    #expect(zero.status == 64)
    #expect(zero.errors.contains("invalid value '0' for '--hours"), "\(zero.errors)")
    let help = try Self.vpnstat(["history", "--help"]).output
    let views: [(String, TrafficGranularity)] = [
      ("five-minutes", .fiveMinutes), ("hours", .hour), ("days", .day), ("months", .month),
    ]
    for (option, granularity) in views {
      let most = granularity.retainedBuckets
      #expect(help.contains("1 to \(most)"), "--\(option) documents its bound")
      let largest = try Self.vpnstat(["history", "--\(option)", "\(most)", "--json", "--db", db])
      #expect(largest.status == 0, "--\(option) \(most): \(largest.errors)")
      // These spun forever, allocated gigabytes or aborted.
      for value in ["\(most + 1)", "9223372036854775807", "2000000000", "99999999999999999999"] {
        let started = Date()
        let result = try Self.vpnstat(["history", "--\(option)", value, "--json", "--db", db], timeout: 5)
        #expect(result.status == 64, "--\(option) \(value): \(result.status) \(result.errors)")
        #expect(result.errors.contains("expected a number from 1 to \(most)"), "\(result.errors)")
        #expect(Date().timeIntervalSince(started) < 2)
      }
    }
  }

  @Test("the first of the last N buckets is one step back, for any N, and N−1 steps forward reach now")
  func startOfLast() {
    let now = Timestamp(seconds: 1_796_000_000)
    for granularity in TrafficGranularity.allCases {
      for count in [1, 2, 3, 13, 30, granularity.retainedBuckets] {
        var start = granularity.start(ofLast: count, at: now, in: SystemCalendar())
        for _ in 1..<count { start = granularity.next(after: start, in: SystemCalendar()) }
        #expect(start == granularity.start(of: now, in: SystemCalendar()), "\(granularity) \(count)")
      }
      // Any count ends at the epoch at worst, at once.
      #expect(granularity.start(ofLast: Int.max, at: now, in: SystemCalendar()) == 0)
    }
  }

  @Test("history is made from the buckets there are, not one row per requested bucket")
  func historyWithoutRowPerRequest() {
    let now = Timestamp(seconds: 1_796_000_000)
    let granularity = TrafficGranularity.day
    var start = granularity.start(of: now, in: SystemCalendar())
    for _ in 0..<2 { start = granularity.start(of: Timestamp(seconds: start - 1), in: SystemCalendar()) }
    let bucket = TrafficBucket(
      name: InterfaceName("wg0"), start: start, interfaceClass: .tunnel,
      traffic: TrafficCounts(rxBytes: 5, txBytes: 7, rxPackets: 1, txPackets: 1))
    let clock = ContinuousClock()
    let began = clock.now
    let history = TrafficHistory.make(
      buckets: [bucket], granularity: granularity, count: 10_000_000, now: now, grouping: .class,
      selection: InterfaceSelection(), calendar: SystemCalendar())
    #expect(clock.now - began < .milliseconds(500))
    let rows = history.series.first?.rows ?? []
    #expect(rows.count == 3)
    #expect(rows.first?.start == start && rows.first?.traffic.rxBytes == 5)
    #expect(rows.last?.start == granularity.start(of: now, in: SystemCalendar()))
  }

  // MARK: - numbers from files and the kernel

  @Test("a pcapng packet after 2262 is a corrupt file (65), not a trap")
  func pcapngBeyondInt64() throws {
    let directory = try CaptureDirectory()
    var file = CaptureFiles.pcapng(Array(KnownTraffic().packets.prefix(3)), link: .rawIP)
    // The first enhanced packet block's timestamp (after the 28-byte section header and the
    // 20-byte interface block): 0x00210000_00000000 µs ≈ 9.3e18 ns, past Int64's nanoseconds.
    file.replaceSubrange(60..<64, with: [0x00, 0x00, 0x21, 0x00])
    let path = directory.path("late.pcapng")
    try file.write(to: URL(fileURLWithPath: path))
    for extra in [[], ["--interval", "1ms"], ["--json"]] {
      let result = try Self.vpnstat(["flows", "--read", path] + extra)
      #expect(result.status == 65, "\(extra): \(result.status) \(result.errors)")
      #expect(result.errors.contains("packet 1 has a time vpnstat cannot represent"), "\(result.errors)")
    }
  }

  @Test("timestamps out of Int64's range parse as nil")
  func rfc3339Range() {
    #expect(Timestamp(rfc3339: "2262-04-11T23:47:16Z") != nil)
    #expect(Timestamp(rfc3339: "2262-04-11T23:47:17Z") == nil)
    #expect(Timestamp(rfc3339: "9999-12-31T23:59:59.999999999Z") == nil)
    #expect(Timestamp(rfc3339: "0000-01-01T00:00:00Z") == nil)
    #expect(Timestamp(checkedSeconds: .max, nanoseconds: 0) == nil)
  }

  @Test("a counter that jumps by 2^64 − 1 between two samples gives a huge rate, printed, not a trap")
  func hugeRate() throws {
    let tree = try SysfsFixture()
    try tree.add("wg0", index: 7, rx: 0, tx: 0, type: 65534)
    let counter = tree.directory.appendingPathComponent("wg0/statistics/rx_bytes")
    for arguments in [["--json"], [], ["--bytes"]] {
      try Data("0\n".utf8).write(to: counter)
      let child = try ChildProcess(
        Built.vpnstat, ["status", "--rate", "500ms", "--sysfs-root", tree.directory.path] + arguments,
        environment: Self.environment)
      usleep(200_000)
      try Data("18446744073709551615\n".utf8).write(to: counter)
      let status = child.wait(timeout: 10)
      #expect(status == 0, "\(arguments): \(status) \(String(decoding: child.stderrData, as: UTF8.self))")
      if arguments == ["--json"] {
        let object = try JSONSerialization.jsonObject(with: child.stdoutData) as? [String: Any]
        let rate = (object?["interfaces"] as? [[String: Any]])?.first?["rx_bytes_per_second"] as? NSNumber
        #expect((rate?.doubleValue ?? 0) > 1e19, "\(child.output)")
      }
    }
  }

  // MARK: - the configuration file

  static func config(_ text: String, in directory: TemporaryDirectory, mode: mode_t = 0o644) throws -> String {
    let path = directory.file("config")
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    chmod(path, mode)
    return path
  }

  /// `vpnstat session --json` with the configuration file at `path`: the lengths it applied.
  static func lengths(config path: String, db: String) throws -> (CommandResult, Int?, Int?) {
    let result = try vpnstat(["session", "--json", "--db", db], environment: ["VPNSTAT_CONFIG": path])
    let object = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
    let session = object?["session"] as? [String: Any]
    return (
      result, (session?["next_session_length_seconds"] as? NSNumber)?.intValue,
      (session?["next_pause_length_seconds"] as? NSNumber)?.intValue
    )
  }

  @Test("config lines end in LF, CRLF or CR alike (CRLF was one long line, silently)", arguments: ["\n", "\r\n", "\r"])
  func configLineEndings(ending: String) throws {
    let directory = try TemporaryDirectory("cfgeol")
    let path = try Self.config(
      ["# lengths", "session-length = 7m", "pause-length = 11m", ""].joined(separator: ending), in: directory)
    let (result, session, pause) = try Self.lengths(config: path, db: directory.file("v.db"))
    #expect(result.status == 0, "\(result.errors)")
    #expect(session == 420 && pause == 660, "\(result.output)")
  }

  @Test("a config file over 1 MiB is refused, not cut (a cut line read as 1 s sessions)")
  func configTooLarge() throws {
    let directory = try TemporaryDirectory("cfgbig")
    // One long comment, so that the first MiB ends right after "session-length = 1".
    let filler = "#" + String(repeating: "x", count: (1 << 20) - 20) + "\n"
    #expect(filler.utf8.count + "session-length = 1".utf8.count == 1 << 20)
    let path = try Self.config(filler + "session-length = 15m\n", in: directory)
    let (result, _, _) = try Self.lengths(config: path, db: directory.file("v.db"))
    #expect(result.status == 64, "\(result.output)")
    #expect(result.errors.contains("larger than 1 MiB"), "\(result.errors)")
  }

  @Test(
    "every config error names file:line",
    arguments: [
      ("max-rate = 10Gbit\nsession-length = soon\n", ":2: invalid value 'soon' for 'session-length'"),
      ("# c\n\nclass = wg0\n", ":3: invalid value 'wg0' for 'class'"),
      ("class = wg0=satellite\n", ":1: invalid value 'wg0=satellite' for 'class'"),
      ("exec-timeout = 0.0000001\n", ":1: invalid value '0.0000001' for 'exec-timeout'"),
      ("source=proc\r\n", ":1: invalid value 'proc' for 'source'"),
      ("db = /tmp/x\njunk\n", ":2: expected 'name = value'"),
      ("colour = yes\n", ":1: unknown setting 'colour'"),
    ])
  func configErrorsNameTheLine(text: String, fragment: String) throws {
    let directory = try TemporaryDirectory("cfgline")
    let path = try Self.config(text, in: directory)
    // enforce reads exec-timeout; status reads the rest. Both reject before doing anything.
    let command = text.hasPrefix("exec-timeout") ? ["enforce", "vpnstat-none0"] : ["status"]
    let result = try Self.vpnstat(command + ["--db", directory.file("v.db")], environment: ["VPNSTAT_CONFIG": path])
    #expect(result.status == 64, "\(result.errors)")
    #expect(result.errors.contains(path + fragment), "\(result.errors)")
  }

  @Test(
    "a config file others may write is refused with 77, as sudo refuses such a sudoers; so is one in a directory others may write"
  )
  func configWorldWritable() throws {
    let directory = try TemporaryDirectory("cfgww")
    let path = try Self.config("session-length = 7m\n", in: directory, mode: 0o666)
    let (result, _, _) = try Self.lengths(config: path, db: directory.file("v.db"))
    #expect(result.status == 77)
    #expect(result.errors.contains("\(path) is writable by other users (mode 0666)"), "\(result.errors)")
    // Writable by a group other than root's (root's group is root's).
    if chown(path, getuid(), 65534) == 0 {
      chmod(path, 0o664)
      #expect(try Self.lengths(config: path, db: directory.file("v.db")).0.status == 77, "group-writable")
      chown(path, getuid(), getgid())
    }
    chmod(path, 0o644)
    #expect(try Self.lengths(config: path, db: directory.file("v.db")).1 == 420)
    chmod(directory.path, 0o777)
    defer { chmod(directory.path, 0o700) }
    let inOpen = try Self.lengths(config: path, db: directory.file("v.db")).0
    #expect(inOpen.status == 77)
    #expect(inOpen.errors.contains("\(directory.path) is writable by other users (mode 0777)"), "\(inOpen.errors)")
  }

  @Test(
    "a config file owned by someone other than root or the user is refused",
    .enabled(if: Privilege.isRoot, "needs root to give a file to another user"))
  func configForeignOwner() throws {
    let directory = try TemporaryDirectory("cfgown")
    let path = try Self.config("session-length = 7m\n", in: directory)
    chown(path, 65534, 65534)
    let (result, _, _) = try Self.lengths(config: path, db: directory.file("v.db"))
    #expect(result.status == 77)
    #expect(result.errors.contains("\(path) belongs to uid 65534, not to root or to this user"), "\(result.errors)")
  }

  @Test(
    "a FIFO as the configuration file is refused within 1 s (77, saying it is not a regular file), never waited on"
  )
  func configFIFO() throws {
    let directory = try TemporaryDirectory("cfgfifo")
    let path = directory.file("config")
    try #require(mkfifo(path, 0o644) == 0, "mkfifo: \(String(cString: strerror(errno)))")
    for arguments in [["status", "--json"], ["session", "check"], ["session", "--json"]] {
      let started = Date()
      let result = try Self.vpnstat(
        arguments + ["--db", directory.file("v.db")], environment: ["VPNSTAT_CONFIG": path], timeout: 5)
      #expect(Date().timeIntervalSince(started) < 1, "\(arguments) took \(Date().timeIntervalSince(started)) s")
      #expect(result.status == 77, "\(arguments): \(result.status) \(result.errors)")
      #expect(result.errors.contains("\(path) is a FIFO, not a regular file"), "\(arguments): \(result.errors)")
    }
  }

  // MARK: - sysfs files that are not files

  @Test(
    "a FIFO as a sysfs counter or fact: status, report and export end within 1 s saying which file is not a regular file",
    arguments: ["statistics/rx_bytes", "statistics/tx_packets", "ifindex", "uevent", "type", "operstate"])
  func sysfsFIFO(attribute: String) throws {
    let tree = try SysfsFixture()
    try tree.add("wg0", index: 7, type: 65534)
    try tree.add("tun3", index: 8, rx: 5000, tx: 6000, type: 65534)
    let fifo = tree.directory.appendingPathComponent("wg0/" + attribute).path
    try FileManager.default.removeItem(atPath: fifo)
    try #require(mkfifo(fifo, 0o644) == 0, "mkfifo: \(String(cString: strerror(errno)))")
    let directory = try TemporaryDirectory("sysfifo")
    let db = directory.file("v.db")
    for arguments in [
      ["status"], ["status", "--json"], ["report", "--db", db], ["export", "--db", db],
      ["status", "--source", "sysfs"],
    ] {
      let started = Date()
      let result = try Self.vpnstat(arguments + ["--sysfs-root", tree.directory.path], timeout: 5)
      let took = Date().timeIntervalSince(started)
      #expect(took < 1, "\(arguments) took \(took) s")
      // The other interface is still read and shown; the broken one is said, not hidden.
      #expect([0, 69].contains(result.status), "\(arguments): \(result.status) \(result.errors)")
      #expect(result.output.contains("tun3"), "\(arguments): \(result.output)")
      // A counter that cannot be read is said: status in its table or JSON, the others on stderr.
      if ["statistics/rx_bytes", "statistics/tx_packets"].contains(attribute) {
        let said = arguments.first == "status" ? result.output : result.errors
        #expect(said.contains("wg0/\(attribute) is a FIFO, not a regular file"), "\(arguments): \(said)")
      }
    }
  }

  // MARK: - interface names

  @Test("the kernel's rule for names, in one place")
  func kernelNameRule() {
    for good in ["wg0", "a", "fifteen-bytes-x", "e\u{1B}[2Jv", "q\"\\x", "a.b", "...", "天気"] {
      #expect(InterfaceName(good).kernelProblem == nil, "\(good)")
    }
    #expect(InterfaceName(bytes: [0x62, 0xFF, 0x1C]).kernelProblem == nil)
    let bad: [[UInt8]] = [
      [], Array("sixteen-bytes-xx".utf8), Array(".".utf8), Array("..".utf8), Array("a/b".utf8),
      Array("a:b".utf8), Array("a b".utf8), Array("a\tb".utf8), Array("a\nb".utf8), [0x61, 0x0B], [0x61, 0x0C],
      [0x61, 0x0D], [0x61, 0xA0], [0x61, 0x00],
    ]
    for bytes in bad {
      #expect(InterfaceName(bytes: bytes).kernelProblem != nil, "\(bytes)")
    }
  }

  @Test(
    "enforce refuses a name holding a control character with 64, as connect and disconnect do (one rule for the three)",
    arguments: ["a\u{01}b", "a\u{7F}b", "a\u{1B}b", "a\u{1B}[2Jv"])
  func enforceRefusesControlCharacters(name: String) throws {
    let directory = try TemporaryDirectory("enfctl")
    for command in [["enforce"], ["connect"], ["disconnect"]] {
      let result = try Self.vpnstat(command + ["--db", directory.file("v.db"), "--", name], timeout: 5)
      #expect(result.status == 64, "\(command) '\(name.debugDescription)': \(result.status) \(result.errors)")
      #expect(result.errors.contains("holds a control character; write such a byte as \\xHH"), "\(result.errors)")
    }
  }

  @Test("enforce refuses a name no interface can have, with 64, instead of waiting forever")
  func enforceRefusesImpossibleNames() throws {
    let directory = try TemporaryDirectory("enfname")
    for name in ["a b", "a:b", "a\\xa0b", ".", "..", "", "sixteen-bytes-xx", "a/b", "a\\x0bb"] {
      let result = try Self.vpnstat(["enforce", "--db", directory.file("v.db"), "--", name], timeout: 5)
      #expect(result.status == 64, "'\(name)': \(result.status) \(result.errors)")
      #expect(result.errors.contains("invalid interface name"), "\(result.errors)")
    }
  }
}
