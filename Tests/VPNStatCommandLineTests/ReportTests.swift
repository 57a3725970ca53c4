import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// `history`, `alert`, `plan --data-cap` and the gate, run in-process on the report fixture (a
/// database built through the store's API, see `ReportFixture`) at the fixture's "now" in UTC:
/// every figure checked is one worked out by hand there.
struct ReportTests {
  let directory: TemporaryDirectory
  let db: String
  let clock = ManualTimeSource(wall: ReportFixture.now.seconds)
  /// An empty sysfs tree: commands that sample see no interface of this machine.
  let sysfs: SysfsFixture

  init() throws {
    directory = try TemporaryDirectory("reports")
    db = directory.file("v.db")
    try ReportFixture.make(at: db)
    sysfs = try SysfsFixture()
  }

  func vpnstat(_ arguments: String...) throws -> CommandResult {
    try runInProcess(arguments + ["--db", db], clock: clock)
  }

  func json(_ result: CommandResult) throws -> [String: Any] {
    try #require(result.status == 0, "exit \(result.status): \(result.errors)")
    return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.output)")
  }

  func rows(_ object: [String: Any]) -> [[String: Any]] {
    ((object["series"] as? [[String: Any]])?.first?["buckets"] as? [[String: Any]]) ?? []
  }

  @Test("history --top 5: the five busiest days, busiest first, with their figures")
  func topFive() throws {
    let object = try json(try vpnstat("history", "--top", "5", "--json"))
    #expect(object["order"] as? String == "top")
    let top = rows(object)
    #expect(
      top.map { $0["start"] as? String } == [
        "2026-11-20T00:00:00Z", "2026-10-31T00:00:00Z", "2026-11-14T00:00:00Z", "2026-10-14T00:00:00Z",
        "2026-10-15T00:00:00Z",
      ])
    #expect(top.map { uint($0["rx_bytes"]) } == [8000, 7000, 6000, 4000, 3000])
    #expect(top.map { uint($0["tx_bytes"]) } == [800, 700, 600, 400, 300])
    // As a table: ranked rows, the busiest first.
    let table = try vpnstat("history", "--top", "5", "--bytes")
    let lines = table.output.split(separator: "\n").map(String.init)
    #expect(lines.contains { $0.contains("1  2026-11-20 Fri") && $0.contains("≈ 8800") }, "\(table.output)")
    #expect(lines.contains { $0.contains("5  2026-10-15 Thu") }, "\(table.output)")
    // Within the last 20 days only.
    let recent = rows(try json(try vpnstat("history", "--top", "2", "--days", "20", "--json")))
    #expect(recent.map { $0["start"] as? String } == ["2026-11-20T00:00:00Z", "2026-11-14T00:00:00Z"])
  }

  @Test("months from the 15th: 4,500, 18,000 and 10,500 B received; the current one projected to 30,000 + 3,000")
  func billingMonths() throws {
    let object = try json(try vpnstat("history", "--months", "--month-start-day", "15", "--json"))
    #expect(object["month_start_day"] as? Int == 15)
    let months = rows(object)
    #expect(
      months.map { $0["start"] as? String } == [
        "2026-09-15T00:00:00Z", "2026-10-15T00:00:00Z", "2026-11-15T00:00:00Z",
      ])
    #expect(months.map { uint($0["rx_bytes"]) } == [4500, 18_000, 10_500])
    let current = try #require((object["series"] as? [[String: Any]])?.first?["current"] as? [String: Any])
    #expect(current["start"] as? String == "2026-11-15T00:00:00Z")
    #expect(current["end"] as? String == "2026-12-15T00:00:00Z")
    #expect(uint(current["projected_rx_bytes"]) == 30_000)
    #expect(uint(current["projected_tx_bytes"]) == 3000)
    #expect(uint(current["elapsed_seconds"]) == 907_200)
    #expect((current["average_rx_bytes_per_second"] as? Double).map { abs($0 - 0.012) < 0.0005 } == true)
    #expect(current["estimate"] as? Bool == true)
    // Calendar months come from the monthly buckets: October 14,500 B, November 18,500 B.
    let calendar = rows(try json(try vpnstat("history", "--months", "--json")))
    #expect(calendar.map { uint($0["rx_bytes"]) } == [14_500, 18_500])
    // The table says the projection, labelled an estimate.
    let table = try vpnstat("history", "--months", "--month-start-day", "15")
    #expect(table.output.contains("MONTH FROM"), "\(table.output)")
    #expect(table.output.contains("2026-11-15"), "\(table.output)")
    #expect(
      table.output.contains("this month so far: average")
        && table.output.contains("projected ≈ 32.2 KiB by 2026-12-15 00:00 (estimate)"),
      "\(table.output)")
  }

  @Test("--since/--until: a date range includes both days; 15 rows, 15,000 B; the bounds are in the JSON")
  func ranges() throws {
    let object = try json(try vpnstat("history", "--days", "--since", "2026-10-31", "--until", "2026-11-14", "--json"))
    let days = rows(object)
    #expect(days.count == 15)
    #expect(days.first?["start"] as? String == "2026-10-31T00:00:00Z")
    #expect(days.last?["start"] as? String == "2026-11-14T00:00:00Z")
    #expect(days.reduce(0) { $0 + (uint($1["rx_bytes"]) ?? 0) } == 15_000)
    #expect(object["since"] as? String == "2026-10-31T00:00:00Z")
    #expect(object["until"] as? String == "2026-11-15T00:00:00Z")
    // A range in the past has no current period.
    #expect((object["series"] as? [[String: Any]])?.first?["current"] is NSNull)
    // Instants: the day holding the start is included, the day holding the (excluded) end too.
    let instants = rows(
      try json(
        try vpnstat(
          "history", "--days", "--since", "2026-11-14T18:00:00Z", "--until", "2026-11-15T00:00:01Z", "--json")))
    #expect(instants.map { uint($0["rx_bytes"]) } == [6000, 1000])
    // Today so far, projected: 1,500 B by noon → 3,000 B.
    let today = try #require(
      (try json(try vpnstat("history", "--json")))["series"].flatMap { ($0 as? [[String: Any]])?.first?["current"] }
        as? [String: Any])
    #expect(uint(today["projected_rx_bytes"]) == 3000)
  }

  @Test(
    "report --json: each class's today, yesterday, this month and last month with the current ones projected, the session; nothing recorded says so"
  )
  func reportJSON() throws {
    let sample = ["--sysfs-root", sysfs.directory.path]
    let object = try json(
      try runInProcess(["report", "--json", "--month-start-day", "15"] + sample + ["--db", db], clock: clock))
    #expect(object["schema_version"] as? Int == 1 && object["recorded"] as? Bool == true)
    #expect(object["month_start_day"] as? Int == 15)
    let series = object["series"] as? [[String: Any]] ?? []
    let tunnel = try #require(series.first { $0["class"] as? String == "tunnel" }, "\(series)")
    #expect((tunnel["members"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } == ["wg0"])
    var periods: [String: [String: Any]] = [:]
    for period in tunnel["periods"] as? [[String: Any]] ?? [] {
      if let name = period["period"] as? String { periods[name] = period }
    }
    #expect(Set(periods.keys) == ["today", "yesterday", "this-month", "last-month"])
    #expect(uint(periods["today"]?["rx_bytes"]) == 1500 && uint(periods["today"]?["tx_bytes"]) == 150)
    #expect(uint(periods["today"]?["projected_rx_bytes"]) == 3000)
    #expect(uint(periods["yesterday"]?["rx_bytes"]) == 0 && periods["yesterday"]?["projected_rx_bytes"] is NSNull)
    #expect(uint(periods["this-month"]?["rx_bytes"]) == 10_500)
    #expect(uint(periods["this-month"]?["projected_rx_bytes"]) == 30_000)
    #expect(uint(periods["last-month"]?["rx_bytes"]) == 18_000)
    #expect(periods["last-month"]?["start"] as? String == "2026-10-15T00:00:00Z")
    #expect((object["session"] as? [String: Any])?["plan"] is String)
    let none = try json(
      try runInProcess(["report", "--json"] + sample + ["--db", directory.file("none.db")], clock: clock))
    #expect(none["recorded"] as? Bool == false && (none["series"] as? [Any])?.isEmpty == true, "\(none)")
  }

  @Test(
    "a name no interface has and the ledger never saw is a typo: report, history and alert exit 69 naming the known ones; a name gone but booked keeps its figures"
  )
  func unknownInterface() throws {
    let sample = ["--sysfs-root", sysfs.directory.path]
    for command in [
      ["alert", "--limit", "1GB"], ["alert", "--limit", "1GB", "-q"], ["report"], ["history", "--json"],
    ] {
      let result = try runInProcess(command + ["-i", "wg9"] + sample + ["--db", db], clock: clock)
      #expect(result.status == 69, "\(command): \(result.status) \(result.output)")
      #expect(result.errors.contains("no interface wg9"), "\(command): \(result.errors)")
      #expect(result.errors.contains("known: ") && result.errors.contains("wg0"), "\(command): \(result.errors)")
      #expect(result.output.isEmpty, "\(command): \(result.output)")
    }
    // wg0 is on no interface of this (empty) tree, but the ledger booked it: its figures.
    let gone = try runInProcess(
      ["alert", "--limit", "1651", "--per", "day", "-i", "wg0"] + sample + ["--db", db], clock: clock)
    #expect(gone.status == 0, "\(gone.errors)")
    #expect(try runInProcess(["report", "-i", "wg0"] + sample + ["--db", db], clock: clock).status == 0)
    // Without a database only the kernel can say: still a typo.
    let fresh = try runInProcess(["report", "-i", "wg9"] + sample + ["--db", directory.file("none.db")], clock: clock)
    #expect(fresh.status == 69, "\(fresh.status): \(fresh.output)")
  }

  @Test("alert exits 1 once the period's traffic reaches the limit, 0 a byte below; by interface and class too")
  func alert() throws {
    let sample = ["--sysfs-root", sysfs.directory.path]
    func alert(_ arguments: [String]) throws -> CommandResult {
      try runInProcess(["alert"] + arguments + sample + ["--db", db], clock: clock)
    }
    // This month from the 15th: 10,500 + 1,050 = 11,550 B.
    let reached = try alert(["--limit", "11550", "--per", "month", "--month-start-day", "15"])
    #expect(reached.status == 1, "\(reached.errors)")
    #expect(reached.output.contains("tunnel class: limit reached:"), "\(reached.output)")
    let below = try alert(["--limit", "11551", "--per", "month", "--month-start-day", "15"])
    #expect(below.status == 0, "\(below.errors)")
    #expect(below.output.contains("1 B left"), "\(below.output)")
    // Today: 1,650 B.
    #expect(try alert(["--limit", "1650", "--per", "day"]).status == 1)
    #expect(try alert(["--limit", "1651", "--per", "day", "-q"]).output.isEmpty)
    #expect(try alert(["--limit", "1651", "--per", "day", "-i", "wg0"]).status == 0)
    #expect(try alert(["--limit", "1650", "--per", "day", "-i", "wg0"]).status == 1)
    // This week (from Monday 2026-11-23): only today's traffic.
    #expect(try alert(["--limit", "1650", "--per", "week"]).status == 1)
    #expect(try alert(["--limit", "1651", "--per", "week"]).status == 0)
    // Another class has none.
    #expect(try alert(["--limit", "1", "--only", "wifi"]).status == 0)
    let object = try json(try alert(["--limit", "11550", "--month-start-day", "15", "--json"]).with(status: 0))
    let limit = try #require(object["limit"] as? [String: Any])
    #expect(uint(limit["used_bytes"]) == 11_550)
    #expect(limit["period_start"] as? String == "2026-11-15T00:00:00Z")
    #expect(object["reached"] as? Bool == true)
    #expect(object["selected_classes"] as? [String] == ["tunnel"])
  }

  @Test("alert: wrong arguments are 64, a missing database 69 — never 1, which means crossed")
  func alertErrors() throws {
    let sample = ["--sysfs-root", sysfs.directory.path]
    #expect(try runInProcess(["alert", "--db", db] + sample, clock: clock).status == 64)
    #expect(try runInProcess(["alert", "--limit", "0", "--db", db] + sample, clock: clock).status == 64)
    #expect(
      try runInProcess(["alert", "--limit", "5GB", "--per", "year", "--db", db] + sample, clock: clock).status == 64)
    #expect(
      try runInProcess(["alert", "--limit", "5GB", "-i", "wg0", "--only", "tunnel", "--db", db] + sample, clock: clock)
        .status == 64)
    let missing = try runInProcess(
      ["alert", "--limit", "5GB", "--db", directory.file("none.db")] + sample, clock: clock)
    #expect(missing.status == 69, "\(missing.errors)")
  }

  @Test(
    "a data cap: plan stores it, session shows used/left/percent, the gate refuses with the usage until the period rolls over"
  )
  func dataCapGate() throws {
    let plan = try vpnstat("plan", "free", "--data-cap", "11550", "--per", "month", "--month-start-day", "15")
    #expect(plan.status == 0, "\(plan.errors)")
    #expect(plan.output == "plan: free\ndata cap: 11.3 KiB (11550 bytes) per month from the 15th\n", "\(plan.output)")
    #expect(try vpnstat("plan").output == "free\ndata cap: 11.3 KiB (11550 bytes) per month from the 15th\n")
    let session = try json(try vpnstat("session", "--json"))
    let cap = try #require((session["session"] as? [String: Any])?["data_cap"] as? [String: Any])
    #expect(uint(cap["used_bytes"]) == 11_550)
    #expect(uint(cap["left_bytes"]) == 0)
    #expect(cap["reached"] as? Bool == true)
    #expect(cap["period"] as? String == "month")
    #expect(cap["period_end"] as? String == "2026-12-15T00:00:00Z")
    #expect((session["session"] as? [String: Any])?["can_connect"] as? Bool == false)
    let gate = try vpnstat("session", "check")
    #expect(gate.status == 75)
    #expect(
      gate.errors.contains(
        "data cap reached: ≈ 11.3 KiB of 11.3 KiB this month from the 15th (100 %); you can reconnect when the month rolls over (at 2026-12-15 00:00)"
      ), "\(gate.errors)")
    // A bigger cap: 11,550 of 23,100 B, 50 %.
    _ = try vpnstat("plan", "--data-cap", "23100", "--per", "month", "--month-start-day", "15")
    let text = try vpnstat("session", "--bytes")
    #expect(
      text.output.contains(
        "data cap: ≈ 11550 of 23100 B this month from the 15th (50 %), ≈ 11550 left, until 2026-12-15 00:00"),
      "\(text.output)")
    #expect(try vpnstat("session", "check").status == 0)
    // The period rolls over: the new month has no traffic yet, and the gate opens.
    _ = try vpnstat("plan", "--data-cap", "11550", "--per", "month", "--month-start-day", "15")
    clock.advance(.seconds(19 * 86_400 + 43_200))
    #expect(try vpnstat("session", "check").status == 0)
    // The cap is removed with none; the plan stays.
    #expect(try vpnstat("plan", "--data-cap", "none").output == "plan: free\n")
  }

  @Test("bad arguments to the new options are usage errors (64) that say what was expected")
  func badArguments() throws {
    for arguments in [
      ["history", "--top", "0"], ["history", "--top", "776"], ["history", "--top", "5", "--hours"],
      ["history", "--since", "2026-02-30"], ["history", "--since", "2026-11-20", "--until", "2026-11-10"],
      ["history", "--since", "2026-11-20", "--days", "5"], ["history", "--json", "--graph"],
      ["history", "--month-start-day", "29"], ["history", "--month-start-day", "0"],
      ["history", "--top", "3", "--svg", "-"],
      ["plan", "--per", "day"], ["plan", "--data-cap", "0"], ["plan", "--data-cap", "lots"],
      ["plan", "free", "--data-cap", "1GB", "--per", "fortnight"], ["enforce", "wg0", "--interval", "0"],
      ["record", "--listen", "localhost:9586"], ["record", "--listen", "127.0.0.1"],
      ["record", "--listen", "::1:9586"],
      ["record", "--listen", "127.0.0.1:65536"],
    ] {
      let result = try vpnstat(arguments)
      #expect(result.status == 64, "\(arguments): \(result.status) \(result.errors)")
      #expect(result.errors.contains("vpnstat: "), "\(arguments): \(result.errors)")
    }
  }

  @Test("bad files: a damaged or foreign database is 65 and left untouched; an SVG into a missing directory 74")
  func badFiles() throws {
    let garbage = directory.file("garbage.db")
    try Data("not a database at all, just bytes".utf8).write(to: URL(fileURLWithPath: garbage))
    for arguments in [
      ["history", "--svg", directory.file("x.svg")], ["history", "--top", "3"],
      ["alert", "--limit", "1GB", "--sysfs-root", sysfs.directory.path], ["plan", "--data-cap", "1GB"],
    ] {
      let result = try runInProcess(arguments + ["--db", garbage], clock: clock)
      #expect(result.status == 65, "\(arguments): \(result.status) \(result.errors)")
      #expect(result.errors.contains("is not a vpnstat database"), "\(arguments): \(result.errors)")
    }
    #expect(contents(garbage) == Data("not a database at all, just bytes".utf8))
    let missing = try vpnstat(["history", "--svg", directory.file("no/such/dir/x.svg")])
    #expect(missing.status == 74, "\(missing.errors)")
    #expect(missing.errors.contains("cannot write"), "\(missing.errors)")
    #expect(try vpnstat(["history", "--svg", directory.path + "/"]).status == 64)
    // The SVG to a file, replaced whole.
    let file = directory.file("h.svg")
    #expect(try vpnstat(["history", "--svg", file]).status == 0)
    let svg = String(decoding: contents(file) ?? Data(), as: UTF8.self)
    #expect(svg.hasPrefix("<?xml") && svg.hasSuffix("</svg>\n"))
  }

  func vpnstat(_ arguments: [String]) throws -> CommandResult {
    try runInProcess(arguments + ["--db", db], clock: clock)
  }

  /// The file type of `path`, without following a symlink: S_IFREG, S_IFCHR, S_IFIFO …
  func fileType(_ path: String) -> mode_t? {
    var info = stat()
    return lstat(path, &info) == 0 ? info.st_mode & S_IFMT : nil
  }

  @Test(
    "history --svg into a FIFO is written into, never replaced; - and /dev/stdout are the command's own output; a regular file is replaced whole"
  )
  func svgIntoWhatIsGiven() throws {
    let fifo = directory.file("chart.fifo")
    #expect(mkfifo(fifo, 0o600) == 0)
    let copy = directory.file("from-fifo.svg")
    let reader = try BackgroundProcess("/bin/sh", ["-c", "cat \"$0\" > \"$1\"", fifo, copy])
    let written = try vpnstat(["history", "--svg", fifo])
    #expect(written.status == 0, "\(written.errors)")
    #expect(reader.child.wait(timeout: 10) == 0)
    #expect(fileType(fifo) == S_IFIFO, "the FIFO was replaced")
    let svg = String(decoding: contents(copy) ?? Data(), as: UTF8.self)
    #expect(svg.hasPrefix("<?xml") && svg.hasSuffix("</svg>\n"), "\(svg.prefix(80))")
    for name in ["-", "/dev/stdout", "/dev/fd/1"] {
      let out = try vpnstat(["history", "--svg", name])
      #expect(out.status == 0 && out.output == svg, "\(name): \(out.status) \(out.errors)")
    }
    // A regular file is replaced atomically: a new file in its place, never half written.
    let file = directory.file("h.svg")
    try Data("old".utf8).write(to: URL(fileURLWithPath: file))
    var before = stat()
    stat(file, &before)
    #expect(try vpnstat(["history", "--svg", file]).status == 0)
    var after = stat()
    stat(file, &after)
    #expect(after.st_ino != before.st_ino && String(decoding: contents(file) ?? Data(), as: UTF8.self) == svg)
  }

  @Test(
    "history --svg into device nodes (mknod c 1 3 and c 1 7 in the test's directory): null takes it and stays a device; full is 74, no space; neither replaced by a regular file",
    .enabled(if: Privilege.isRoot, "needs root to make device nodes (mknod)"))
  func svgIntoDevices() throws {
    let null = directory.file("null")
    let full = directory.file("full")
    // makedev(1, 3) and makedev(1, 7): minor | major << 8 for numbers this small.
    #expect(mknod(null, mode_t(S_IFCHR) | 0o666, dev_t(1 << 8 | 3)) == 0)
    #expect(mknod(full, mode_t(S_IFCHR) | 0o666, dev_t(1 << 8 | 7)) == 0)
    let toNull = try vpnstat(["history", "--svg", null])
    #expect(toNull.status == 0, "\(toNull.errors)")
    #expect(fileType(null) == S_IFCHR, "the device was replaced by a regular file")
    let toFull = try vpnstat(["history", "--svg", full])
    #expect(toFull.status == 74, "\(toFull.status) \(toFull.errors)")
    #expect(toFull.errors.contains("cannot write \(full): No space left on device"), "\(toFull.errors)")
    #expect(fileType(full) == S_IFCHR, "the device was replaced by a regular file")
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".tmp") }
    #expect(leftovers.isEmpty, "\(leftovers)")
  }

  @Test(
    "history --svg /dev/stdout in a child with a /dev of its own: the symlink stays, the picture goes where stdout goes (appended with >>, through a pipe)",
    .enabled(if: Privilege.isRoot, "needs root for a mount namespace with a /dev of its own"))
  func svgToChildStandardOutput() throws {
    let out = directory.file("appended.svg")
    try Data("before\n".utf8).write(to: URL(fileURLWithPath: out))
    // The child's own /dev (a tmpfs in a mount namespace of its own): whatever the code does to
    // /dev/stdout happens there, never to the machine's.
    let script = """
      mount -t tmpfs tmpfs /dev && ln -s /proc/self/fd/1 /dev/stdout || exit 90
      "$0" history --svg /dev/stdout --db "$1" >> "$2"; echo "appended $?"
      "$0" history --svg /dev/stdout --db "$1" | wc -c; echo "piped ${PIPESTATUS:-$?}"
      [ -L /dev/stdout ] && echo "still a link"
      """
    let result = try run(
      "/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/bash", "-c", script, Built.vpnstat, db, out],
      environment: ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"])
    #expect(result.status == 0, "\(result.output) \(result.errors)")
    let lines = result.output.split(separator: "\n").map(String.init)
    #expect(lines.contains("appended 0") && lines.contains("still a link"), "\(result.output) \(result.errors)")
    let appended = String(decoding: contents(out) ?? Data(), as: UTF8.self)
    #expect(appended.hasPrefix("before\n<?xml") && appended.hasSuffix("</svg>\n"), "\(appended.prefix(80))")
    let size = appended.utf8.count - "before\n".utf8.count
    #expect(lines.contains(String(size)), "\(result.output): \(size) bytes")
  }

  @Test(
    "sizes, numbers, durations and rates read whitespace around them the same way (' 1MiB' was taken, --month-start-day ' 5' refused); 1PiB is a size and the maximum is said"
  )
  func valuesAlike() throws {
    #expect(try vpnstat(["plan", "free", "--data-cap", " 1MiB", "--month-start-day", " 5"]).status == 0)
    #expect(try vpnstat(["plan", "--data-cap", "2MiB\t", "--month-start-day", "7 "]).status == 0)
    for (text, bytes) in [
      ("1PiB", UInt64(1) << 50), ("1024TiB", UInt64(1) << 50), ("4EiB", UInt64(1) << 62),
      ("1PB", 1_000_000_000_000_000),
      ("1EB", 1_000_000_000_000_000_000), (" 2GiB ", UInt64(2) << 30),
    ] {
      #expect(parseSize(text) == bytes, "\(text)")
    }
    for refused in ["5EiB", "4.1EiB", "1 MiB", "1ZiB"] { #expect(parseSize(refused) == nil, "\(refused)") }
    let capped = try vpnstat(["plan", "--data-cap", "1PiB"])
    #expect(capped.status == 0, "\(capped.errors)")
    #expect(capped.output.contains("1.00 PiB"), "\(capped.output)")
    let over = try vpnstat(["plan", "--data-cap", "5EiB"])
    #expect(over.status == 64 && over.errors.contains("from 1B to 4EiB"), "\(over.errors)")
    // One rule for all: around is ignored, inside refused.
    for (plain, text) in [("5", " 5"), ("5", "5 "), ("5", "\t5\n")] {
      #expect(parseCount(text, in: 1...28) == parseCount(plain, in: 1...28), "\(text)")
      #expect(parsePositiveInt(text) == parsePositiveInt(plain), "\(text)")
      #expect(parseSize(text) == parseSize(plain), "\(text)")
      #expect(parseDuration(text) == parseDuration(plain), "\(text)")
      func with(_ unit: String, _ value: String) -> String { value.replacingOccurrences(of: "5", with: "5" + unit) }
      #expect(parseRate(with("MB", text)) == parseRate(with("MB", plain)) && parseRate(with("MB", text)) != nil)
      #expect(FlowsCommand.snapshotLength(with("00", text)) == 500, "\(text)")
    }
    for inside in ["5 5", "1 ms"] {
      #expect(parseCount(inside, in: 1...28) == nil && parseDuration(inside) == nil && parseSize(inside) == nil)
    }
  }
}

extension CommandResult {
  /// The same result read as a success (for `alert --json`, whose status says crossed).
  func with(status: Int32) -> CommandResult {
    var copy = self
    copy.status = status
    return copy
  }
}
