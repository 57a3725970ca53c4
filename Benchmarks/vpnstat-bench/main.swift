// vpnstat-bench: measures vpnstat's counter readers and its `status --json` command against
// peers measured in the same run (a C floor, `ip -s -j link`), in network namespaces it makes
// with N ifb devices, and prints medians and ratios. Speed is measured here, never asserted.
//
// The outer run (root namespace) makes and deletes the namespaces and times start-up. Everything
// that must happen inside a namespace runs in an inner run: this executable again, started with
// `ip netns exec NS <self> --inner-… N`. That was chosen over setns() + unshare(CLONE_NEWNS) +
// remounting /sys in-process: `ip netns exec` does exactly that setup (the namespace's own /sys,
// which the sysfs reader and vpnstat's sysfs facts for `lo` need) with no mount code in the
// bench; each N starts from a fresh process, with no link table, allocator or cache state left
// from the previous N; and the outer process never changes namespace, so its cleanup runs where
// the namespaces were made. The inner run's start costs one `ip netns exec`, outside every timed
// loop; it prints one line per measurement for the outer run to parse.

#if canImport(Glibc)
  import Glibc
#endif

/// What the command line asked for.
struct BenchOptions {
  enum Part: String, CaseIterable {
    case readers
    case status
    case startup
    case ledger
    case enforce
    case watch
    case record
    case flows
    case reports
    case metrics
    case wireguard
  }

  var quick = false
  var sizes = [10, 100, 1000]
  var parts = Set(Part.allCases)
  var vpnstat: String?
  var alternative: String?
  var ip: String?
  /// Set in an inner run: which part, for how many ifb devices.
  var inner: (part: Part, ifbCount: Int)?
  /// Set in the record part's traffic process: how many ifb devices to send through.
  var mover: Int?
  /// `--inner-flood RATE`: the live-capture row's sender (`FlowBenchmark.flood`).
  var flood: Int?
  /// Set in a process of the enforce part's crowd: how many descriptors to hold open.
  var holdDescriptors: Int?

  static let usage = """
    usage: vpnstat-bench [--quick] [--sizes 10,100,1000]
                         [--only readers|status|startup|ledger|enforce|watch|record|flows|reports|metrics|
                                 wireguard[,…]]
                         [--vpnstat PATH] [--alt-vpnstat PATH]

      --quick            fewer repetitions (under 30 s in all) for a first look
      --sizes LIST       ifb device counts, one namespace each (every namespace also has lo)
      --only PARTS       readers: in-process cost of one sample per reader, beside a C floor,
                                  and of each stage of status --json
                         status:  wall time of vpnstat status --json beside ip -s -j link,
                                  netlink-floor (the same dump in C) and sqlite-floor (that
                                  dump and the reads of status --db through SQLite, in C)
                         startup: vpnstat --version beside /bin/true and ip -V
                         ledger:  one ledger advance for 1000 interfaces; database size
                                  after a simulated year for 20 interfaces
                         enforce: session deadline → tunnel down and an up in the pause →
                                  down again, with 0, 300 and 1000 other processes, beside
                                  ip monitor | ip link set down
                         watch:   CPU and memory of watch with the largest size's interfaces
                         record:  bytes written per minute and CPU of record --interval 1s with
                                  every counter moving, beside vnstatd saving every minute,
                                  netlink-floor --every-second, sqlite-floor --record and
                                  watch --db, at the smallest and the largest size (4 min each;
                                  65 s with --quick)
                         flows:   packets per second of the offline flow parser, beside
                                  libpcap's own read; flows --read beside tcpdump -r;
                                  a live capture of 200 000 packets/s across a veth
                                  between two namespaces, and what the kernel dropped
                         reports: history's reports, charts and alert on a simulated year,
                                  beside history --json
                         metrics: one scrape of record --listen with the largest size's
                                  interfaces, beside vpnstat export
                         wireguard: one wireguard-go tunnel read by vpnstat (in-process
                                  and status --json) beside wg show NAME dump
      --vpnstat PATH     the vpnstat binary to time (default: the one next to this executable)
      --alt-vpnstat PATH a second vpnstat build timed beside it, e.g. an older release

    Needs root (it makes network namespaces). Run it as swift run -c release vpnstat-bench,
    which builds the vpnstat binary it times too.

    """

  static func parse(_ arguments: [String]) throws -> BenchOptions {
    var options = BenchOptions()
    var rest = arguments[...]
    func value(_ flag: String) throws -> String {
      guard let next = rest.popFirst() else { throw BenchError("\(flag) needs a value") }
      return next
    }
    func count(_ text: String) throws -> Int {
      guard let n = Int(text), n >= 0, n <= 5000 else {
        throw BenchError("'\(text)' is not a device count from 0 to 5000")
      }
      return n
    }
    while let argument = rest.popFirst() {
      switch argument {
      case "--quick": options.quick = true
      case "--sizes":
        options.sizes = try value(argument).split(separator: ",").map { try count(String($0)) }
        guard !options.sizes.isEmpty else { throw BenchError("--sizes needs at least one count") }
        options.sizes = Array(Set(options.sizes)).sorted()
      case "--only":
        options.parts = []
        for word in try value(argument).split(separator: ",") {
          guard let part = Part(rawValue: String(word)) else {
            throw BenchError("--only takes \(Part.allCases.map(\.rawValue).joined(separator: ", ")), not '\(word)'")
          }
          options.parts.insert(part)
        }
      case "--vpnstat": options.vpnstat = try value(argument)
      case "--alt-vpnstat": options.alternative = try value(argument)
      case "--ip": options.ip = try value(argument)
      case "--inner-readers": options.inner = (.readers, try count(try value(argument)))
      case "--inner-status": options.inner = (.status, try count(try value(argument)))
      case "--inner-enforce": options.inner = (.enforce, try count(try value(argument)))
      case "--inner-watch": options.inner = (.watch, try count(try value(argument)))
      case "--inner-record": options.inner = (.record, try count(try value(argument)))
      case "--inner-mover": options.mover = try count(try value(argument))
      case "--inner-flood":
        let text = try value(argument)
        guard let rate = Int(text), rate > 0, rate <= 10_000_000 else { throw BenchError("'\(text)' is not a rate") }
        options.flood = rate
      case "--inner-hold-fds":
        let text = try value(argument)
        guard let n = Int(text), n > 0, n <= 1 << 20 else { throw BenchError("'\(text)' is not a descriptor count") }
        options.holdDescriptors = n
      case "--inner-metrics": options.inner = (.metrics, try count(try value(argument)))
      case "--inner-wireguard": options.inner = (.wireguard, try count(try value(argument)))
      case "-h", "--help":
        print(usage, terminator: "")
        exit(0)
      default: throw BenchError("unknown argument '\(argument)'\n\(usage)")
      }
    }
    return options
  }

  /// The arguments an inner run gets: the same binaries and pace as this run.
  func innerArguments(_ part: Part, ifbCount: Int, ip: String, vpnstat: String) -> [String] {
    var arguments = [
      "--inner-\(part.rawValue)", String(ifbCount), "--ip", ip, "--vpnstat", vpnstat,
    ]
    if quick { arguments.append("--quick") }
    if let alternative { arguments += ["--alt-vpnstat", alternative] }
    return arguments
  }
}

/// The inner run: measures one part inside the namespace it was started in and prints the
/// results as `Measurement` lines on stdout for the outer run.
func runInner(_ options: BenchOptions, part: BenchOptions.Part, ifbCount: Int) -> Int32 {
  do {
    let results: [Measurement]
    switch part {
    case .readers:
      results =
        try ReaderBenchmark.run(ifbCount: ifbCount, quick: options.quick)
        + PipelineBenchmark.run(ifbCount: ifbCount, quick: options.quick)
    case .status:
      guard let ip = options.ip, let vpnstat = options.vpnstat else {
        throw BenchError("inner run without --ip/--vpnstat")
      }
      results = try CommandBenchmark.status(
        ifbCount: ifbCount, quick: options.quick, ip: ip, vpnstat: vpnstat,
        alternative: options.alternative)
    case .enforce, .watch, .metrics, .wireguard:
      guard let ip = options.ip, let vpnstat = options.vpnstat else {
        throw BenchError("inner run without --ip/--vpnstat")
      }
      let notes: [String]
      switch part {
      case .enforce:
        notes = try EnforceBenchmark.runInner(
          vpnstat: vpnstat, alternative: options.alternative, ip: ip, quick: options.quick)
      case .watch: notes = try WatchBenchmark.runInner(vpnstat: vpnstat, ifbCount: ifbCount, quick: options.quick)
      case .metrics: notes = try MetricsBenchmark.runInner(vpnstat: vpnstat, ifbCount: ifbCount, quick: options.quick)
      default: notes = try WireGuardBenchmark.runInner(vpnstat: vpnstat, ip: ip, quick: options.quick)
      }
      for note in notes { print("note: " + note) }
      return 0
    case .record:
      guard let ip = options.ip, let vpnstat = options.vpnstat else {
        throw BenchError("inner run without --ip/--vpnstat")
      }
      let notes = try RecordBenchmark.runInner(
        vpnstat: vpnstat, alternative: options.alternative, ip: ip, ifbCount: ifbCount, quick: options.quick)
      for note in notes { print("note: " + note) }
      return 0
    case .startup, .ledger, .flows, .reports:
      throw BenchError("\(part.rawValue) is measured by the outer run")
    }
    for result in results { print(result.line) }
    return 0
  } catch {
    warn("inner \(part.rawValue) run, N=\(ifbCount): \(error)")
    return 1
  }
}

/// The outer run: namespaces, inner runs, start-up, the summary. Returns the exit status;
/// every namespace it made is deleted before it returns, whatever happened.
func runOuter(_ givenOptions: BenchOptions) -> Int32 {
  var options = givenOptions
  guard getuid() == 0 else {
    warn("needs root: it makes network namespaces (run it as root, e.g. with sudo)")
    return 77
  }
  guard let ip = options.ip ?? findExecutable("ip") else {
    warn("cannot find ip (iproute2)")
    return 69
  }
  let own = ownExecutablePath()
  let built =
    options.vpnstat
    ?? (own.split(separator: "/", omittingEmptySubsequences: false).dropLast()
      .joined(separator: "/") + "/vpnstat")
  for binary in [built] + (options.alternative.map { [$0] } ?? []) where access(binary, X_OK) != 0 {
    warn("no executable vpnstat at \(binary): build it first with 'swift build -c release'")
    return 69
  }
  // Each binary is timed as a copy, written the way a package installs it. The linker writes its
  // output so that the page cache holds it in small folios, and a program run from that file
  // faults its code in page by page: `status --json` at 4 interfaces faulted 147 times run from
  // the linker's file and 135 from a copy of the same bytes, and took 0.2–0.4 ms longer. Timing
  // the linker's file also made a build look slower than a copied older one.
  let copies: String
  let vpnstat: String
  do {
    copies = try StoreBenchmark.temporaryDirectory()
    vpnstat = try installedCopy(of: built, in: copies, named: "vpnstat")
    options.alternative = try options.alternative.map { try installedCopy(of: $0, in: copies, named: "alt-vpnstat") }
  } catch {
    warn("\(error)")
    return 1
  }
  defer { StoreBenchmark.removeTree(copies) }
  Interruption.install()
  BenchNamespace.removeStale(ip: ip)
  let keeper = NamespaceKeeper(ip: ip)
  defer { keeper.destroyAll() }

  var results: [Measurement] = []
  do {
    print(try header(givenOptions, ip: ip, vpnstat: built))
    if options.parts.contains(.startup) {
      progress("start-up: /bin/true, ip -V, vpnstat --version")
      results += try CommandBenchmark.startup(
        quick: options.quick, ip: ip, vpnstat: vpnstat, alternative: options.alternative)
    }
    for n in options.sizes where options.parts.contains(.readers) || options.parts.contains(.status) {
      let started = monotonicNanoseconds()
      progress("N=\(n): making namespace with lo and \(n) ifb devices")
      let namespace = try keeper.create(ifbCount: n)
      for part in [BenchOptions.Part.readers, .status] where options.parts.contains(part) {
        progress("N=\(n): \(part.rawValue)")
        let command = PreparedCommand(
          label: "inner", path: ip,
          arguments: ["netns", "exec", namespace.name, own]
            + options.innerArguments(part, ifbCount: n, ip: ip, vpnstat: vpnstat))
        let run = try runCapturing(command)
        let lines = String(decoding: run.output, as: UTF8.self).split(separator: "\n")
        let parsed = lines.compactMap(Measurement.init(line:))
        guard run.exit.succeeded, !parsed.isEmpty else {
          throw BenchError("the inner \(part.rawValue) run for N=\(n) failed (\(run.exit))")
        }
        results += parsed
      }
      keeper.destroy(namespace)
      progress("N=\(n): done in \(formatDuration(Double(monotonicNanoseconds() - started)))")
    }
    var notes: [String] = []
    if options.parts.contains(.ledger) {
      progress("ledger: advances and a simulated year")
      notes += try StoreBenchmark.run(quick: options.quick)
    }
    if options.parts.contains(.reports) {
      progress("reports: a simulated year, history and alert")
      notes += try ReportBenchmark.run(vpnstat: vpnstat, quick: options.quick)
    }
    var longRunning = [
      (BenchOptions.Part.enforce, 0), (.watch, options.sizes.max() ?? 1000), (.metrics, options.sizes.max() ?? 1000),
      (.wireguard, 0),
    ]
    for size in Set([options.sizes.min() ?? 4, options.sizes.max() ?? 1000]).sorted() {
      longRunning.append((.record, size))
    }
    for (part, size) in longRunning where options.parts.contains(part) {
      progress("\(part.rawValue): namespace with \(size) ifb devices")
      let namespace = try keeper.create(ifbCount: size)
      let run = try runCapturing(
        PreparedCommand(
          label: "inner", path: ip,
          arguments: ["netns", "exec", namespace.name, own]
            + options.innerArguments(part, ifbCount: size, ip: ip, vpnstat: vpnstat)))
      keeper.destroy(namespace)
      let lines = String(decoding: run.output, as: UTF8.self).split(separator: "\n")
      let found = lines.filter { $0.hasPrefix("note: ") }.map { String($0.dropFirst(6)) }
      guard run.exit.succeeded, !found.isEmpty else {
        throw BenchError("the inner \(part.rawValue) run failed (\(run.exit))")
      }
      notes += found
    }
    if options.parts.contains(.flows) {
      progress("flows: offline parser")
      notes += FlowBenchmark.run(vpnstat: vpnstat, alternative: options.alternative)
      progress("flows: live capture on a veth")
      notes += try FlowBenchmark.live(vpnstat: vpnstat, ip: ip, keeper: keeper)
    }
    print(Summary.render(results), terminator: "")
    if !notes.isEmpty { print("\n" + notes.joined(separator: "\n")) }
    return 0
  } catch let interruption as Interruption {
    warn("\(interruption); deleting the namespaces made so far")
    return 128 + interruption.signal
  } catch {
    warn("\(error)")
    return 1
  }
}

/// A copy of `binary` in `directory`, written by cp as a package manager writes what it installs.
func installedCopy(of binary: String, in directory: String, named name: String) throws -> String {
  let copy = directory + "/" + name
  let run = try runCapturing(PreparedCommand(label: "", path: "/bin/cp", arguments: [binary, copy]))
  guard run.exit.succeeded else { throw BenchError("cannot copy \(binary) to \(copy): \(run.exit)") }
  return copy
}

/// What was measured on what: enough to tell two runs' conditions apart.
func header(_ options: BenchOptions, ip: String, vpnstat: String) throws -> String {
  var system = utsname()
  uname(&system)
  let kernel = withUnsafeBytes(of: system.release) {
    String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
  }
  var load = [Double](repeating: 0, count: 3)
  _ = getloadavg(&load, 3)
  func firstLine(_ command: PreparedCommand) -> String {
    guard let run = try? runCapturing(command) else { return "?" }
    return String(decoding: run.output, as: UTF8.self).split(separator: "\n").first.map(String.init)
      ?? "?"
  }
  var lines = [
    "vpnstat-bench\(options.quick ? " (quick)" : "")",
    "  kernel \(kernel), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores, load average "
      + load.map { fixed($0, 2) }.joined(separator: " "),
    "  vpnstat: \(vpnstat) (\(firstLine(PreparedCommand(label: "", path: vpnstat, arguments: ["--version"])))"
      + ", \(swiftRuntimeLinking(vpnstat)))",
    "  ip: \(ip) (\(firstLine(PreparedCommand(label: "", path: ip, arguments: ["-V"]))))",
  ]
  if let alternative = options.alternative {
    lines.append("  alt vpnstat: \(alternative) (\(swiftRuntimeLinking(alternative)))")
  }
  lines.append("  (each timed as a copy written like an install, not the linker's own file)")
  if options.parts.contains(.readers) || options.parts.contains(.status) {
    lines.append(
      "  sizes: \(options.sizes.map(String.init).joined(separator: ", ")) ifb devices (+ lo)")
  }
  return lines.joined(separator: "\n")
}

/// Whether a binary loads the Swift runtime as shared libraries: found by looking for the
/// DT_NEEDED name in the file, which a `-static-stdlib` binary does not carry.
func swiftRuntimeLinking(_ path: String) -> String {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return "unreadable" }
  defer { close(fd) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 1 << 16)
  while true {
    let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if count <= 0 { break }
    bytes += chunk[0..<count]
  }
  let needle = Array("libswiftCore.so".utf8)
  let found = bytes.indices.dropLast(needle.count).contains { i in
    bytes[i] == needle[0] && bytes[i..<(i + needle.count)].elementsEqual(needle)
  }
  return found ? "Swift runtime linked dynamically" : "Swift runtime linked statically"
}

/// A progress line on stderr, so stdout holds only the report.
func progress(_ text: String) {
  var line = "… " + text + "\n"
  line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

let options: BenchOptions
do {
  options = try BenchOptions.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
  warn("\(error)")
  exit(64)
}
if let count = options.mover { exit(RecordBenchmark.move(ifbCount: count)) }
if let rate = options.flood { exit(FlowBenchmark.flood(rate: rate)) }
if let count = options.holdDescriptors { exit(Crowd.hold(descriptors: count)) }
if let inner = options.inner {
  exit(runInner(options, part: inner.part, ifbCount: inner.ifbCount))
}
exit(runOuter(options))
