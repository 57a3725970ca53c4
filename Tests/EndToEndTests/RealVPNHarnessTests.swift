import Foundation
import Testing

@testable import VPNStatTestSupport

/// The real-VPN harness (Support/RealVPN.swift) works: each kind of tunnel comes up for real
/// inside namespaces, can be observed the way docs/real-vpns.md describes, goes down the way its
/// manager expects, and leaves nothing behind. A missing program fails with "TOOL is missing".
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct RealVPNHarnessTests {
  @Test(
    "WireGuard: wg-quick up on both sides (wireguard-go), a ping crosses, the handshake shows in wg and the UAPI, down cleans up"
  )
  func wireGuard() throws {
    let pair = try WireGuardPair("rwg", subnet: 91)
    let ns = pair.link.left
    let started = Date()
    try pair.upBoth()
    // The device is a tun (netlink kind `tun`, never `wireguard` here) held by wireguard-go.
    let details = try ns.linkDetails("wg0")
    #expect(details.kind == "tun")
    #expect(details.flags.contains("UP"))
    let holders = pair.left.holders()
    #expect(holders.map(\.command) == ["wireguard-go"], "\(holders)")
    #expect(FileManager.default.fileExists(atPath: pair.left.controlSocket))
    #expect(try pair.left.dump().first?.latestHandshake == nil, "a handshake before any traffic")
    // Traffic makes the handshake; both families cross.
    #expect(try ns.ping("169.254.91.66"))
    #expect(try ns.ping("fd00:91::2"))
    let peer = try #require(try pair.left.dump().first)
    #expect(peer.publicKey == pair.right.publicKey)
    #expect(peer.endpoint == pair.link.rightAddress + ":51820")
    let handshake = try #require(peer.latestHandshake, "no handshake after a ping")
    #expect(handshake.timeIntervalSince1970 >= started.timeIntervalSince1970.rounded(.down))
    #expect(peer.rxBytes > 0 && peer.txBytes > 0)
    // The same from wireguard-go's control socket, with nanoseconds.
    let raw = try pair.left.uapiGet()
    #expect(raw.hasSuffix("errno=0\n\n"), "\(raw)")
    let viaSocket = try #require(try pair.left.uapiPeers().first)
    #expect(viaSocket.publicKey == pair.right.publicKey)
    let precise = try #require(viaSocket.latestHandshake)
    #expect(precise >= started, "handshake \(precise) before the start \(started)")
    #expect(abs(precise.timeIntervalSince(handshake)) < 1)
    let latest = try pair.left.wg("show", "wg0", "latest-handshakes")
    #expect(latest.output.hasPrefix(pair.right.publicKey + "\t"), "\(latest.output)")
    let transfer = try pair.left.wg("show", "wg0", "transfer")
    #expect(transfer.output.hasPrefix(pair.right.publicKey + "\t"), "\(transfer.output)")
    // wg-quick down: device, control socket and daemon gone; the other side untouched.
    let down = try pair.left.down()
    #expect(down.status == 0, "\(down.errors)")
    #expect(!ns.hasLink("wg0"))
    #expect(!FileManager.default.fileExists(atPath: pair.left.controlSocket))
    #expect(waitUntil(timeout: 30) { holders.allSatisfy { !isAlive($0.pid) } } != nil, "wireguard-go outlived down")
    #expect(pair.link.right.hasLink("wg0"))
  }

  @Test(
    "WireGuard full tunnel: the fwmark rule and table 51820; a bare link-down empties the table but keeps the rule, wg-quick up then finds the device, wg-quick down cleans up"
  )
  func wireGuardFullTunnel() throws {
    let pair = try WireGuardPair("rwf", subnet: 92, fullTunnelLeft: true)
    let ns = pair.link.left
    #expect(try !ns.rules().contains("51820"))
    try pair.upBoth()
    let rules = try ns.rules()
    #expect(rules.contains("not from all fwmark 0xca6c lookup 51820"), "\(rules)")
    #expect(rules.contains("from all lookup main suppress_prefixlength 0"), "\(rules)")
    #expect(try ns.routes(table: "51820").contains("default dev wg0"))
    #expect(try ns.run("/usr/sbin/nft", ["list", "tables"]).output.contains("table ip wg-quick-wg0"))
    #expect(try ns.ping("169.254.92.66"))
    // A default route in main, as a real machine has: everything else goes through the tunnel …
    try ns.ip("route", "add", "default", "via", pair.link.rightAddress)
    #expect(try ns.ip("route", "get", "10.1.2.3").output.contains("dev wg0 table 51820"))
    // … until a bare link-down: the kernel drops table 51820's routes, the rule stays, traffic
    // leaves on the underlying link.
    try ns.ip("link", "set", "wg0", "down")
    #expect(try ns.rules().contains("lookup 51820"))
    #expect(try ns.routes(table: "51820").isEmpty)
    #expect(try ns.ip("route", "get", "10.1.2.3").output.contains("dev \(pair.link.leftName)"))
    #expect(try ns.run("/usr/sbin/nft", ["list", "tables"]).output.contains("table ip wg-quick-wg0"))
    let again = try pair.left.up()
    #expect(again.status == 1)
    #expect(again.errors.contains("`wg0' already exists"), "\(again.errors)")
    // `ip link set up` brings the device back without wg-quick's routes.
    try ns.ip("link", "set", "wg0", "up")
    #expect(try ns.routes(table: "51820").isEmpty)
    // wg-quick down still undoes everything.
    let down = try pair.left.down()
    #expect(down.status == 0, "\(down.errors)")
    #expect(try !ns.rules().contains("51820"))
    #expect(!ns.hasLink("wg0"))
    #expect(try !ns.run("/usr/sbin/nft", ["list", "tables"]).output.contains("wg-quick-wg0"))
  }

  @Test("WireGuard hooks: a PreUp gate that allows lets wg-quick up run PostUp; one that refuses creates nothing")
  func wireGuardHooks() throws {
    let files = try TemporaryDirectory("rwh")
    let db = files.file("v.db")
    let marker = files.file("post-up")
    let pair = try WireGuardPair(
      "rwh", subnet: 93,
      leftHooks: ["PreUp = \(Built.vpnstat) session check --db \(db)", "PostUp = touch \(marker)"])
    let ns = pair.link.left
    let allowed = try pair.left.up()
    #expect(allowed.status == 0, "\(allowed.errors)")
    #expect(allowed.errors.contains("[#] \(Built.vpnstat) session check --db \(db)"), "\(allowed.errors)")
    #expect(allowed.output.contains("connecting opens"), "\(allowed.output)")
    #expect(FileManager.default.fileExists(atPath: marker))
    #expect(try pair.left.down().status == 0)
    try FileManager.default.removeItem(atPath: marker)
    // The gate fails (here: a file that is not a vpnstat database): wg-quick stops before
    // creating the device, and PostUp never runs.
    try Data("not a database\n".utf8).write(to: URL(fileURLWithPath: db))
    let refused = try pair.left.up()
    #expect(refused.status == 1, "\(refused.output) \(refused.errors)")
    #expect(refused.errors.contains("is not a vpnstat database"), "\(refused.errors)")
    #expect(!ns.hasLink("wg0"))
    #expect(pair.left.holders().isEmpty)
    #expect(!FileManager.default.fileExists(atPath: marker))
  }

  @Test(
    "OpenVPN: CONNECTED through the management socket, a ping crosses, fdinfo names the client as the tun's holder, signal SIGTERM removes the tun"
  )
  func openVPN() throws {
    let pair = try OpenVPNPair("rov", subnet: 94)
    let ns = pair.link.left
    try pair.startServer()
    try pair.startClient()
    let client = try #require(pair.client)
    #expect(["CONNECTING", "ASSIGN_IP", "CONNECTED"].contains(try pair.state()))
    #expect(pair.waitForState("CONNECTED", timeout: 10) != nil, "never CONNECTED: \(client.output)")
    let state = try pair.management("state")
    #expect(state.contains(",CONNECTED,SUCCESS,\(pair.clientAddress),\(pair.link.rightAddress),1194,"), "\(state)")
    #expect(try ns.ping(pair.serverAddress))
    // The process holding the tun, from /proc/PID/fdinfo's `iff:` line in this namespace.
    let holders = tunHolders(device: pair.device, netnsInode: try #require(ns.inode))
    #expect(holders.map(\.pid) == [client.pid], "\(holders)")
    #expect(holders.first?.command == "openvpn")
    #expect(try pair.management("pid") == "SUCCESS: pid=\(client.pid)")
    // Stopped through the management interface: the tun goes with the process.
    let answer = try pair.management("signal SIGTERM")
    #expect(answer.hasPrefix("SUCCESS: signal SIGTERM thrown"), "\(answer)")
    #expect(waitUntil(timeout: 30) { !ns.hasLink(pair.device) } != nil, "the tun outlived SIGTERM")
    #expect(client.child.wait(timeout: 5) == 0)
    #expect(!FileManager.default.fileExists(atPath: pair.managementSocket))
  }

  @Test(
    "NetworkManager with its own D-Bus: a tun connection activates through the pre-up dispatcher, is found from its device, stays 'activated' after a bare link-down, deactivates"
  )
  func networkManager() throws {
    let nm = try NetworkManagerNamespace("rnm")
    let log = nm.directory.file("dispatcher.log")
    try nm.dispatcherScript("pre-up.d/50-log", "echo \"$2 $1 $CONNECTION_ID $CONNECTION_UUID\" >> \(log)")
    let uuid = try nm.addTunConnection("vpnt", device: "nmtun0", address: "169.254.95.1/30", autoconnect: false)
    #expect(try !nm.autoconnect("vpnt"))
    #expect(try nm.activeConnections().allSatisfy { $0.name != "vpnt" })
    try nm.nmcliChecked("connection", "up", "vpnt")
    let active = try nm.activeConnections().first { $0.name == "vpnt" }
    #expect(active == .init(name: "vpnt", uuid: uuid, type: "tun", device: "nmtun0", state: "activated"))
    let device = try #require(try nm.deviceConnection("nmtun0"))
    #expect(device.state == "100 (connected)" && device.name == "vpnt" && device.uuid == uuid, "\(device)")
    let dispatched = String(decoding: contents(log) ?? Data(), as: UTF8.self)
    #expect(dispatched.contains("pre-up nmtun0 vpnt \(uuid)"), "dispatcher log: \(dispatched)")
    // A link taken down behind NM's back: NM still reports the connection activated.
    try nm.ns.ip("link", "set", "nmtun0", "down")
    #expect(try waitUntil(timeout: 5) { try nm.ns.linkDetails("nmtun0").flags.contains("UP") == false } != nil)
    #expect(try holdsThroughout(0.5) { try nm.activeConnections().first { $0.name == "vpnt" }?.state == "activated" })
    // Deactivated the way NM expects: the connection is inactive and its device is gone.
    try nm.nmcliChecked("connection", "down", "vpnt")
    #expect(try nm.activeConnections().allSatisfy { $0.name != "vpnt" })
    #expect(waitUntil(timeout: 30) { !nm.ns.hasLink("nmtun0") } != nil)
    try nm.nmcliChecked("connection", "modify", "vpnt", "connection.autoconnect", "yes")
    #expect(try nm.autoconnect("vpnt"))
  }

  @Test(
    "NetworkManager's OpenVPN plugin: an NM VPN connection to a real server; its openvpn holds the tun and names the connection's UUID in its management socket"
  )
  func networkManagerOpenVPN() throws {
    try RealVPNTool.require("nm-openvpn-service")
    let pair = try OpenVPNPair("rno", subnet: 96, device: "tun8")
    // NM's openvpn uses --nobind (a random source port): the server must accept it (--float).
    try pair.startServer(extra: ["--float"])
    let nm = try NetworkManagerNamespace("rno", in: pair.link.left)
    let uuid = try nm.addOpenVPNConnection("ovpn", to: pair)
    try nm.nmcliChecked("connection", "up", "ovpn")
    let vpn = try nm.activeConnections().first { $0.name == "ovpn" }
    // The VPN's DEVICE is the underlying link; the tun gets a generated external connection.
    #expect(
      vpn?.type == "vpn" && vpn?.device == pair.link.leftName && vpn?.state == "activated", "\(String(describing: vpn))"
    )
    #expect(try nm.deviceConnection("tun8")?.name == "tun8")
    // The tun's holder is NM's openvpn; its management socket is named after the connection.
    let holders = tunHolders(device: "tun8", netnsInode: try #require(nm.ns.inode))
    let holder = try #require(holders.first, "nobody holds tun8")
    let argv = try String(contentsOfFile: "/proc/\(holder.pid)/cmdline", encoding: .utf8)
      .split(separator: "\0").map(String.init)
    let management = try #require(argv.firstIndex(of: "--management").map { argv[$0 + 1] })
    #expect(management == "/var/run/NetworkManager/nm-openvpn-\(uuid)")
    // "activated" comes before the peer answers (static key): the peer is confirmed from the
    // management socket, which lives in NM's mount namespace (reached through /proc/PID/root;
    // /var/run is an absolute symlink, so the path is spelled with /run).
    let socket = "/proc/\(holder.pid)/root/run/" + management.dropFirst("/var/run/".count)
    let connected = waitUntil(timeout: 10) {
      (try? openVPNStateName(openVPNManagement(socket, "state"))) == "CONNECTED"
    }
    #expect(connected != nil, "NM's openvpn never CONNECTED")
    #expect(try nm.ns.ping(pair.serverAddress))
    // nmcli connection down returns at once; the tun goes when openvpn has exited (~1 s with
    // --explicit-exit-notify).
    try nm.nmcliChecked("connection", "down", "ovpn")
    #expect(waitUntil(timeout: 30) { !nm.ns.hasLink("tun8") } != nil, "tun8 outlived nmcli connection down")
    #expect(try nm.activeConnections().allSatisfy { $0.name != "ovpn" })
    withExtendedLifetime(pair) {}
  }
}

/// The harness's own rules, without root.
struct RealVPNHarnessRuleTests {
  @Test("a missing program fails the test with 'TOOL is missing', never a skip")
  func missingTool() {
    #expect(throws: (any Error).self) { try RealVPNTool.require("sh", "vpnstat-no-such-vpn-tool") }
    do {
      try RealVPNTool.require("wireguard-go-not-installed")
    } catch {
      #expect("\(error)" == "wireguard-go-not-installed is missing")
    }
    let packaged = (try? RealVPNTool.require("sh")) != nil
    #expect(packaged)
  }

  @Test("keys: UAPI hex becomes wg's base64; nmcli -t lines split on unescaped colons")
  func conversions() {
    #expect(base64(fromHex: "00ff10") == "AP8Q")
    #expect(splitTerse("a\\:b:c\\\\:d") == ["a:b", "c\\", "d"])
  }
}
