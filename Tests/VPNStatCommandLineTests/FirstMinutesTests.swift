import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The first minutes of a new user (issue 24), in-process on the report fixture at its "now":
/// one answer to "how much today and this month?", and the same figure from every command for
/// the same period — the saved buckets plus the traffic since the last save, as `status`'s
/// totals count it.
struct FirstMinutesTests {
  let directory: TemporaryDirectory
  let db: String
  let clock = ManualTimeSource(wall: ReportFixture.now.seconds)
  /// An empty sysfs tree: nothing moved since the fixture's last save.
  let quiet: SysfsFixture
  /// wg0 in a boot after the fixture's: its counters (1,000 B received, 2,000 B sent) are
  /// traffic since the last save, which no bucket holds yet.
  let moved: SysfsFixture

  init() throws {
    directory = try TemporaryDirectory("first")
    db = directory.file("v.db")
    try ReportFixture.make(at: db)
    quiet = try SysfsFixture()
    moved = try SysfsFixture()
    try moved.add("wg0", index: 7, rx: 1_000, tx: 2_000, type: 65534, uevent: "DEVTYPE=wireguard")
  }

  func vpnstat(_ arguments: [String], sysfs: SysfsFixture) throws -> CommandResult {
    try runInProcess(arguments + ["--db", db, "--sysfs-root", sysfs.directory.path], clock: clock)
  }

  func json(_ result: CommandResult) throws -> [String: Any] {
    try #require(result.status == 0, "exit \(result.status): \(result.errors)")
    return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.output)")
  }

  func rows(_ object: [String: Any]) -> [[String: Any]] {
    ((object["series"] as? [[String: Any]])?.first?["buckets"] as? [[String: Any]]) ?? []
  }

  /// A report line's words without the `≈` marks: `today 2026-11-25 1500 150 1650 3300`.
  func words(_ output: String, _ label: String) -> [String] {
    let line = output.split(separator: "\n").first { $0.hasPrefix("  " + label + " ") } ?? ""
    return line.split(separator: " ").map(String.init).filter { $0 != "≈" }
  }

  @Test("report on the fixture: today, yesterday, this month and last month of the tunnel, worked out by hand")
  func reportOnTheFixture() throws {
    let result = try vpnstat(["report", "--bytes"], sysfs: quiet)
    #expect(result.status == 0, "\(result.errors)")
    #expect(result.errors.isEmpty, "\(result.errors)")
    let out = result.output
    #expect(out.contains("tunnel: wg0"), "\(out)")
    // Today 1,500 + 150 B by noon: 3,300 at that pace. November 18,500 + 1,850 B in 24.5 of
    // its 30 days: 24,918. October 14,500 + 1,450.
    #expect(words(out, "today") == ["today", "2026-11-25", "1500", "150", "1650", "3300"], "\(out)")
    #expect(words(out, "yesterday") == ["yesterday", "2026-11-24", "0", "0", "0"], "\(out)")
    #expect(words(out, "this month") == ["this", "month", "2026-11-01", "18500", "1850", "20350", "24918"], "\(out)")
    #expect(words(out, "last month") == ["last", "month", "2026-10-01", "14500", "1450", "15950"], "\(out)")
    #expect(out.contains("session: free plan · no window"), "\(out)")
    #expect(out.contains("≈ estimates"))
    // Billing months from the 15th: 10,500 B so far (10.5 of 30 days: 30,000 + 3,000), and
    // 18,000 B the month before.
    let billing = try vpnstat(["report", "--bytes", "--month-start-day", "15"], sysfs: quiet).output
    #expect(words(billing, "this month") == ["this", "month", "2026-11-15", "10500", "1050", "11550", "33000"])
    #expect(words(billing, "last month") == ["last", "month", "2026-10-15", "18000", "1800", "19800"])
    // Loopback is left out unless asked for; another class alone has nothing yet.
    let wifi = try vpnstat(["report", "--only", "wifi"], sysfs: quiet)
    #expect(wifi.output.contains("No traffic recorded yet in the last two months."), "\(wifi.output)")
  }

  @Test("report with no database: says it, what to run, and the kernel's counters meanwhile; exit 0")
  func reportWithoutADatabase() throws {
    let missing = directory.file("none/v.db")
    let sysfs = try SysfsFixture()
    try sysfs.add("wg0", index: 7, rx: 1_000, tx: 2_000, type: 65534, uevent: "DEVTYPE=wireguard")
    try sysfs.add("lo", index: 1, rx: 5_000, tx: 5_000, type: 772)
    let result = try runInProcess(
      ["report", "--db", missing, "--sysfs-root", sysfs.directory.path, "--bytes"], clock: clock)
    #expect(result.status == 0, "\(result.errors)")
    #expect(result.output.contains("No database at \(missing): nothing has been recorded yet."), "\(result.output)")
    #expect(result.output.contains("systemctl enable --now vpnstat-record"), "\(result.output)")
    #expect(result.output.contains("vpnstat record --db \(missing)"), "\(result.output)")
    #expect(words(result.output, "tunnel:") == ["tunnel:", "wg0", "1000", "2000"], "\(result.output)")
    // Loopback only when asked for.
    #expect(!result.output.contains("loopback"), "\(result.output)")
    let asked = try runInProcess(
      ["report", "--db", missing, "--sysfs-root", sysfs.directory.path, "--bytes", "--only", "loopback"], clock: clock)
    #expect(words(asked.output, "loopback:") == ["loopback:", "lo", "5000", "5000"], "\(asked.output)")
    #expect(!FileManager.default.fileExists(atPath: missing), "a report created the database")
  }

  @Test(
    "the traffic since the last save is in the current rows of history (table, JSON, SVG), report, alert and a data cap: status's figure"
  )
  func sameFigureEverywhere() throws {
    // Status: the stored totals (33,000 / 3,300 B) and the 1,000 / 2,000 B since.
    let status = try json(try vpnstat(["status", "--json"], sysfs: moved))
    let wg0 = (status["interfaces"] as? [[String: Any]])?.first { $0["name"] as? String == "wg0" }
    #expect(uint(wg0?["total_rx_bytes"]) == 34_000)
    #expect(uint(wg0?["total_tx_bytes"]) == 5_300)
    // History: every day kept sums to the same; today holds what was not saved.
    let days = rows(try json(try vpnstat(["history", "--days", "60", "--json"], sysfs: moved)))
    #expect(days.reduce(0) { $0 + (uint($1["rx_bytes"]) ?? 0) } == 34_000)
    #expect(days.reduce(0) { $0 + (uint($1["tx_bytes"]) ?? 0) } == 5_300)
    #expect(days.last?["start"] as? String == "2026-11-25T00:00:00Z")
    #expect(uint(days.last?["rx_bytes"]) == 2_500 && uint(days.last?["tx_bytes"]) == 2_150)
    let hours = rows(try json(try vpnstat(["history", "--hours", "--json"], sysfs: moved)))
    #expect(hours.last?["start"] as? String == "2026-11-25T12:00:00Z")
    #expect(uint(hours.last?["rx_bytes"]) == 1_000 && uint(hours.last?["tx_bytes"]) == 2_000)
    let months = rows(try json(try vpnstat(["history", "--months", "--json"], sysfs: moved)))
    #expect(months.map { uint($0["rx_bytes"]) } == [14_500, 19_500])
    let table = try vpnstat(["history", "--days", "2", "--bytes"], sysfs: moved).output
    #expect(table.contains("2026-11-25 Wed  ≈ 2500  ≈ 2150  ≈ 4650"), "\(table)")
    let svg = try vpnstat(["history", "--svg", "-", "--bytes"], sysfs: moved).output
    #expect(svg.contains("<title>tunnel 2026-11-25 Wed: ≈ 4650</title>"), "\(svg)")
    #expect(svg.contains("<title>tunnel 2026-11-25 12:00: ≈ 3000</title>"), "\(svg)")
    // report and alert, to the byte (the gate and a cap, which read the real kernel only, are
    // FirstMinutesKernelTests').
    let report = try vpnstat(["report", "--bytes"], sysfs: moved).output
    #expect(words(report, "today").prefix(5) == ["today", "2026-11-25", "2500", "2150", "4650"], "\(report)")
    #expect(try vpnstat(["alert", "--limit", "4650", "--per", "day"], sysfs: moved).status == 1)
    #expect(try vpnstat(["alert", "--limit", "4651", "--per", "day"], sysfs: moved).status == 0)
    // Without the traffic since (nothing moved), the saved figures alone.
    let saved = rows(try json(try vpnstat(["history", "--days", "1", "--json"], sysfs: quiet)))
    #expect(uint(saved.last?["rx_bytes"]) == 1_500)
  }

  @Test("alert --limit 10GB shows the limit in GB and the traffic beside it in SI; --units iec in GiB")
  func limitInGigabytes() throws {
    let result = try vpnstat(["alert", "--limit", "10GB"], sysfs: quiet)
    #expect(result.status == 0, "\(result.errors)")
    // November so far: 20,350 B.
    #expect(result.output.contains("tunnel class: limit: ≈ 20.4 kB of 10.0 GB this month"), "\(result.output)")
    let iec = try vpnstat(["alert", "--limit", "10GB", "--units", "iec"], sysfs: quiet)
    #expect(iec.output.contains("≈ 19.9 KiB of 9.31 GiB"), "\(iec.output)")
  }

  @Test("report says how current the saved figures are, and when nothing has saved for three save intervals")
  func freshness() {
    let now = Timestamp(rfc3339: "2026-11-25T12:00:00Z")!
    let utc = FixedOffsetCalendar.utc
    let recent = ReportCommand.freshness(
      saved: Timestamp(rfc3339: "2026-11-25T11:59:30Z")!, now: now, saveInterval: .seconds(60), utc)
    #expect(recent.hasPrefix("saved at 11:59:30;"), "\(recent)")
    let stale = ReportCommand.freshness(
      saved: Timestamp(rfc3339: "2026-11-25T11:56:59Z")!, now: now, saveInterval: .seconds(60), utc)
    #expect(
      stale.hasPrefix("nothing saved since 2026-11-25 11:56 (3 min 1 s ago): is vpnstat record running?"), "\(stale)")
    // A recorder saving every 10 minutes is not stale after 5.
    #expect(
      !ReportCommand.freshness(
        saved: Timestamp(rfc3339: "2026-11-25T11:55:00Z")!, now: now, saveInterval: .seconds(600), utc
      ).contains("nothing saved"))
  }
}
