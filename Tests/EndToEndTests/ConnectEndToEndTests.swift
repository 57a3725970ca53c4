import Foundation
import Glibc
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// `vpnstat connect` and `disconnect` against the real programs, in namespaces of their own:
/// WireGuard through wg-quick and wireguard-go (a peer that answers, one that does not, the
/// pause), NetworkManager with its own D-Bus, and a bare tun with the database held locked.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct ConnectEndToEndTests {
  /// A free-plan window whose session ended 50 s ago, with a 45-minute pause: the gate refuses,
  /// with 44 min and some seconds left however many seconds the run takes (the start is cut to
  /// whole seconds, so a window exactly a minute old read "43 min 59 s" now and then).
  static func pause(_ db: String) throws {
    let store = try #require(try Store.open(StoreLocation(path: db), intent: .write))
    try store.updateSession { record in
      record.window = SessionWindow.open(
        at: Timestamp(seconds: Int64(Date().timeIntervalSince1970)) - .seconds(950),
        lengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)))
    }
  }

  static func object(_ result: CommandResult) throws -> [String: Any] {
    try #require(
      try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any],
      "not JSON (\(result.status)): \(result.output) \(result.errors)")
  }

  @Test(
    "WireGuard, the peer up: connect says accepted, waits for a handshake newer than the start, exits 0 with its time; disconnect runs wg-quick down and records user"
  )
  func wireGuardPeerUp() throws {
    let pair = try WireGuardPair("cwgup", subnet: 121, leftPeerLines: ["PersistentKeepalive = 25"])
    let files = try TemporaryDirectory("cwgup")
    let db = files.file("v.db")
    try pair.right.up()
    let arguments = ["wg0", "--db", db, "--wg-quick-dir", pair.left.directory]
    let asked = Date()
    let connected = try pair.left.run(Built.vpnstat, ["connect"] + arguments)
    #expect(connected.status == 0, "\(connected.status): \(connected.output) \(connected.errors)")
    let lines = connected.output.split(separator: "\n").map(String.init)
    #expect(
      lines.first
        == "accepted by wg-quick (\(pair.left.configPath)); waiting up to 30 s for a WireGuard handshake on wg0",
      "\(connected.output)")
    #expect(lines.last?.hasPrefix("connected: a WireGuard handshake on wg0, ") == true, "\(connected.output)")
    #expect(lines.last?.hasSuffix(" s after the start") == true, "\(connected.output)")
    #expect(Date().timeIntervalSince(asked) < 10)
    // Real: wg0 exists, wireguard-go holds it, and wg itself saw the handshake.
    #expect(pair.left.ns.hasLink("wg0"))
    #expect(pair.left.holders().map(\.command) == ["wireguard-go"])
    let handshake = try #require(try pair.left.dump().first?.latestHandshake, "wg saw no handshake")
    #expect(handshake.timeIntervalSince(asked) > -1.5)
    #expect(try pair.left.ns.ping("169.254.121.66"))

    let stopped = try pair.left.run(Built.vpnstat, ["disconnect", "--json"] + arguments)
    #expect(stopped.status == 0, "\(stopped.errors)")
    let stop = try Self.object(stopped)
    #expect(stop["outcome"] as? String == "disconnected", "\(stop)")
    #expect(stop["recorded"] as? Bool == true)
    #expect(!pair.left.ns.hasLink("wg0"))
    let last = try #require(try lastStop(pair.left.ns, db))
    #expect(last["reason"] as? String == "user")
    #expect(last["interface"] as? String == "wg0")
    #expect(last["detail"] as? String == "vpnstat disconnect: stopped through wg-quick \(pair.left.configPath)")

    // Again, as JSON: the proof's instant is the handshake's, after the start.
    let again = try Self.object(try pair.left.run(Built.vpnstat, ["connect", "--json"] + arguments))
    #expect(again["outcome"] as? String == "connected", "\(again)")
    #expect(again["waited_for"] as? [String] == ["a WireGuard handshake on wg0"])
    let manager = again["manager"] as? [String: Any]
    #expect(manager?["kind"] as? String == "wg-quick" && manager?["id"] as? String == pair.left.configPath)
    #expect(manager?["found_by"] as? String == "configuration")
    let started = try #require(instant(again["started_at"]))
    let accepted = try #require(instant(again["accepted_at"]))
    let confirmed = try #require(instant(again["confirmed_at"]))
    #expect(started <= accepted && started < confirmed, "\(again)")
    let elapsed = try #require(again["elapsed_seconds"] as? Double)
    #expect(abs(elapsed - confirmed.timeIntervalSince(started)) < 0.01)
    _ = try pair.left.down()
  }

  @Test(
    "WireGuard without PersistentKeepalive on a quiet machine: connect sends one datagram into wg0 (TTL 1, port 9) and exits 0 with the handshake's time, within a second or two; nothing but WireGuard crosses the link under the tunnel",
    arguments: [false, true])
  func wireGuardQuietPeer(fullTunnel: Bool) throws {
    let subnet = fullTunnel ? 126 : 125
    // The full tunnel with `Table = off`: no route leads to 192.0.2.1 through wg0 (none at all),
    // so only a datagram bound to the device gets there.
    let pair = try WireGuardPair(
      "cwgq\(subnet)", subnet: subnet, leftHooks: fullTunnel ? ["Table = off"] : [], fullTunnelLeft: fullTunnel)
    let files = try TemporaryDirectory("cwgq\(subnet)")
    try pair.right.up()
    try Tool.require("/usr/bin/tcpdump")
    // What the peer decrypts: the datagram, its destination and its TTL.
    let arrived = try pair.link.right.start("/usr/bin/tcpdump", ["-i", "wg0", "-n", "-v", "-l", "udp port 9"])
    defer { arrived.stop(SIGKILL) }
    try arrived.waitForError("listening on")
    // Everything on the left's veth that is not WireGuard's own UDP: the datagram, had it left
    // any other way than through the tunnel.
    let capture = try pair.link.left.start(
      "/usr/bin/tcpdump", ["-i", pair.link.leftName, "-n", "-l", "(ip or ip6) and not udp port 51820"])
    defer { capture.stop(SIGKILL) }
    try capture.waitForError("listening on")
    let asked = Date()
    let connected = try pair.left.run(
      Built.vpnstat, ["connect", "wg0", "--db", files.file("v.db"), "--wg-quick-dir", pair.left.directory, "--json"])
    let took = Date().timeIntervalSince(asked)
    #expect(connected.status == 0, "\(connected.status): \(connected.output) \(connected.errors)")
    let report = try Self.object(connected)
    #expect(report["outcome"] as? String == "connected", "\(report)")
    #expect(report["waited_for"] as? [String] == ["a WireGuard handshake on wg0"])
    let started = try #require(instant(report["started_at"]))
    let confirmed = try #require(instant(report["confirmed_at"]), "\(report)")
    #expect(confirmed > started)
    let elapsed = try #require(report["elapsed_seconds"] as? Double)
    #expect(elapsed < 3, "the handshake came \(elapsed) s after the start")
    #expect(took < 10, "connect took \(took) s")
    // wg itself saw the handshake, with no keepalive configured.
    let peer = try #require(try pair.left.dump().first)
    #expect(peer.latestHandshake != nil)
    #expect(!(try String(contentsOfFile: pair.left.configPath, encoding: .utf8)).contains("PersistentKeepalive"))
    // The datagram arrived through the tunnel, with a TTL of 1, at the address chosen for the peer.
    #expect(try pair.right.ns.kernelCounters("wg0").rxPackets >= 1)
    _ = waitUntil(timeout: 2) { arrived.output.contains(".9: UDP") }
    arrived.stop(SIGTERM)
    let target = fullTunnel ? "192.0.2.1.9: UDP" : "169.254.\(subnet).66.9: UDP"
    #expect(arrived.output.contains(target), "\(arrived.output)")
    #expect(arrived.output.contains("ttl 1,"), "\(arrived.output)")
    // The capture sees what crosses: a ping over the veth, the one thing expected in it.
    #expect(try pair.link.left.ping(pair.link.rightAddress))
    _ = waitUntil(timeout: 2) { capture.output.contains("ICMP echo reply") }
    capture.stop(SIGTERM)
    let lines = capture.output.split(separator: "\n").filter { !$0.allSatisfy(\.isWhitespace) }
    #expect(lines.contains { $0.contains("ICMP echo request") }, "the capture saw nothing: \(capture.errors)")
    let outside = lines.filter { !$0.contains("ICMP echo") }
    #expect(outside.isEmpty, "outside the tunnel: \(outside)")
    _ = try pair.left.down()
  }

  @Test("WireGuard, the peer down: accepted, then 69 after --timeout 3s naming the missing handshake")
  func wireGuardPeerDown() throws {
    let pair = try WireGuardPair("cwgdown", subnet: 122, leftPeerLines: ["PersistentKeepalive = 25"])
    let files = try TemporaryDirectory("cwgdown")
    let asked = Date()
    let result = try pair.left.run(
      Built.vpnstat,
      ["connect", "wg0", "--db", files.file("v.db"), "--wg-quick-dir", pair.left.directory, "--timeout", "3s"])
    let took = Date().timeIntervalSince(asked)
    #expect(result.status == 69, "\(result.status): \(result.errors)")
    #expect(result.output.hasPrefix("accepted by wg-quick ("), "\(result.output)")
    #expect(
      result.errors.contains("vpnstat: accepted, but no WireGuard handshake on wg0 within 3 s"), "\(result.errors)")
    #expect(took >= 3 && took < 8, "took \(took) s")
    // Accepted is not undone: wg-quick's device is there, as wg-quick made it.
    #expect(pair.left.ns.hasLink("wg0"))
    #expect(try pair.left.dump().first?.latestHandshake == nil)
    _ = try pair.left.down()
  }

  @Test("in the pause: 75 with the gate's words; no device, no wireguard-go, no process was started")
  func wireGuardPause() throws {
    let pair = try WireGuardPair("cwgpause", subnet: 123, leftPeerLines: ["PersistentKeepalive = 25"])
    let files = try TemporaryDirectory("cwgpause")
    let db = files.file("v.db")
    try Self.pause(db)
    try pair.right.up()
    let result = try pair.left.run(
      Built.vpnstat, ["connect", "wg0", "--db", db, "--wg-quick-dir", pair.left.directory, "--json"])
    #expect(result.status == 75, "\(result.status): \(result.errors)")
    let object = try Self.object(result)
    #expect(object["outcome"] as? String == "not-allowed")
    #expect((object["message"] as? String)?.hasPrefix("free plan pause: you can reconnect in 44 min") == true)
    #expect(object["started_at"] is NSNull)
    #expect(!pair.left.ns.hasLink("wg0"))
    #expect(pair.left.holders().isEmpty)
    #expect(pair.left.ns.processIDs().isEmpty, "processes in the namespace: \(pair.left.ns.processIDs())")
    #expect(!FileManager.default.fileExists(atPath: pair.left.controlSocket))
  }

  @Test(
    "NetworkManager: connect activates the tun connection and waits for activated; disconnect deactivates it and records user"
  )
  func networkManager() throws {
    let nm = try NetworkManagerNamespace("cnm")
    let db = nm.directory.file("v.db")
    // A manual address: NetworkManager takes about 2 s to activate it, long after nmcli returned.
    let uuid = try nm.addTunConnection("vpnt", device: "nmtun0", address: "169.254.124.1/30", autoconnect: false)
    let connected = try nm.run(Built.vpnstat, ["connect", "vpnt", "--db", db, "--json"])
    #expect(connected.status == 0, "\(connected.status): \(connected.errors)")
    let report = try Self.object(connected)
    #expect(report["outcome"] as? String == "connected", "\(report)")
    #expect((report["manager"] as? [String: Any])?["id"] as? String == uuid)
    #expect(report["device"] as? String == "nmtun0")
    #expect(report["waited_for"] as? [String] == ["NetworkManager to report the connection activated"])
    let started = try #require(instant(report["started_at"]))
    let accepted = try #require(instant(report["accepted_at"]))
    let confirmed = try #require(instant(report["confirmed_at"]))
    // Accepted at once, real only once NetworkManager said activated.
    #expect(accepted.timeIntervalSince(started) < 1, "\(report)")
    #expect(confirmed.timeIntervalSince(accepted) > 1, "\(report)")
    #expect(try nm.activeConnections().contains { $0.uuid == uuid && $0.state == "activated" })

    let stopped = try nm.run(Built.vpnstat, ["disconnect", "vpnt", "--db", db])
    #expect(stopped.status == 0, "\(stopped.errors)")
    #expect(
      stopped.output.hasPrefix("disconnected: stopped through networkmanager 'vpnt' (\(uuid))"), "\(stopped.output)")
    #expect(try !nm.activeConnections().contains { $0.uuid == uuid })
    #expect(!nm.ns.hasLink("nmtun0"))
    let session = try nm.run(Built.vpnstat, ["session", "--json", "--db", db])
    let last = (try Self.object(session)["session"] as? [String: Any])?["last_stop"] as? [String: Any]
    #expect(last?["reason"] as? String == "user", "\(String(describing: last))")
    #expect(last?["interface"] as? String == "nmtun0")
    // Nothing left to stop: said, and exit 0.
    let again = try nm.run(Built.vpnstat, ["disconnect", "vpnt", "--db", db])
    #expect(again.status == 0 && again.output.hasPrefix("not connected:"), "\(again.output) \(again.errors)")
  }

  @Test(
    "a bare tun: connect sets it up and waits until it runs; disconnect takes it down with the database locked, says the stop was not recorded, exits 0"
  )
  func bareTunLockedDatabase() throws {
    let t = try EnforcedTunnel("cbare")
    #expect(try t.ns.vpnstat("plan", "free", "--db", t.db).status == 0)
    let connected = try t.ns.vpnstat("connect", t.tunnel, "--db", t.db)
    #expect(connected.status == 0, "\(connected.errors)")
    #expect(connected.output.contains("connected: \(t.tunnel) is up and running"), "\(connected.output)")
    #expect(try t.isUp())
    // Another writer of root's holds the database through a save that does not end.
    let holder = try HeldWriterLock(StoreLocation(path: t.db))
    defer { holder.release() }
    let stopped = try t.ns.vpnstat("disconnect", t.tunnel, "--db", t.db, "--json")
    #expect(stopped.status == 0, "\(stopped.status): \(stopped.errors)")
    #expect(try !t.isUp(), "a locked database kept the tunnel up")
    #expect(stopped.errors.contains("the stop was not recorded"), "\(stopped.errors)")
    let report = try Self.object(stopped)
    #expect(report["outcome"] as? String == "disconnected")
    #expect(report["recorded"] as? Bool == false)
    holder.release()
    #expect(try lastStop(t.ns, t.db) == nil, "a stop was recorded after all")
  }
}
