import Foundation
import Testing

@testable import VPNStatTestSupport

/// The enforcer with `--action auto` on a real WireGuard tunnel (wg-quick + wireguard-go between
/// two namespaces, a full tunnel with wg-quick's fwmark rules), and docs/guide.md's "With WireGuard"
/// recipe: the gate in PreUp, the enforcer beside it.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct WireGuardEnforceTests {
  @Test(
    "WireGuard: a data cap reached inside the session stops the tunnel through wg-quick, recorded once as data-cap — its device going away after is the stop's doing, not 'vanished'"
  )
  func capStopThroughWgQuick() throws {
    let files = try TemporaryDirectory("mwgcap")
    let db = files.file("v.db")
    let pair = try WireGuardPair("mwgcap", subnet: 147)
    let ns = pair.link.left
    #expect(try ns.vpnstat("plan", "free", "--data-cap", "100kB", "--per", "day", "--db", db).status == 0)
    try pair.upBoth()
    let enforcer = try pair.left.start(
      Built.vpnstat,
      [
        "enforce", "wg0", "--db", db, "--session-length", "10m", "--pause-length", "10m", "--interval", "1s",
        "--wg-quick-dir", pair.left.directory,
      ])
    defer { enforcer.stop() }
    try enforcer.waitForError("enforcing the free plan on wg0 (auto)")
    try enforcer.waitForError("opened a window")
    // 300 kB into the tunnel: past the cap at the enforcer's next sample.
    try ns.peerRun("udp-send", "169.254.147.66", "9800", "300", "1000")
    try #require(waitUntil(timeout: 10) { !ns.hasLink("wg0") } != nil, "wg0 never went: \(enforcer.errors)")
    try enforcer.waitForError("went away after this enforcer's stop (data-cap)")
    let reasons = try stops(db).map(\.reason)
    #expect(reasons == [.dataCap], "\(reasons): \(enforcer.errors)")
    #expect(!enforcer.errors.contains("by something else"), "\(enforcer.errors)")
    let stop = try #require(try lastStop(ns, db))
    #expect(stop["detail"] as? String == "stopped through wg-quick \(pair.left.configPath)", "\(stop)")
    let session = try ns.vpnstat("session", "--db", db)
    #expect(session.output.contains("last stop: data-cap"), "\(session.output)")
  }

  @Test(
    "WireGuard: at the deadline wg-quick's own down within 1 s (no wg0, no fwmark rule, no table 51820); in the pause wg-quick up fails through PreUp and creates nothing; after it wg-quick up works, a ping crosses, the ledger spans both"
  )
  func fullCycle() throws {
    let files = try TemporaryDirectory("mwg")
    let db = files.file("v.db")
    let pair = try WireGuardPair(
      "mwg", subnet: 101, leftHooks: ["PreUp = \(Built.vpnstat) session check --db \(db)"], fullTunnelLeft: true)
    let ns = pair.link.left
    try pair.upBoth()
    #expect(try ns.rules().contains("lookup 51820"))
    #expect(try ns.ping("169.254.101.66"))
    // Who manages wg0: wireguard-go holds it, and its configuration is where --wg-quick-dir says.
    let status = try parseStatus(
      ns.vpnstat("status", "--json", "-i", "wg0", "--db", db, "--wg-quick-dir", pair.left.directory))
    let manager = interface(status, named: "wg0")?["manager"] as? [String: Any]
    #expect(manager?["kind"] as? String == "wg-quick", "\(String(describing: manager))")
    #expect(manager?["id"] as? String == pair.left.configPath)
    #expect(manager?["found_by"] as? String == "holder")
    #expect((manager?["evidence"] as? String)?.contains("wireguard-go (pid ") == true)

    let enforcer = try pair.left.start(
      Built.vpnstat,
      [
        "enforce", "wg0", "--db", db, "--session-length", "4s", "--pause-length", "8s", "--wg-quick-dir",
        pair.left.directory,
      ])
    defer { enforcer.stop() }
    try enforcer.waitForError("enforcing the free plan on wg0 (auto)")
    let session = try sessionObject(ns, db)
    let ends = try #require(instant(session["session_ends_at"]))
    let pauseEnds = try #require(instant(session["pause_ends_at"]))
    #expect(try ns.ping("fd00:101::2"))
    let first = try #require(try totalReceived(ns, db))
    #expect(first > 0, "the first connection's traffic is not in the ledger")

    // The deadline: wg-quick down, so nothing of the tunnel is left half-down. (wg-quick deletes
    // the rules, then the device, then its nft table.)
    let gone = try #require(waitUntil(timeout: 8) { !ns.hasLink("wg0") }, "wg0 never went: \(enforcer.errors)")
    let latency = gone.timeIntervalSince(ends)
    #expect(latency < 1.0, "deadline → wg0 gone took \(latency) s")
    #expect(latency > -0.05, "taken down before the deadline: \(latency) s")
    #expect(try !ns.rules().contains("51820"), "wg-quick's fwmark rule was left behind")
    #expect(try ns.routes(table: "51820").isEmpty)
    let clean = waitUntil(timeout: 3) {
      (try? ns.run("/usr/sbin/nft", ["list", "tables"]).output.contains("wg-quick-wg0")) == false
    }
    #expect(clean.map { $0.timeIntervalSince(ends) < 1.0 } == true, "wg-quick's nft table stayed")
    _ = waitUntil(timeout: 30) { (try? lastStop(ns, db)) != nil }
    let stop = try #require(try lastStop(ns, db))
    #expect(stop["reason"] as? String == "free-limit")
    #expect(stop["detail"] as? String == "stopped through wg-quick \(pair.left.configPath)", "\(stop)")

    // In the pause, the user's usual `wg-quick up` is refused by the gate in PreUp: nothing made.
    let refused = try pair.left.up()
    #expect(refused.status == 1, "\(refused.errors)")
    #expect(refused.errors.contains("free plan pause: you can reconnect in"), "\(refused.errors)")
    #expect(!ns.hasLink("wg0"))
    #expect(pair.left.holders().isEmpty)
    #expect(try !ns.rules().contains("51820"))

    // After the pause, the same command works and the tunnel carries traffic again.
    _ = waitUntil(timeout: 12) { Date() > pauseEnds.addingTimeInterval(0.3) }
    let again = try pair.left.up()
    #expect(again.status == 0, "\(again.errors)")
    #expect(try ns.ping("169.254.101.66"))
    try enforcer.waitForError("opened a window", timeout: 5)
    let second = try ns.kernelCounters("wg0")
    // The ledger bridged the recreated device: its totals hold both connections.
    let totals = try #require(
      interface(try parseStatus(ns.vpnstat("status", "--json", "-i", "wg0", "--db", db)), named: "wg0"))
    let total = try #require(uint(totals["total_rx_bytes"]))
    #expect(total >= first + second.rxBytes, "total \(total), connections \(first) + \(second.rxBytes)")
    #expect((uint(totals["resets"]) ?? 0) >= 1)
    #expect(enforcer.stop() == 0)
  }
}

/// The session object of `vpnstat session --json` run in `ns`.
func sessionObject(_ ns: TestNamespace, _ db: String) throws -> [String: Any] {
  let result = try ns.vpnstat("session", "--json", "--db", db)
  let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
  return object?["session"] as? [String: Any] ?? [:]
}

/// The ledger's received bytes for wg0, as `status --json` shows them now.
func totalReceived(_ ns: TestNamespace, _ db: String, _ name: String = "wg0") throws -> UInt64? {
  uint(
    interface(try parseStatus(ns.vpnstat("status", "--json", "-i", name, "--db", db)), named: name)?["total_rx_bytes"])
}

func lastStop(_ ns: TestNamespace, _ db: String) throws -> [String: Any]? {
  try sessionObject(ns, db)["last_stop"] as? [String: Any]
}
