import CNetlinkFloor
import VPNStatSystem

#if canImport(Glibc)
  import Glibc
#endif

/// What a recorder costs when it runs for good: bytes written per minute and CPU, with every
/// interface's counters moving, beside vnstatd (saving every minute) and a reader (`watch
/// --db`), all running at once in one namespace, each with a database of its own on disk.
/// The storage figure is `write_bytes` from /proc/PID/io (pages the process dirtied, which the
/// machine's load does not change); `wchar` is what it passed to write calls.
enum RecordBenchmark {
  /// One process under measurement.
  struct Subject {
    let label: String
    let pid: pid_t
    /// The targets it is judged against (issue 14), or nil for a peer.
    let judged: Bool
    /// Whether its CPU includes the children it waits for (a shell loop's commands).
    var withChildren = false
  }

  /// The anchors issue 22 gave its recorder and `watch` rows, and its targets for them: a share
  /// of the anchor's CPU in the same run, which a slower or faster machine leaves as it is.
  static let ipLoop = "ip -s -j link every second (a shell loop; issue 22's anchor for watch)"
  static let recorderFloor = "C floor: netlink-floor --every-second (the recorder's dump, nothing else)"
  /// The same dump with the recorder's storage work: its save every minute through SQLite.
  static let recorderSavingFloor = "C floor with the saves: sqlite-floor --record (that dump, and each minute's save)"
  /// The recorder: 0.2 % of a core where vnstatd took 3.5 %.
  static let recorderShareOfVnstatd = 0.2 / 3.5
  /// `watch --db`: 0.3 % of a core where the `ip` loop took 1.48 %.
  static let watchShareOfIPLoop = 0.3 / 1.48

  static func runInner(
    vpnstat: String, alternative: String?, ip: String, ifbCount: Int, quick: Bool
  ) throws -> [String] {
    var batch = ""
    for i in 0..<ifbCount { batch += "link set ifb\(i) up\n" }
    let up = try runCapturing(
      PreparedCommand(label: "", path: ip, arguments: ["-batch", "-"]), input: Array(batch.utf8))
    guard up.exit.succeeded else { throw BenchError("cannot set the ifb devices up (\(up.exit))") }
    let devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)
    defer { close(devnull) }
    let mover = try PreparedCommand(
      label: "", path: ownExecutablePath(), arguments: ["--inner-mover", String(ifbCount)]
    ).spawn(stdout: devnull)
    var running: [pid_t] = [mover]
    defer {
      for pid in running.reversed() {
        kill(pid, SIGTERM)
        _ = try? waitForExit(pid)
      }
    }
    let directory = try diskDirectory()
    defer { StoreBenchmark.removeTree(directory) }
    var notes: [String] = []
    var subjects: [Subject] = []
    var sessions: [TerminalSession] = []
    defer { for session in sessions { session.end() } }
    func start(_ label: String, _ path: String, _ arguments: [String], judged: Bool, withChildren: Bool = false) throws
    {
      let pid = try PreparedCommand(label: label, path: path, arguments: arguments).spawn(
        stdout: devnull, stderr: devnull)
      running.append(pid)
      subjects.append(Subject(label: label, pid: pid, judged: judged, withChildren: withChildren))
    }
    let db = directory + "/record.db"
    // As the shipped unit runs it: what it publishes each save goes to its RuntimeDirectory=, on
    // tmpfs (/run in a booted system; /dev/shm here, where /run may be on disk).
    var template = Array("/dev/shm/vpnstat-bench-run.XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw BenchError("cannot make a directory in /dev/shm") }
    let runtime = String(cString: made)
    defer { StoreBenchmark.removeTree(runtime) }
    let env = "/usr/bin/env"
    try start(
      "vpnstat record --interval 1s", env,
      ["RUNTIME_DIRECTORY=" + runtime, vpnstat, "record", "--interval", "1s", "--db", db],
      judged: true)
    if let alternative {
      // Half a second after it: two recorders sampling in the same instant contend in the kernel,
      // and the one that comes second each second paid for it (side by side for 120 s, the one
      // started first used 124 ms of CPU and the other 142–158 ms, whichever build it was).
      usleep(500_000)
      try start(
        "alt vpnstat record --interval 1s", env,
        ["RUNTIME_DIRECTORY=" + runtime, alternative, "record", "--interval", "1s", "--db", directory + "/alt.db"],
        judged: false)
    }
    if let vnstatd = findExecutable("vnstatd") {
      let config = directory + "/vnstat.conf"
      let text = """
        DatabaseDir "\(directory)/vnstat"
        SaveInterval 1
        AlwaysAddNewInterfaces 1
        UseLogging 0
        PidFile "\(directory)/vnstat.pid"
        DaemonUser ""
        DaemonGroup ""

        """
      mkdir(directory + "/vnstat", 0o755)
      let fd = open(config, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
      guard fd >= 0 else { throw BenchError("cannot write \(config)") }
      _ = text.utf8CString.withUnsafeBufferPointer { write(fd, $0.baseAddress, $0.count - 1) }
      close(fd)
      try start(
        "vnstatd (SaveInterval 1 min, UpdateInterval 20 s)", vnstatd, ["-n", "--config", config, "--alwaysadd"],
        judged: false)
    } else {
      notes.append("  vnstatd is missing (install the vnstat package): not measured")
    }
    let floor = netlinkFloorPath()
    if access(floor, X_OK) == 0 {
      try start(recorderFloor, floor, ["--every-second"], judged: false)
    } else {
      notes.append("  netlink-floor is not beside vpnstat-bench (build the package's products): no C floor")
    }
    // On a database of its own that vpnstat made (the schema, a row for every interface), with
    // its published file on the same tmpfs; a quarter of a second after the others' dumps.
    let savingFloor = sqliteFloorPath()
    if access(savingFloor, X_OK) == 0 {
      let floorDatabase = directory + "/floor.db"
      let made = try runCapturing(
        PreparedCommand(label: "", path: vpnstat, arguments: ["record", "--count", "1", "--db", floorDatabase]))
      guard made.exit.succeeded else { throw BenchError("record --count 1 for the C floor failed: \(made.exit)") }
      usleep(250_000)
      try start(recorderSavingFloor, savingFloor, ["--record", floorDatabase, runtime], judged: false)
    }
    try start(
      ipLoop, "/bin/sh", ["-c", "while :; do \(ip) -s -j link >/dev/null; sleep 1; done"], judged: false,
      withChildren: true)
    // The reader needs the database the recorder makes.
    let waited = monotonicNanoseconds()
    while access(db, F_OK) != 0 {
      if monotonicNanoseconds() - waited > 10_000_000_000 { throw BenchError("the recorder made no database") }
      usleep(50_000)
    }
    usleep(500_000)
    if let terminal = try TerminalSession(command: "exec \(vpnstat) watch --db \(db) --interval 1s") {
      sessions.append(terminal)
      subjects.append(
        Subject(label: "vpnstat watch --db --interval 1s (a 120×40 terminal)", pid: terminal.pid, judged: true))
    } else {
      notes.append("  watch: tmux is missing: not measured")
    }
    // vnstatd adds every interface to its database when it starts, for some 15 s at 1000.
    let warmUp: UInt32 = 30
    let seconds: UInt32 = quick ? 65 : 240
    sleep(warmUp)
    let before = subjects.map { ProcessUsage.of($0.pid) }
    let started = monotonicNanoseconds()
    var left = seconds
    while left > 0 {
      try Interruption.check()
      left = sleep(left)
    }
    let elapsed = Double(monotonicNanoseconds() - started) / 1e9
    let after = subjects.map { ProcessUsage.of($0.pid) }
    notes.insert(
      "record: \(ifbCount) ifb devices (+ lo), every counter moving (one 60-byte frame per interface per second),"
        + " all at once, measured over \(Int(elapsed)) s after \(warmUp) s of start-up; databases on disk in /var/tmp, vpnstat's published state on tmpfs (RUNTIME_DIRECTORY in /dev/shm, as the unit's /run/vpnstat)",
      at: 0)
    func cost(of label: (String) -> Bool) -> (usage: ProcessUsage, cpuPercent: Double)? {
      subjects.indices.first { label(subjects[$0].label) }.flatMap { i in
        before[i].flatMap { start in
          after[i].map { ($0, $0.since(start, seconds: elapsed, withChildren: subjects[i].withChildren).cpuPercent) }
        }
      }
    }
    // The anchors of the same run (issue 22): vnstatd for the recorder's resident memory and CPU,
    // the C floor for its CPU, the `ip` loop for watch's.
    let anchor = cost { $0.hasPrefix("vnstatd") }
    let floorCost = cost { $0 == recorderFloor }
    let savingFloorCost = cost { $0 == recorderSavingFloor }
    let ipLoopCost = cost { $0 == ipLoop }
    var anchored: [String] = []
    var floorTargets: [String] = []
    for (i, subject) in subjects.enumerated() {
      guard let start = before[i], let end = after[i] else {
        notes.append("  \(subject.label): EXITED during the measurement")
        continue
      }
      let cost = end.since(start, seconds: elapsed, withChildren: subject.withChildren)
      var line =
        "  \(subject.label): \(formatBytes(cost.writePerMinute))/min written (write_bytes), "
        + "\(formatBytes(cost.wcharPerMinute))/min in write calls (wchar), \(fixed(cost.cpuPercent, 2)) % of one core,"
        + " resident \(end.residentKiB) kB"
      if subject.judged && ifbCount >= 1000 {
        let met = cost.writePerMinute <= 1_048_576 && cost.cpuPercent < 0.5
        line += " — target ≤ 1 MiB/min and < 0.5 %: \(verdict(met))"
      }
      notes.append(line)
      if subject.label.hasPrefix("vpnstat record"), let (vnstatd, vnstatdCPU) = anchor {
        let rss = Double(end.residentKiB) / Double(max(vnstatd.residentKiB, 1))
        var ratio =
          "    against vnstatd in this run: resident \(fixed(rss, 2))× (\(end.residentKiB) kB / \(vnstatd.residentKiB) kB),"
          + " CPU \(share(cost.cpuPercent, of: vnstatdCPU))"
        if ifbCount >= 1000 {
          let met = end.residentKiB <= 6 * 1024 && cost.cpuPercent <= 0.2
          ratio += " — target ≤ 6 MiB and ≤ 0.2 %: \(verdict(met))"
          if subject.judged {
            anchored.append(
              judged(
                "record's CPU ≤ \(fixed(recorderShareOfVnstatd, 3))× vnstatd's (0.2 % where it took 3.5 %)",
                cost.cpuPercent, of: vnstatdCPU, atMost: recorderShareOfVnstatd))
          }
        }
        notes.append(ratio)
      }
      if subject.label.hasPrefix("vpnstat record"), let (_, floorCPU) = floorCost {
        notes.append("    against the C floor in this run: CPU \(share(cost.cpuPercent, of: floorCPU))")
      }
      // Issue 43, for the recorder judged (not an alternative build): at the floor.
      if subject.judged && subject.label.hasPrefix("vpnstat record") && ifbCount >= 1000 {
        if let (_, floorCPU) = floorCost {
          floorTargets.append(
            judged("record's CPU ≤ 1.2× netlink-floor --every-second's", cost.cpuPercent, of: floorCPU, atMost: 1.2))
        }
        // Not a target: the floor that also saves, what a C recorder storing the same pays.
        if let (_, savingCPU) = savingFloorCost {
          floorTargets.append(
            "    (against the same dump and saves in C, sqlite-floor --record: CPU \(share(cost.cpuPercent, of: savingCPU)))"
          )
        }
        let resident = Double(end.residentKiB) * 1024
        floorTargets.append(
          "  record's resident size ≤ 2.5 MB: \(fixed(resident / 1e6, 2)) MB — \(verdict(resident <= 2_500_000))")
        if let (vnstatd, _) = anchor {
          let vnstatdWrites =
            subjects.firstIndex { $0.label.hasPrefix("vnstatd") }.flatMap { before[$0] }
            .map { vnstatd.since($0, seconds: elapsed).writePerMinute } ?? 0
          let ratio = vnstatdWrites > 0 ? cost.writePerMinute / vnstatdWrites : .nan
          floorTargets.append(
            "  record's bytes written ≤ 0.25× vnstatd's: \(fixed(ratio, 3))× (\(formatBytes(cost.writePerMinute))/min / \(formatBytes(vnstatdWrites))/min) — \(verdict(ratio <= 0.25))"
          )
        }
      }
      if subject.judged && subject.label.hasPrefix("vpnstat watch"), let (_, loopCPU) = ipLoopCost {
        notes.append("    against the ip loop in this run: CPU \(share(cost.cpuPercent, of: loopCPU))")
        if ifbCount >= 1000 {
          anchored.append(
            judged(
              "watch --db's CPU ≤ \(fixed(watchShareOfIPLoop, 2))× the ip loop's (0.3 % where it took 1.48 %)",
              cost.cpuPercent, of: loopCPU, atMost: watchShareOfIPLoop))
        }
      }
    }
    if !anchored.isEmpty { notes += ["issue 22's targets as shares of their anchors, same run:"] + anchored }
    if !floorTargets.isEmpty { notes += ["issue 43's targets (the recorder at the floor), same run:"] + floorTargets }
    return notes
  }

  /// `part` as a multiple of `whole`, both CPU percentages, with the two.
  static func share(_ part: Double, of whole: Double) -> String {
    let ratio = whole > 0 ? fixed(part / whole, 3) + "×" : "n/a"
    return "\(ratio) (\(fixed(part, 3)) % / \(fixed(whole, 3)) %)"
  }

  /// A target line: `part` ÷ `whole` against `limit`.
  static func judged(_ target: String, _ part: Double, of whole: Double, atMost limit: Double) -> String {
    guard whole > 0 else { return "  \(target): the anchor used no CPU — not judged" }
    return "  \(target): \(share(part, of: whole)) — \(verdict(part / whole <= limit))"
  }

  /// The traffic: one small frame out of every ifb device each second (an ifb counts it as
  /// received), until the process is ended. Runs as its own process inside the namespace.
  static func move(ifbCount: Int) -> Int32 {
    let fd = traffic_mover_open()
    guard fd >= 0 else {
      warn("mover: packet socket: \(String(cString: strerror(-fd)))")
      return 1
    }
    let indexes = (0..<ifbCount).map { Int32(if_nametoindex("ifb\($0)")) }.filter { $0 > 0 }
    while true {
      let start = monotonicNanoseconds()
      for index in indexes { _ = traffic_mover_send(fd, index) }
      let spent = monotonicNanoseconds() - start
      if spent < 1_000_000_000 { usleep(UInt32((1_000_000_000 - spent) / 1000)) }
    }
  }

  /// A directory on disk (`/var/tmp`): `write_bytes` counts nothing on tmpfs.
  static func diskDirectory() throws -> String {
    var template = Array("/var/tmp/vpnstat-bench-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw BenchError("mkdtemp in /var/tmp failed") }
    return String(cString: made)
  }
}
