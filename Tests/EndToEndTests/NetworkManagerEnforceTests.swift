import Foundation
import Testing

@testable import VPNStatTestSupport

/// The enforcer with `--action auto` on NetworkManager connections, for real (NetworkManager
/// 1.42 with its own D-Bus in a namespace), and docs/guide.md's "With NetworkManager" recipe: the
/// shipped dispatcher script as the gate, the enforcer deactivating through NetworkManager.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct NetworkManagerEnforceTests {
  /// contrib's dispatcher script, installed as docs/guide.md says, with vpnstat pointing at the
  /// test's binary and database (a wrapper in place of /usr/local/bin/vpnstat).
  static func installDispatcher(_ nm: NetworkManagerNamespace, db: String) throws {
    let wrapper = nm.directory.file("vpnstat")
    try Data("#!/bin/sh\nVPNSTAT_DB='\(db)' exec '\(Built.vpnstat)' \"$@\"\n".utf8).write(
      to: URL(fileURLWithPath: wrapper))
    chmod(wrapper, 0o755)
    let shipped = try String(
      contentsOf: Built.packageRoot.appendingPathComponent("contrib/networkmanager-dispatcher/90-vpnstat"),
      encoding: .utf8)
    let script = shipped.replacingOccurrences(of: "vpnstat=/usr/local/bin/vpnstat", with: "vpnstat=\(wrapper)")
    try #require(script != shipped, "the dispatcher script no longer sets vpnstat=/usr/local/bin/vpnstat")
    let path = nm.etc + "/dispatcher.d/90-vpnstat"
    try Data(script.utf8).write(to: URL(fileURLWithPath: path))
    chmod(path, 0o755)
    try FileManager.default.createSymbolicLink(
      atPath: nm.etc + "/dispatcher.d/pre-up.d/90-vpnstat", withDestinationPath: "../90-vpnstat")
  }

  func isActive(_ nm: NetworkManagerNamespace, _ name: String) -> Bool {
    (try? nm.activeConnections().contains { $0.name == name && $0.state == "activated" }) ?? false
  }

  @Test(
    "NetworkManager: deactivated at the deadline, down through the pause with autoconnect held off (an up undone at once), autoconnect given back after it, and nmcli connection up works again"
  )
  func tunConnection() throws {
    let nm = try NetworkManagerNamespace("mnm")
    let db = nm.directory.file("v.db")
    try Self.installDispatcher(nm, db: db)
    let uuid = try nm.addTunConnection("vpnt", device: "nmtun0", address: nil, autoconnect: true)
    if waitUntil(timeout: 5, { isActive(nm, "vpnt") }) == nil { try nm.nmcliChecked("connection", "up", "vpnt") }
    #expect(isActive(nm, "vpnt"))
    let enforcer = try nm.start(
      Built.vpnstat, ["enforce", "nmtun0", "--db", db, "--session-length", "4s", "--pause-length", "8s"])
    defer { enforcer.stop() }
    try enforcer.waitForError("opened a window")
    // Who manages it, as session --json and status --json say.
    let session = try nmJSON(nm, ["session", "--json", "--db", db])["session"] as? [String: Any] ?? [:]
    let manager = session["manager"] as? [String: Any]
    #expect(manager?["kind"] as? String == "networkmanager", "\(session)")
    #expect(manager?["id"] as? String == uuid)
    let status = try nmJSON(nm, ["status", "--json", "-i", "nmtun0", "--db", db])
    #expect((interface(status, named: "nmtun0")?["manager"] as? [String: Any])?["id"] as? String == uuid)
    let ends = try #require(instant(session["session_ends_at"]))
    let pauseEnds = try #require(instant(session["pause_ends_at"]))

    // The deadline: NetworkManager itself says the connection is down (a bare link-down would
    // leave it "activated"), and its autoconnect is held off.
    let down = try #require(waitUntil(timeout: 8) { !isActive(nm, "vpnt") }, "\(enforcer.errors)")
    #expect(down.timeIntervalSince(ends) < 1.5, "deadline → deactivated took \(down.timeIntervalSince(ends)) s")
    #expect(waitUntil(timeout: 30) { !nm.ns.hasLink("nmtun0") } != nil)
    _ = waitUntil(timeout: 3) { (try? nm.autoconnect("vpnt")) == false }
    #expect(try !nm.autoconnect("vpnt"), "autoconnect not held off for the pause")
    // The stop is recorded once the manager's own stop and word are in (after the link is down):
    // waited for, not read at once.
    var recorded: [String: Any]?
    _ = waitUntil(timeout: 10) {
      recorded =
        (try? nmJSON(nm, ["session", "--json", "--db", db]))?["session"].flatMap {
          ($0 as? [String: Any])?["last_stop"]
        } as? [String: Any]
      return recorded?["reason"] != nil
    }
    let stop = try #require(recorded, "no stop recorded: \(enforcer.errors)")
    #expect(stop["reason"] as? String == "free-limit")
    #expect(stop["detail"] as? String == "stopped through networkmanager 'vpnt' (\(uuid))", "\(stop)")

    // In the pause: `nmcli connection up` is refused by the gate and undone by the enforcer.
    _ = try nm.nmcli("connection", "up", "vpnt")
    let undone = waitUntil(timeout: 4) { !isActive(nm, "vpnt") && !nm.ns.hasLink("nmtun0") }
    #expect(undone != nil, "an up in the pause stayed: \(enforcer.errors)")
    #expect(holdsThroughout(1.5) { !isActive(nm, "vpnt") }, "it came back during the pause")
    #expect(try !nm.autoconnect("vpnt"))

    // After the pause: the user's autoconnect is back, and the usual command works.
    let restored = waitUntil(timeout: 14) { Date() > pauseEnds && (try? nm.autoconnect("vpnt")) == true }
    #expect(
      restored.map { $0.timeIntervalSince(pauseEnds) < 2 } == true, "autoconnect not given back: \(enforcer.errors)")
    let up = try nm.nmcli("connection", "up", "vpnt")
    #expect(up.status == 0, "\(up.errors)")
    #expect(isActive(nm, "vpnt"))
    try enforcer.waitForError("opened a window until", timeout: 5)
    #expect(enforcer.stop() == 0)
    #expect(try nm.autoconnect("vpnt"))
  }

  @Test(
    "NetworkManager's OpenVPN plugin: the tun's holder names the NM connection; the enforcer deactivates it through NetworkManager at the deadline"
  )
  func openVPNConnection() throws {
    try RealVPNTool.require("nm-openvpn-service")
    let pair = try OpenVPNPair("mno", subnet: 106, device: "tun8")
    try pair.startServer(extra: ["--float"])
    let nm = try NetworkManagerNamespace("mno", in: pair.link.left)
    let db = nm.directory.file("v.db")
    let uuid = try nm.addOpenVPNConnection("ovpn", to: pair)
    try nm.nmcliChecked("connection", "up", "ovpn")
    #expect(waitUntil(timeout: 5) { nm.ns.hasLink("tun8") } != nil)
    let status = try nmJSON(nm, ["status", "--json", "-i", "tun8", "--db", db])
    let manager = interface(status, named: "tun8")?["manager"] as? [String: Any]
    #expect(manager?["kind"] as? String == "networkmanager", "\(String(describing: manager))")
    #expect(manager?["id"] as? String == uuid)

    let enforcer = try nm.start(
      Built.vpnstat, ["enforce", "tun8", "--db", db, "--session-length", "3s", "--pause-length", "4s"])
    defer { enforcer.stop() }
    try enforcer.waitForError("opened a window")
    let session = try nmJSON(nm, ["session", "--json", "--db", db])["session"] as? [String: Any] ?? [:]
    let ends = try #require(instant(session["session_ends_at"]))
    let down = try #require(waitUntil(timeout: 8) { !isActive(nm, "ovpn") }, "\(enforcer.errors)")
    #expect(down.timeIntervalSince(ends) < 1.5, "deadline → deactivated took \(down.timeIntervalSince(ends)) s")
    // The tun goes when NM's openvpn has told its peer (--explicit-exit-notify, about 1 s).
    #expect(waitUntil(timeout: 30) { !nm.ns.hasLink("tun8") } != nil, "tun8 stayed")
    _ = waitUntil(timeout: 30) { (try? nmStop(nm, db)) != nil }
    let stop = try #require(try nmStop(nm, db))
    #expect(stop["reason"] as? String == "free-limit")
    #expect(
      (stop["detail"] as? String)?.hasPrefix("stopped through networkmanager 'ovpn' (\(uuid))") == true, "\(stop)")
    #expect(enforcer.stop() == 0)
    withExtendedLifetime(pair) {}
  }

  @Test(
    "NetworkManager's OpenVPN plugin: a data cap reached inside the session deactivates the connection, recorded once as data-cap — the tun going a second later is the stop's doing, not 'vanished'"
  )
  func capStop() throws {
    try RealVPNTool.require("nm-openvpn-service")
    let pair = try OpenVPNPair("mnocap", subnet: 107, device: "tun9")
    try pair.startServer(extra: ["--float"])
    let nm = try NetworkManagerNamespace("mnocap", in: pair.link.left)
    let db = nm.directory.file("v.db")
    #expect(try nm.run(Built.vpnstat, ["plan", "free", "--data-cap", "100kB", "--per", "day", "--db", db]).status == 0)
    let uuid = try nm.addOpenVPNConnection("ovpn", to: pair)
    try nm.nmcliChecked("connection", "up", "ovpn")
    #expect(waitUntil(timeout: 5) { nm.ns.hasLink("tun9") } != nil)
    let enforcer = try nm.start(
      Built.vpnstat,
      ["enforce", "tun9", "--db", db, "--session-length", "10m", "--pause-length", "10m", "--interval", "1s"])
    defer { enforcer.stop() }
    try enforcer.waitForError("opened a window")
    try nm.ns.peerRun("udp-send", pair.serverAddress, "9800", "300", "1000")
    try #require(waitUntil(timeout: 10) { !isActive(nm, "ovpn") } != nil, "never deactivated: \(enforcer.errors)")
    #expect(waitUntil(timeout: 30) { !nm.ns.hasLink("tun9") } != nil, "tun9 stayed")
    try enforcer.waitForError("went away after this enforcer's stop (data-cap)")
    #expect(try stops(db).map(\.reason) == [.dataCap], "\(enforcer.errors)")
    #expect(!enforcer.errors.contains("by something else"), "\(enforcer.errors)")
    let stop = try #require(try nmStop(nm, db))
    #expect(
      (stop["detail"] as? String)?.hasPrefix("stopped through networkmanager 'ovpn' (\(uuid))") == true, "\(stop)")
    #expect(enforcer.stop() == 0)
    withExtendedLifetime(pair) {}
  }

  func nmJSON(_ nm: NetworkManagerNamespace, _ arguments: [String]) throws -> [String: Any] {
    let result = try nm.run(Built.vpnstat, arguments)
    guard result.status == 0, let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
    else { throw TestSetupError("vpnstat \(arguments) exited \(result.status): \(result.errors)") }
    return object
  }

  func nmStop(_ nm: NetworkManagerNamespace, _ db: String) throws -> [String: Any]? {
    (try nmJSON(nm, ["session", "--json", "--db", db])["session"] as? [String: Any])?["last_stop"] as? [String: Any]
  }
}
