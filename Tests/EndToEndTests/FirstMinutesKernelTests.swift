import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// A new user's first minutes (issue 24), on the real kernel in network namespaces: right after
/// traffic crosses a tunnel, with a recorder that saves once a minute, every command gives
/// `status`'s figure; `session` shows the lengths the running enforcer uses; `status` says
/// nothing about a tunnel that merely has no manager.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct FirstMinutesKernelTests {
  /// The bytes both ways of the `<title>NAME …: ≈ N</title>` bars of `name` in an SVG drawn
  /// with `--bytes`, summed.
  func barBytes(_ svg: String, _ name: String) -> UInt64 {
    var sum: UInt64 = 0
    for piece in svg.components(separatedBy: "<title>\(name) ").dropFirst() {
      guard let end = piece.range(of: "</title>"), let mark = piece.range(of: ": ≈ ") else { continue }
      sum += UInt64(piece[mark.upperBound..<end.lowerBound]) ?? 0
    }
    return sum
  }

  @Test(
    "5 MB through a tunnel, a recorder saving every minute: history (JSON, table, SVG), alert, a cap and the gate give status's bytes"
  )
  func sameBytesAsStatus() throws {
    let ns = try TestNamespace("fmk")
    let directory = try TemporaryDirectory("fmk")
    let db = directory.file("v.db")
    let owner = try ns.echoTunnel("tun44", local: "169.254.44.1", peer: "169.254.44.2")
    defer { owner.stop() }
    let recorder = try ns.startRecorder(db, ["--interval", "1s", "--save-interval", "1m"])
    defer { recorder.stop(SIGKILL) }
    let first = try #require(try storedEntry(db, "tun44"))
    try ns.peerRun("udp-send", "169.254.44.2", "9704", "5000", "1000", "--gap-us", "100")
    let before = try ns.settledCounters("tun44")
    func json(_ arguments: String...) throws -> [String: Any] {
      let result = try ns.vpnstat(Array(arguments) + ["--db", db, "-i", "tun44"])
      try #require(result.status == 0, "\(arguments): \(result.errors)")
      return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any], "\(result.output)")
    }
    func rowsSum(_ object: [String: Any]) -> UInt64 {
      var sum: UInt64 = 0
      for series in object["series"] as? [[String: Any]] ?? [] {
        for row in series["buckets"] as? [[String: Any]] ?? [] {
          sum += (uint(row["rx_bytes"]) ?? 0) + (uint(row["tx_bytes"]) ?? 0)
        }
      }
      return sum
    }
    let status = try parseStatus(ns.vpnstat("status", "--json", "--db", db, "-i", "tun44"))
    let tunnel = try #require(interface(status, named: "tun44"))
    let total = (uint(tunnel["total_rx_bytes"]) ?? 0) + (uint(tunnel["total_tx_bytes"]) ?? 0)
    #expect(total > 10_000_000, "5,000 datagrams of 1,000 B each way: \(total) B")
    // Not saved yet: the database still holds the recorder's first sight of the tunnel.
    #expect(try storedEntry(db, "tun44") == first, "saved within the save interval")
    // The last two days and hours hold everything since (a test that crosses midnight too).
    let days = rowsSum(try json("history", "--days", "2", "--json"))
    let hours = rowsSum(try json("history", "--hours", "2", "--json"))
    let alert = try json("alert", "--limit", "1TB", "--json")
    let used = uint((alert["limit"] as? [String: Any])?["used_bytes"]) ?? 0
    let svg = try ns.vpnstat("history", "--svg", "-", "--days", "2", "--bytes", "--db", db, "-i", "tun44")
    #expect(svg.status == 0, "\(svg.errors)")
    let drawn = barBytes(svg.output, "tun44")
    let table = try ns.vpnstat("report", "--bytes", "--db", db, "-i", "tun44")
    #expect(table.status == 0 && table.errors.isEmpty, "\(table.errors)")
    let month = table.output.split(separator: "\n").first { $0.hasPrefix("  this month ") }
      .map { $0.split(separator: " ").filter { $0 != "≈" } }
    let reported = month.flatMap { $0.count > 5 ? UInt64($0[5]) : nil } ?? 0
    let after = try ns.kernelCounters("tun44")
    // Within one sample: what moved between the first command and the last, at most.
    let moved = (after.rxBytes + after.txBytes) - (before.rxBytes + before.txBytes)
    for (what, figure) in [
      ("history --days", days), ("history --hours", hours), ("alert", used), ("history --svg", drawn),
      ("report this month", reported),
    ] {
      #expect(figure >= total - min(total, moved) && figure <= total + moved, "\(what): \(figure) B, status \(total) B")
    }
    // A cap of what status counts is reached, for session and the gate alike.
    let plan = try ns.vpnstat("plan", "free", "--data-cap", "\(total)", "--per", "month", "--db", db)
    #expect(plan.status == 0, "\(plan.errors)")
    let session = try parseStatus(ns.vpnstat("session", "--json", "--db", db))
    let cap = (session["session"] as? [String: Any])?["data_cap"] as? [String: Any]
    #expect(cap?["reached"] as? Bool == true, "\(String(describing: cap))")
    #expect(try ns.vpnstat("session", "check", "-q", "--db", db).status == 75)
  }

  @Test("session while an enforcer runs with --session-length 30s --pause-length 1m: the next window is 30 s / 1 min")
  func enforcersLengths() throws {
    let t = try EnforcedTunnel("fml")
    _ = try t.startEnforcer(session: "30s", pause: "1m")
    // No window yet (the tunnel is down): the enforcer says which lengths it opens one with.
    var session = try t.session()
    #expect(session["state"] as? String == "none")
    #expect(uint(session["next_session_length_seconds"]) == 30, "\(session)")
    #expect(uint(session["next_pause_length_seconds"]) == 60, "\(session)")
    let idle = try t.ns.vpnstat("session", "--db", t.db)
    #expect(idle.output.contains("connecting opens a 30 s session"), "\(idle.output)")
    try t.up()
    #expect(waitUntil(timeout: 10) { (try? t.session()["state"] as? String) == "active" } != nil)
    // A reader's own lengths do not change the enforcer's.
    let asked = try t.ns.vpnstat(
      "session", "--json", "--db", t.db, "--session-length", "15m", "--pause-length", "45m")
    session = try #require(
      (try JSONSerialization.jsonObject(with: asked.stdout) as? [String: Any])?["session"] as? [String: Any])
    #expect(uint(session["session_length_seconds"]) == 30)
    #expect(uint(session["next_session_length_seconds"]) == 30, "\(session)")
    #expect(uint(session["next_pause_length_seconds"]) == 60, "\(session)")
    let text = try t.ns.vpnstat("session", "--db", t.db, "--session-length", "15m", "--pause-length", "45m")
    #expect(text.output.contains("lengths: 30 s session, 1 min pause"), "\(text.output)")
    #expect(!text.output.contains("next window"), "\(text.output)")
  }

  @Test("status on a tun no manager runs: 'none' in its MANAGER cell, and nothing on stderr nor under the table")
  func noManagerIsQuiet() throws {
    let ns = try TestNamespace("fmn")
    let directory = try TemporaryDirectory("fmn")
    let db = directory.file("v.db")
    let owner = try ns.echoTunnel("tun45", local: "169.254.45.1", peer: "169.254.45.2")
    defer { owner.stop() }
    let recorded = try ns.vpnstat("record", "--count", "1", "--db", db)
    #expect(recorded.status == 0, "\(recorded.errors)")
    let result = try ns.vpnstat("status", "--db", db)
    #expect(result.status == 0)
    #expect(result.errors.isEmpty, "stderr: \(result.errors)")
    #expect(!result.output.contains("no manager"), "\(result.output)")
    let row = result.output.split(separator: "\n").first { $0.hasPrefix("  tun45 ") }
    #expect(row?.hasSuffix("none") == true, "\(result.output)")
    // JSON keeps how that was found, for whoever asks.
    let object = try parseStatus(ns.vpnstat("status", "--json", "--db", db, "-i", "tun45"))
    let manager = interface(object, named: "tun45")?["manager"] as? [String: Any]
    #expect(manager?["kind"] as? String == "none")
    #expect((manager?["evidence"] as? String)?.isEmpty == false)
  }
}
