import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// A WireGuard tunnel's own figures in the JSON, the status table and the watch screen.
struct WireGuardRenderTests {
  static let now = Timestamp(seconds: 1_800_000_000)
  static let key = WireGuardKey(bytes: Array(0..<32))!

  static func peer(_ byte: UInt8, handshake: Timestamp?, rx: UInt64 = 3000, tx: UInt64 = 4000) -> WireGuardPeer {
    WireGuardPeer(
      publicKey: WireGuardKey(bytes: [UInt8](repeating: byte, count: 32))!, endpoint: "169.254.77.2:51820",
      latestHandshake: handshake, rxBytes: rx, txBytes: tx, persistentKeepaliveSeconds: 25, allowedIPs: 2)
  }

  static func read(_ peers: [WireGuardPeer]) -> WireGuardStatus {
    WireGuardStatus(
      evidence: .wireguardGo,
      reading: .success(WireGuardReading(device: WireGuardDevice(listenPort: 51820, peers: peers), source: .uapi)))
  }

  static func snapshot(_ wireguard: WireGuardStatus?, name: String = "wg0") -> StatusSnapshot {
    StatusSnapshot(
      generatedAt: now, source: .netlink,
      interfaces: [
        InterfaceReport(
          name: InterfaceName(name), index: 4, interfaceClass: .tunnel, classBy: .kind, state: .up,
          counters: InterfaceCounters(TrafficCounts(rxBytes: 2000, txBytes: 2500, rxPackets: 20, txPackets: 25)),
          width: .bits64, wireguard: wireguard),
        InterfaceReport(
          name: InterfaceName("lo"), index: 1, interfaceClass: .loopback, classBy: .type, state: .up,
          counters: InterfaceCounters(.zero), width: .bits64),
      ])
  }

  static func json(_ snapshot: StatusSnapshot) throws -> [[String: Any]] {
    let object = try JSONSerialization.jsonObject(with: Data(StatusJSON.render(snapshot))) as? [String: Any]
    return object?["interfaces"] as? [[String: Any]] ?? []
  }

  @Test(
    "JSON: the wireguard object with the device, each peer's encrypted transfer and the handshake's age; null elsewhere"
  )
  func jsonObject() throws {
    let status = Self.read([
      Self.peer(1, handshake: Self.now - .seconds(75) - .milliseconds(250)), Self.peer(2, handshake: nil, rx: 0, tx: 0),
    ])
    let entries = try Self.json(Self.snapshot(status))
    let wireguard = try #require(entries.first?["wireguard"] as? [String: Any])
    #expect(entries.last?["wireguard"] is NSNull)
    #expect(wireguard["found_by"] as? String == "wireguard-go")
    #expect(wireguard["source"] as? String == "uapi")
    #expect(wireguard["unavailable"] is NSNull)
    #expect(wireguard["listen_port"] as? Int == 51820)
    #expect(wireguard["latest_handshake"] as? String == "2027-01-15T07:58:44.750Z")
    #expect(wireguard["latest_handshake_age_seconds"] as? Int == 75)
    let peers = try #require(wireguard["peers"] as? [[String: Any]])
    #expect(peers.count == 2)
    #expect(peers[0]["public_key"] as? String == WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64)
    #expect(peers[0]["endpoint"] as? String == "169.254.77.2:51820")
    #expect(peers[0]["rx_bytes"] as? Int == 3000 && peers[0]["tx_bytes"] as? Int == 4000)
    #expect(peers[0]["persistent_keepalive_seconds"] as? Int == 25)
    #expect(peers[0]["allowed_ips_count"] as? Int == 2)
    #expect(peers[0]["latest_handshake_age_seconds"] as? Int == 75)
    #expect(peers[1]["latest_handshake"] is NSNull && peers[1]["latest_handshake_age_seconds"] is NSNull)
    // A handshake stamped after the sample (or a clock set back) is 0 s old, not negative.
    let future = try Self.json(Self.snapshot(Self.read([Self.peer(1, handshake: Self.now + .seconds(3))])))
    #expect((future.first?["wireguard"] as? [String: Any])?["latest_handshake_age_seconds"] as? Int == 0)
  }

  @Test("JSON: a WireGuard tunnel that could not be read says why, with every key present")
  func jsonUnavailable() throws {
    let status = WireGuardStatus(evidence: .kind, reading: .failure(.timedOut(.milliseconds(200))))
    let wireguard = try #require(try Self.json(Self.snapshot(status)).first?["wireguard"] as? [String: Any])
    #expect(wireguard["unavailable"] as? String == "no answer within 200 ms")
    #expect(wireguard["found_by"] as? String == "kind")
    #expect(
      wireguard["source"] is NSNull && wireguard["listen_port"] is NSNull && wireguard["latest_handshake"] is NSNull)
    #expect((wireguard["peers"] as? [Any])?.isEmpty == true)
    #expect(
      Set(wireguard.keys) == [
        "found_by", "source", "unavailable", "listen_port", "latest_handshake", "latest_handshake_age_seconds", "peers",
      ])
  }

  @Test(
    "status: under the tunnel, its handshake and each peer's encrypted transfer, 'never' before a handshake, the footnote"
  )
  func table() throws {
    let status = Self.read([
      Self.peer(1, handshake: Self.now - .seconds(12)), Self.peer(2, handshake: nil, rx: 0, tx: 0),
    ])
    let text = StatusTable.render(Self.snapshot(status), options: DisplayOptions())
    let lines = text.split(separator: "\n").map(String.init)
    let row = try #require(lines.firstIndex { $0.hasPrefix("  wg0") })
    #expect(
      lines[row + 1]
        == "    WireGuard (wireguard-go, uapi): latest handshake 12 s ago · listen port 51820 · 2 peers")
    #expect(
      lines[row + 2]
        == "      peer \(WireGuardKey(bytes: [UInt8](repeating: 1, count: 32))!.base64) at 169.254.77.2:51820: handshake 12 s ago · encrypted ≈ 2.93 KiB in, ≈ 3.91 KiB out"
    )
    #expect(lines[row + 3].contains(": handshake never · encrypted ≈ 0 B in, ≈ 0 B out"))
    #expect(text.contains(WireGuardText.note))
    // Without WireGuard figures there is neither line nor footnote.
    let plain = StatusTable.render(Self.snapshot(nil), options: DisplayOptions())
    #expect(!plain.contains("WireGuard"))
  }

  @Test("status: an unreadable WireGuard tunnel gets one line with the reason; many peers are cut to five and counted")
  func tableUnavailableAndMany() {
    let denied = WireGuardStatus(evidence: .wireguardGo, reading: .failure(.notPermitted("runs as another user")))
    let text = StatusTable.render(Self.snapshot(denied), options: DisplayOptions())
    #expect(text.contains("    WireGuard (wireguard-go): unavailable: permission denied: runs as another user\n"))
    #expect(!text.contains(WireGuardText.note))
    let many = Self.read((1...8).map { Self.peer(UInt8($0), handshake: Self.now - .seconds(Int64($0))) })
    let lines = StatusTable.render(Self.snapshot(many), options: DisplayOptions()).split(separator: "\n")
    #expect(lines.filter { $0.hasPrefix("      peer ") }.count == 5)
    #expect(lines.contains("      … 3 more peers (status --json lists them all)"))
    // Newest handshake first.
    #expect(lines.first { $0.hasPrefix("      peer ") }?.contains("handshake 1 s ago") == true)
  }

  @Test("watch: one line under the tunnel, every line within the terminal's width, also narrow ones")
  func watchScreen() {
    let status = Self.read([Self.peer(1, handshake: Self.now - .seconds(5))])
    for columns in [20, 40, 80, 132] {
      let lines = WatchScreen.render(
        Self.snapshot(status), history: RateHistory(), state: WatchViewState(),
        size: TerminalSize(columns: columns, rows: 24), options: DisplayOptions())
      #expect(lines.allSatisfy { TerminalText.width($0) <= columns }, "\(columns): \(lines)")
      let under = lines.firstIndex { $0.hasPrefix("  wg0") }.map { lines[$0 + 1] }
      // Cut to the width, with an ellipsis where it was cut.
      let full = "    wg: handshake 5 s ago · 1 peer · encrypted ≈ 2.93 KiB in, ≈ 3.91 KiB out"
      let shown = under.map { $0.hasSuffix("…") ? String($0.dropLast()) : $0 }
      #expect(
        shown.map { full.hasPrefix($0) && $0.count >= min(full.count, columns) - 1 } == true,
        "\(columns): \(String(describing: under))")
    }
    let denied = WireGuardStatus(evidence: .kind, reading: .failure(.timedOut(.milliseconds(200))))
    let lines = WatchScreen.render(
      Self.snapshot(denied), history: RateHistory(), state: WatchViewState(),
      size: TerminalSize(columns: 100, rows: 24),
      options: DisplayOptions())
    #expect(lines.contains("    wg: unavailable: no answer within 200 ms"))
  }

  @Test("watch piped: the wg_ fields of a WireGuard tunnel's plain line")
  func plainLines() {
    let handshake = Self.now - .seconds(5)
    let lines = WatchScreen.plainLines(
      Self.snapshot(Self.read([Self.peer(1, handshake: handshake)])), options: DisplayOptions())
    #expect(
      lines.first?.hasSuffix(" wg_handshake=\(handshake.rfc3339(fractionDigits: 3)) wg_rx=≈3000 wg_tx=≈4000") == true)
    let never = WatchScreen.plainLines(
      Self.snapshot(Self.read([Self.peer(1, handshake: nil)])), options: DisplayOptions())
    #expect(never.first?.contains(" wg_handshake=never ") == true)
    let denied = WireGuardStatus(evidence: .kind, reading: .failure(.timedOut(.milliseconds(200))))
    #expect(
      WatchScreen.plainLines(Self.snapshot(denied), options: DisplayOptions()).first?.hasSuffix(
        " wg_handshake=unavailable") == true)
    #expect(WatchScreen.plainLines(Self.snapshot(nil), options: DisplayOptions()).allSatisfy { !$0.contains("wg_") })
  }

  @Test("what a socket says (an endpoint, a reason) reaches no terminal raw")
  func hostileText() throws {
    var peer = Self.peer(1, handshake: nil)
    peer.endpoint = "\u{1B}[2J\u{9B}1;1H"
    let table = StatusTable.render(Self.snapshot(Self.read([peer])), options: DisplayOptions())
    #expect(!table.contains("\u{1B}") && !table.contains("\u{9B}"))
    let reason = WireGuardStatus(evidence: .kind, reading: .failure(.failed("no \u{1B}]0;x\u{7} such")))
    let screen = WatchScreen.render(
      Self.snapshot(reason), history: RateHistory(), state: WatchViewState(), size: TerminalSize(columns: 80, rows: 24),
      options: DisplayOptions()
    ).joined()
    #expect(!screen.contains("\u{1B}") && !screen.contains("\u{7}"))
    let json = String(decoding: StatusJSON.render(Self.snapshot(Self.read([peer]))), as: UTF8.self)
    #expect(!json.contains("\u{1B}") && !json.contains("\u{9B}"))
    let entries = try Self.json(Self.snapshot(Self.read([peer])))
    let peers = (entries.first?["wireguard"] as? [String: Any])?["peers"] as? [[String: Any]]
    #expect(peers?.first?["endpoint"] as? String == "\u{1B}[2J\u{9B}1;1H")
  }

  @Test("keys are standard base64, as wg prints them")
  func base64() {
    #expect(Self.key.base64 == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    #expect(
      WireGuardKey(hex: Array(String(repeating: "fF", count: 32).utf8))?.base64
        == "//////////////////////////////////////////8=")
    #expect(WireGuardKey(hex: Array(String(repeating: "g0", count: 32).utf8)) == nil)
    #expect(WireGuardKey(bytes: [1, 2, 3]) == nil)
  }
}
