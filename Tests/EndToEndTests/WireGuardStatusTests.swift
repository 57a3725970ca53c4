import Foundation
import Glibc
import Testing

@testable import VPNStatTestSupport

/// What a WireGuard tunnel really carried, in `status` and `watch`, against a real wireguard-go
/// pair (the harness in RealVPN.swift): the peers as wg sees them, "never" before a handshake,
/// the encrypted side above the plaintext, and the reasons when it cannot be read.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct WireGuardStatusTests {
  /// The `wireguard` object of an interface in a `status --json` run.
  static func wireguard(_ status: [String: Any], _ name: String = "wg0") -> [String: Any]? {
    interface(status, named: name)?["wireguard"] as? [String: Any]
  }

  static func peers(_ wireguard: [String: Any]?) -> [[String: Any]] { wireguard?["peers"] as? [[String: Any]] ?? [] }

  /// An RFC 3339 instant with milliseconds, as the JSON writes them.
  static func instant(_ value: Any?) -> Date? {
    guard let text = value as? String else { return nil }
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
  }

  @Test(
    "a real wireguard-go tunnel: 'never' before traffic; after a ping the peers' transfer and handshake are wg's, above the interface's bytes; the private key is nowhere"
  )
  func realTunnel() throws {
    let pair = try WireGuardPair("wgst", subnet: 140)
    try pair.upBoth()
    let ns = pair.link.left

    // Before any traffic: the peer is there, with no handshake.
    let before = try parseStatus(ns.vpnstat("status", "--json"))
    let idle = try #require(Self.wireguard(before), "no wireguard object: \(before)")
    #expect(idle["found_by"] as? String == "wireguard-go")
    #expect(idle["source"] as? String == "uapi")
    #expect(idle["unavailable"] is NSNull)
    #expect(idle["listen_port"] as? Int == 51820)
    #expect(idle["latest_handshake"] is NSNull)
    let idlePeer = try #require(Self.peers(idle).first)
    #expect(idlePeer["public_key"] as? String == pair.right.publicKey)
    #expect(idlePeer["endpoint"] as? String == pair.link.rightAddress + ":51820")
    #expect(idlePeer["latest_handshake"] is NSNull)
    #expect(idlePeer["allowed_ips_count"] as? Int == 2)
    let table = try ns.vpnstat("status")
    #expect(table.status == 0, "\(table.errors)")
    #expect(
      table.output.contains("WireGuard (wireguard-go, uapi): latest handshake never · listen port 51820 · 1 peer"))
    #expect(
      table.output.contains("      peer \(pair.right.publicKey) at \(pair.link.rightAddress):51820: handshake never"))
    // The other side's interface is not ours: only one tunnel here.
    #expect(interfaces(before).filter { $0["wireguard"] is [String: Any] }.count == 1)

    #expect(try ns.ping("169.254.140.66"))
    #expect(try ns.ping("fd00:140::2"))

    // wg's view right before and right after vpnstat's: traffic has stopped, but WireGuard sends
    // a keepalive 10 s after the last packet it received, so a pair of equal views is needed.
    var status: [String: Any] = [:]
    var dump: WireGuardPeer?
    for _ in 0..<5 {
      let first = try #require(try pair.left.dump().first)
      status = try parseStatus(ns.vpnstat("status", "--json"))
      let second = try #require(try pair.left.dump().first)
      if first.rxBytes == second.rxBytes && first.txBytes == second.txBytes
        && first.latestHandshake == second.latestHandshake
      {
        dump = second
        break
      }
    }
    let wg = try #require(dump, "wg show dump never held still")
    let object = try #require(Self.wireguard(status))
    let peer = try #require(Self.peers(object).first)
    #expect(uint(peer["rx_bytes"]) == wg.rxBytes, "\(peer) vs \(wg)")
    #expect(uint(peer["tx_bytes"]) == wg.txBytes, "\(peer) vs \(wg)")
    // The handshake instant: wg prints whole seconds, the JSON milliseconds of the UAPI's
    // nanoseconds (the harness reads those too).
    let handshake = try #require(Self.instant(peer["latest_handshake"]), "\(peer)")
    let wgHandshake = try #require(wg.latestHandshake)
    #expect(handshake.timeIntervalSince1970.rounded(.down) == wgHandshake.timeIntervalSince1970)
    let precise = try #require(try pair.left.uapiPeers().first?.latestHandshake)
    #expect(abs(handshake.timeIntervalSince(precise)) < 0.001, "\(handshake) vs \(precise)")
    #expect(Self.instant(object["latest_handshake"]) == handshake)
    #expect((peer["latest_handshake_age_seconds"] as? Int).map { $0 >= 0 && $0 < 60 } == true)
    // The encrypted side carries more than the plaintext the interface counted.
    let tunnel = try #require(interface(status, named: "wg0"))
    let plainRx = try #require(uint(tunnel["rx_bytes"]))
    let plainTx = try #require(uint(tunnel["tx_bytes"]))
    #expect(plainRx > 0 && plainTx > 0)
    #expect(
      wg.rxBytes > plainRx && wg.txBytes > plainTx, "encrypted \(wg.rxBytes)/\(wg.txBytes), plain \(plainRx)/\(plainTx)"
    )

    // The same in the table and in watch's plain lines; the private key in none of them.
    let after = try ns.vpnstat("status")
    #expect(after.output.contains("handshake ") && after.output.contains(" s ago · encrypted ≈ "), "\(after.output)")
    #expect(after.output.contains("WireGuard's peer figures are the encrypted side"))
    let watched = try ns.vpnstat("watch", "--count", "1", "--interval", "200ms")
    #expect(watched.status == 0, "\(watched.errors)")
    let line = watched.output.split(separator: "\n").first { $0.contains(" wg0 ") }
    #expect(line?.contains(" wg_handshake=20") == true && line?.contains(" wg_rx=≈") == true, "\(watched.output)")
    let json = try ns.vpnstat("status", "--json")
    let privateHex = Data(base64Encoded: pair.left.privateKey)!.map { String(format: "%02x", $0) }.joined()
    for text in [json.output, json.errors, after.output, watched.output] {
      #expect(!text.contains(pair.left.privateKey) && !text.lowercased().contains(privateHex))
    }
  }

  @Test(
    "a user who may not read wireguard-go's socket gets the reason and exit 0",
    .enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
  func unprivileged() throws {
    let pair = try WireGuardPair("wgsn", subnet: 141)
    try pair.upBoth()
    let binary = try vpnstatForOtherUsers(in: pair.directory)
    let environment = ["HOME": "/nonexistent", "XDG_STATE_HOME": "/nonexistent/state"]
    let asNobody = ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", binary]
    let json = try pair.link.left.run("/usr/bin/setpriv", asNobody + ["status", "--json"], environment: environment)
    #expect(json.status == 0, "\(json.errors)")
    let object = try #require(Self.wireguard(try parseStatus(json)), "\(json.output)")
    #expect(object["found_by"] as? String == "wireguard-go")
    let reason = try #require(object["unavailable"] as? String)
    #expect(reason.hasPrefix("permission denied: wireguard-go (pid "), "\(reason)")
    #expect(reason.hasSuffix("runs as another user; reading its control socket needs root"), "\(reason)")
    #expect(Self.peers(object).isEmpty)
    let table = try pair.link.left.run("/usr/bin/setpriv", asNobody + ["status"], environment: environment)
    #expect(table.status == 0)
    #expect(table.output.contains("    WireGuard (wireguard-go): unavailable: permission denied"), "\(table.output)")
  }

  @Test("a wireguard-go whose control socket never answers costs the timeout, says so, and status exits 0")
  func silentSocket() throws {
    try Tool.require("/usr/bin/python3")
    try RealVPNTool.require("unshare", "mount")
    let ns = try TestNamespace("wgsq")
    let directory = try TemporaryDirectory("wgsq")
    let run = directory.file("run")
    try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
    // A stand-in named wireguard-go (its comm is the name it was executed by): it holds a tun
    // wg9 and listens on /run/wireguard/wg9.sock in a mount namespace of its own, never answering.
    let fake = directory.file("wireguard-go")
    try FileManager.default.createSymbolicLink(atPath: fake, withDestinationPath: "/usr/bin/python3")
    let script = """
      import fcntl, os, socket, struct, sys, time
      tun = os.open('/dev/net/tun', os.O_RDWR)
      fcntl.ioctl(tun, 0x400454ca, struct.pack('16sH', b'wg9', 0x0001 | 0x1000))
      server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
      server.bind('/run/wireguard/wg9.sock')
      server.listen(8)
      print('ready', flush=True)
      held = []
      while True:
          connection, _ = server.accept()
          held.append(connection)
      """
    let holder = try ns.start(
      "/usr/bin/unshare",
      [
        "-m", "--propagation", "private", "/bin/sh", "-c",
        "mkdir -p /run/wireguard && mount --bind \"$0\" /run/wireguard && exec \"$@\"", run, fake, "-c", script,
      ])
    defer { holder.stop() }
    try holder.waitFor("ready")
    let started = Date()
    let result = try ns.vpnstat("status", "--json")
    let elapsed = Date().timeIntervalSince(started)
    #expect(result.status == 0, "\(result.errors)")
    let object = try #require(Self.wireguard(try parseStatus(result), "wg9"), "\(result.output)")
    #expect(object["found_by"] as? String == "wireguard-go")
    #expect(object["unavailable"] as? String == "no answer within 200 ms")
    // No hang: the command as a whole (start-up, sampling, the 200 ms) in well under the margin.
    #expect(elapsed < 5, "\(elapsed) s")
  }
}
