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

  @Test(
    "WireGuard: where configurations live is one setting — an enforcer looking elsewhere says so when it starts, and `connect --wg-quick-dir` warns naming both; with wg-quick-dir in vpnstat.conf both find it and the deadline stops wireguard-go too"
  )
  func oneConfigurationPlace() throws {
    let files = try TemporaryDirectory("mwgdir")
    let pair = try WireGuardPair("mwgdir", subnet: 149, leftPeerLines: ["PersistentKeepalive = 25"])
    let ns = pair.link.left
    let elsewhere = files.file("elsewhere")
    try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: false)
    try pair.right.up()

    // The enforcer started without the directory connect is given: it says where it looks.
    let db = files.file("v.db")
    let blind = try pair.left.start(
      Built.vpnstat,
      ["enforce", "wg0", "--db", db, "--session-length", "10m", "--interval", "1s", "--wg-quick-dir", elsewhere])
    defer { blind.stop() }
    try blind.waitForError("no wg-quick configuration for wg0 (looked for \(elsewhere)/wg0.conf")
    try blind.waitForError("wg-quick-dir in vpnstat.conf")
    let warned = try pair.left.run(
      Built.vpnstat, ["connect", "wg0", "--db", db, "--wg-quick-dir", pair.left.directory])
    #expect(warned.status == 0, "\(warned.status): \(warned.errors)")
    #expect(
      warned.errors.contains(
        "vpnstat enforce wg0 (pid \(blind.pid)) looks for wg-quick configurations in \(elsewhere)"), "\(warned.errors)")
    #expect(warned.errors.contains("would not find \(pair.left.configPath)"), "\(warned.errors)")
    #expect(blind.stop() == 0)
    _ = try pair.left.down()

    // One setting, read by both: the enforcer finds what connect started, and its stop is wg-quick's.
    let config = files.file("vpnstat.conf")
    try Data("wg-quick-dir = \(pair.left.directory)\n".utf8).write(to: URL(fileURLWithPath: config))
    let db2 = files.file("v2.db")
    let enforcer = try pair.left.start(
      "/usr/bin/env",
      [
        "VPNSTAT_CONFIG=\(config)", Built.vpnstat, "enforce", "wg0", "--db", db2, "--session-length", "3s",
        "--pause-length", "1m", "--interval", "1s",
      ])
    defer { enforcer.stop() }
    try enforcer.waitForError("a wg-quick stop of wg0 runs wg-quick down \(pair.left.configPath)")
    let connected = try pair.left.run(
      "/usr/bin/env", ["VPNSTAT_CONFIG=\(config)", Built.vpnstat, "connect", "wg0", "--db", db2])
    #expect(connected.status == 0, "\(connected.status): \(connected.errors)")
    #expect(!connected.errors.contains("vpnstat enforce"), "\(connected.errors)")
    try #require(waitUntil(timeout: 10) { !ns.hasLink("wg0") } != nil, "wg0 never went: \(enforcer.errors)")
    #expect(waitUntil(timeout: 5) { pair.left.holders().isEmpty } != nil, "wireguard-go was left running")
    _ = waitUntil(timeout: 10) { (try? lastStop(ns, db2)) != nil }
    let stop = try #require(try lastStop(ns, db2))
    #expect(stop["reason"] as? String == "free-limit", "\(stop)")
    #expect(stop["detail"] as? String == "stopped through wg-quick \(pair.left.configPath)", "\(stop)")
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
