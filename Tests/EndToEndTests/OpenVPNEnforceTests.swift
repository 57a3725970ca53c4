import Foundation
import Testing

@testable import VPNStatTestSupport

/// The enforcer with `--action auto` on a real OpenVPN client (static key, UDP between two
/// namespaces): stopped through its management socket when it has one, else with SIGTERM; the
/// docs/guide.md's "With OpenVPN" recipe.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct OpenVPNEnforceTests {
  @Test(
    "OpenVPN: found as the tun's holder and stopped at the deadline, through `signal SIGTERM` on its management socket (else SIGTERM); the tun gone, the stop recorded",
    arguments: [true, false])
  func deadline(management: Bool) throws {
    let subnet = management ? 102 : 103
    let pair = try OpenVPNPair("mov\(subnet)", subnet: subnet)
    let ns = pair.link.left
    let db = pair.directory.file("v.db")
    try pair.startServer()
    try pair.startClient(management: management)
    let client = try #require(pair.client)
    if management { #expect(pair.waitForState("CONNECTED", timeout: 10) != nil, "never CONNECTED: \(client.output)") }
    #expect(try ns.ping(pair.serverAddress))
    let status = try parseStatus(ns.vpnstat("status", "--json", "-i", pair.device, "--db", db))
    let manager = interface(status, named: pair.device)?["manager"] as? [String: Any]
    #expect(manager?["kind"] as? String == "openvpn", "\(String(describing: manager))")
    #expect(manager?["id"] as? String == (management ? pair.managementSocket : "pid \(client.pid)"))

    let enforcer = try ns.start(
      Built.vpnstat, ["enforce", pair.device, "--db", db, "--session-length", "3s", "--pause-length", "4s"])
    defer { enforcer.stop() }
    try enforcer.waitForError("enforcing the free plan on \(pair.device) (auto)")
    let ends = try #require(instant(try sessionObject(ns, db)["session_ends_at"]))
    let gone = try #require(waitUntil(timeout: 8) { !ns.hasLink(pair.device) }, "\(enforcer.errors)")
    #expect(
      gone.timeIntervalSince(ends) < 1.0,
      "deadline → tun gone took \(gone.timeIntervalSince(ends)) s: \(enforcer.errors)")
    #expect(client.child.wait(timeout: 5) == 0, "openvpn did not exit cleanly: \(client.output)")
    if management {
      // It was asked on its management socket, not killed.
      #expect(client.output.contains("MANAGEMENT: CMD 'signal SIGTERM'"), "\(client.output.suffix(800))")
      #expect(!FileManager.default.fileExists(atPath: pair.managementSocket))
    }
    _ = waitUntil(timeout: 30) { (try? lastStop(ns, db)) != nil }
    let stop = try #require(try lastStop(ns, db))
    #expect(stop["reason"] as? String == "free-limit")
    #expect(stop["detail"] as? String == "stopped through openvpn (pid \(client.pid))", "\(stop)")
  }

  @Test(
    "OpenVPN: a data cap reached inside the session stops it through its management socket, recorded once as data-cap — its tun going away after is the stop's doing, not 'vanished'"
  )
  func capStop() throws {
    let pair = try OpenVPNPair("movcap", subnet: 104)
    let ns = pair.link.left
    let db = pair.directory.file("v.db")
    #expect(try ns.vpnstat("plan", "free", "--data-cap", "100kB", "--per", "day", "--db", db).status == 0)
    try pair.startServer()
    try pair.startClient()
    let client = try #require(pair.client)
    #expect(pair.waitForState("CONNECTED", timeout: 10) != nil, "never CONNECTED: \(client.output)")
    let enforcer = try ns.start(
      Built.vpnstat,
      ["enforce", pair.device, "--db", db, "--session-length", "10m", "--pause-length", "10m", "--interval", "1s"])
    defer { enforcer.stop() }
    try enforcer.waitForError("opened a window")
    // 300 kB into the tunnel: past the cap at the enforcer's next sample.
    try ns.peerRun("udp-send", pair.serverAddress, "9800", "300", "1000")
    try #require(waitUntil(timeout: 10) { !ns.hasLink(pair.device) } != nil, "never went: \(enforcer.errors)")
    #expect(client.child.wait(timeout: 5) == 0, "openvpn did not exit cleanly: \(client.output)")
    #expect(client.output.contains("MANAGEMENT: CMD 'signal SIGTERM'"), "\(client.output.suffix(800))")
    try enforcer.waitForError("went away after this enforcer's stop (data-cap)")
    #expect(try stops(db).map(\.reason) == [.dataCap], "\(enforcer.errors)")
    #expect(!enforcer.errors.contains("by something else"), "\(enforcer.errors)")
    let stop = try #require(try lastStop(ns, db))
    #expect(stop["detail"] as? String == "stopped through openvpn (pid \(client.pid))", "\(stop)")
    #expect(try ns.vpnstat("session", "--db", db).output.contains("last stop: data-cap"))
  }
}
