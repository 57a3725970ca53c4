import Foundation
import Glibc
import Testing
import VPNStatSimulation

@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Real answers, captured on this machine from wireguard-go 0.0.20220316 (`get=1` on
/// /run/wireguard/NAME.sock), with the keys `wg` printed for them. Test keys made for the capture.
enum UAPICapture {
  /// Two peers, no handshake yet: one with a preshared key, IPv4 endpoint, keepalive 25 and two
  /// allowed IPs; one with an IPv6 endpoint. The device's private key comes first.
  static let twoPeers = """
    private_key=f077d4c976886535b06834f02afed06ee68fc27acf7a32eab0b2dfbf1aa8b971
    listen_port=51820
    public_key=adf278870becb7ecb0e98f8ba310c2cd379e27b4e265cdf8df176ef48213113b
    preshared_key=80704230940bed4789161fe92f54649af96b3bf5c64801f4580808af66541509
    protocol_version=1
    endpoint=169.254.77.2:51820
    last_handshake_time_sec=0
    last_handshake_time_nsec=0
    tx_bytes=0
    rx_bytes=0
    persistent_keepalive_interval=25
    allowed_ip=169.254.200.2/32
    allowed_ip=fd00:77::2/128
    public_key=c496563da6da58ad8558e15e4a8cfbd7971a7caa81383d761d49a2f98205d949
    preshared_key=0000000000000000000000000000000000000000000000000000000000000000
    protocol_version=1
    endpoint=[fd00:78::2]:51821
    last_handshake_time_sec=0
    last_handshake_time_nsec=0
    tx_bytes=0
    rx_bytes=0
    persistent_keepalive_interval=0
    allowed_ip=10.9.0.0/24
    errno=0


    """
  /// What `wg show wgc0 dump` printed for it: the private key, and the peers' public keys.
  static let privateKeyBase64 = "8HfUyXaIZTWwaDTwKv7QbuaPwnrPejLqsLLfvxqouXE="
  static let privateKeyHex = "f077d4c976886535b06834f02afed06ee68fc27acf7a32eab0b2dfbf1aa8b971"
  static let presharedKeyHex = "80704230940bed4789161fe92f54649af96b3bf5c64801f4580808af66541509"
  static let peerKeys = [
    "rfJ4hwvst+yw6Y+LoxDCzTeeJ7TiZc343xdu9IITETs=", "xJZWPabaWK2FWOFeSoz715cafKqBOD12HUmi+YIF2Uk=",
  ]

  /// After a ping across (docs/real-vpns.md): a handshake with nanoseconds, traffic both ways.
  static let handshake = """
    private_key=707a7a0d28fbb1df7a6a6b8a3d0b6a2c4a2d0c1e7a8b9c0d1e2f3a4b5c6d7e8f
    listen_port=51820
    public_key=face57a8ef4592917ff60f8b59a32d7864293c9e48685e1ab2956c6e3a0c0359
    preshared_key=0000000000000000000000000000000000000000000000000000000000000000
    protocol_version=1
    endpoint=169.254.77.2:51820
    last_handshake_time_sec=1796032548
    last_handshake_time_nsec=541882387
    tx_bytes=324
    rx_bytes=268
    persistent_keepalive_interval=0
    allowed_ip=169.254.200.2/32
    allowed_ip=fd00:77::2/128
    errno=0


    """

  static var twoPeersBytes: [UInt8] { Array(twoPeers.utf8) }
}

/// Everything a secret could leak through: the value's own description and reflection.
func mentions(_ value: Any, _ secrets: [String]) -> Bool {
  let texts = ["\(value)", String(reflecting: value)]
  return secrets.contains { secret in texts.contains { $0.lowercased().contains(secret.lowercased()) } }
}

/// wireguard-go's control protocol, parsed from real and hostile answers.
struct WireGuardUAPITests {
  @Test("a real answer: listen port, both peers with wg's base64 keys, endpoints, keepalive, allowed IPs, no handshake")
  func capturedAnswer() throws {
    let device = try WireGuardUAPI.parse(UAPICapture.twoPeersBytes)
    #expect(device.listenPort == 51820)
    #expect(device.peers.map(\.publicKey.base64) == UAPICapture.peerKeys)
    #expect(device.peers.map(\.endpoint) == ["169.254.77.2:51820", "[fd00:78::2]:51821"])
    #expect(device.peers.map(\.persistentKeepaliveSeconds) == [25, 0])
    #expect(device.peers.map(\.allowedIPs) == [2, 1])
    #expect(
      device.peers.map { $0.allowedRanges.map(\.description) } == [
        ["169.254.200.2/32", "fd00:77::2/128"], ["10.9.0.0/24"],
      ])
    #expect(device.peers.allSatisfy { $0.latestHandshake == nil && $0.rxBytes == 0 && $0.txBytes == 0 })
    #expect(device.latestHandshake == nil)
    #expect(WireGuardUAPI.isComplete(UAPICapture.twoPeersBytes))
  }

  @Test("a handshake is seconds and nanoseconds since the epoch; rx and tx are the peer's")
  func handshakeInstant() throws {
    let device = try WireGuardUAPI.parse(Array(UAPICapture.handshake.utf8))
    let peer = try #require(device.peers.first)
    #expect(peer.latestHandshake == Timestamp(nanoseconds: 1_796_032_548_541_882_387))
    #expect(device.latestHandshake == peer.latestHandshake)
    #expect(peer.rxBytes == 268 && peer.txBytes == 324)
    #expect(device.peerTraffic == (268, 324))
  }

  @Test("the private and preshared keys are in no parsed value and no error, whatever follows them")
  func secretsNeverKept() throws {
    let secrets = [
      UAPICapture.privateKeyHex, UAPICapture.presharedKeyHex, UAPICapture.privateKeyBase64,
      String(UAPICapture.privateKeyHex.prefix(16)),
    ]
    let device = try WireGuardUAPI.parse(UAPICapture.twoPeersBytes)
    #expect(!mentions(device, secrets))
    // Every prefix of the answer (a connection cut anywhere) and every line turned to garbage.
    let bytes = UAPICapture.twoPeersBytes
    var failures = 0
    for end in 0..<bytes.count {
      do {
        _ = try WireGuardUAPI.parse(Array(bytes[0..<end]))
      } catch {
        failures += 1
        #expect(!mentions(error, secrets), "prefix \(end): \(error)")
      }
    }
    #expect(failures >= bytes.count - 2, "a cut answer parsed: only the last empty line may be missing")
    let lines = UAPICapture.twoPeers.split(separator: "\n", omittingEmptySubsequences: false)
    for index in lines.indices where !lines[index].isEmpty {
      // The secret itself where a number, a key or a line should be: no error may quote it.
      let secret = UAPICapture.privateKeyHex
      for garbage in [
        "\u{1B}[2J", "listen_port=", "public_key=xyz", "errno=5", "rx_bytes=-1", "listen_port=\(secret)",
        "rx_bytes=\(secret)", "public_key=\(secret)ff", secret, "errno=\(secret)", "last_handshake_time_nsec=\(secret)",
      ] {
        var changed = lines
        changed[index] = Substring(garbage)
        do {
          _ = try WireGuardUAPI.parse(Array(changed.joined(separator: "\n").utf8))
        } catch {
          #expect(!mentions(error, secrets), "\(error)")
        }
      }
    }
  }

  @Test(
    "hostile answers are refused with a reason that names a line and a key, never a value",
    arguments: [
      ("", "ends before its errno line"),
      ("garbage\n\n", "line 1 is not key=value"),
      ("\n\n", "line 1 is empty before errno"),
      ("listen_port=abc\nerrno=0\n\n", "line 1: listen_port is not a number"),
      ("listen_port=70000\nerrno=0\n\n", "listen_port is not a number"),
      ("listen_port=-1\nerrno=0\n\n", "listen_port is not a number"),
      ("rx_bytes=5\nerrno=0\n\n", "rx_bytes before any public_key"),
      ("public_key=zz\nerrno=0\n\n", "public_key is not 64 hexadecimal digits"),
      ("errno=19\n\n", "wireguard-go answered errno=19"),
      ("errno=0\nlisten_port=1\n\n", "line 2 follows the errno line"),
      ("KEY=1\nerrno=0\n\n", "line 1 has no valid key"),
      ("li\u{0}sten=1\nerrno=0\n\n", "line 1 has no valid key"),
      (
        "public_key=\(String(repeating: "ab", count: 32))\nlast_handshake_time_nsec=1000000000\nerrno=0\n\n",
        "last_handshake_time_nsec is not below one second"
      ),
      (
        "public_key=\(String(repeating: "ab", count: 32))\nlast_handshake_time_sec=99999999999999999999\nerrno=0\n\n",
        "last_handshake_time_sec is not a number"
      ),
      (
        "public_key=\(String(repeating: "ab", count: 32))\nlast_handshake_time_sec=18446744073709551615\nerrno=0\n\n",
        "last_handshake_time_sec is out of range"
      ),
      (
        "public_key=\(String(repeating: "ab", count: 32))\nendpoint=\u{1B}[2J:1\nerrno=0\n\n",
        "endpoint is not an address"
      ),
      ("public_key=\(String(repeating: "ab", count: 32))\nlisten_port=1\nerrno=0\n\n", "listen_port inside a peer"),
      ("public_key=\(String(repeating: "ab", count: 32))\ntx_bytes=1 2\nerrno=0\n\n", "tx_bytes is not a number"),
    ])
  func hostileAnswers(answer: String, reason: String) {
    do {
      let device = try WireGuardUAPI.parse(Array(answer.utf8))
      Issue.record("parsed: \(device)")
    } catch {
      #expect(error.description.contains(reason), "\(error)")
      #expect(!error.description.contains("\u{1B}"))
    }
  }

  @Test(
    "keys it does not know (a newer wireguard-go's) are skipped; a private key with garbage in it is skipped unseen")
  func tolerated() throws {
    let answer =
      "private_key=\u{1B}]0;pwned\u{7}\nlisten_port=7\nfuture_key=whatever\npublic_key=\(String(repeating: "0F", count: 32))\nfuture_peer_key=1\nerrno=0\n\n"
    let device = try WireGuardUAPI.parse(Array(answer.utf8))
    #expect(device.listenPort == 7)
    #expect(device.peers.count == 1)
    #expect(!mentions(device, ["pwned"]))
  }

  @Test("random bytes and mangled answers never crash the parser")
  func fuzz() {
    var generator = SplitMix(seed: 9)
    let base = UAPICapture.twoPeersBytes
    for round in 0..<3000 {
      var bytes: [UInt8]
      if round % 2 == 0 {
        bytes = (0..<Int(generator.next() % 300)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      } else {
        bytes = base
        for _ in 0..<(1 + generator.next() % 5) {
          bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
        }
      }
      _ = try? WireGuardUAPI.parse(bytes)
    }
  }
}

// MARK: - Generic netlink

/// Builders for the messages the kernel's WireGuard family sends (linux/wireguard.h).
enum GenetlinkMessage {
  static func attribute(_ type: Int, _ value: [UInt8], nested: Bool = false) -> [UInt8] {
    RouteAttributes.encode(type: UInt16(type) | (nested ? 0x8000 : 0), value: value)
  }
  static func bytes<T>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
  static func sockaddrIn(_ address: [UInt8], port: UInt16) -> [UInt8] {
    bytes(UInt16(AF_INET)) + bytes(port.bigEndian) + address + [UInt8](repeating: 0, count: 8)
  }
  static func sockaddrIn6(_ address: [UInt8], port: UInt16) -> [UInt8] {
    bytes(UInt16(AF_INET6)) + bytes(port.bigEndian) + [0, 0, 0, 0] + address + [0, 0, 0, 0]
  }
  static func allowedIPs(_ count: Int) -> [UInt8] {
    (0..<count).flatMap { i in
      attribute(
        i, attribute(1, bytes(UInt16(AF_INET))) + attribute(2, [10, 0, 0, UInt8(i)]) + attribute(3, [32]), nested: true)
    }
  }
  /// A peer: the attributes given, in a nested entry.
  static func peer(_ index: Int, _ attributes: [UInt8]) -> [UInt8] { attribute(index, attributes, nested: true) }
  /// A whole payload: the genl header (WG_CMD_GET_DEVICE, version 1) and device attributes.
  static func device(_ attributes: [UInt8]) -> [UInt8] { [0, 1, 0, 0] + attributes }
  /// A payload with one peer of these attributes.
  static func onePeer(_ attributes: [UInt8]) -> [UInt8] { device(attribute(8, peer(0, attributes), nested: true)) }

  static func add(_ payload: [UInt8], to assembler: inout WireGuardNetlink.DeviceAssembler) throws(WireGuardUnavailable)
  {
    var failure: WireGuardUnavailable?
    payload.withUnsafeBytes { raw in
      do throws(WireGuardUnavailable) { try assembler.add(raw) } catch { failure = error }
    }
    if let failure { throw failure }
  }
}

struct WireGuardNetlinkTests {
  typealias M = GenetlinkMessage
  static let secret = [UInt8](repeating: 0xA5, count: 32)
  static let keyA = [UInt8](repeating: 0x11, count: 32)
  static let keyB = [UInt8](repeating: 0x22, count: 32)

  @Test("the family lookup asks the controller for 'wireguard'; its answer's id is read")
  func familyLookup() throws {
    let request = WireGuardNetlink.familyRequest()
    #expect(Array(request.prefix(4)) == [3, 1, 0, 0])
    #expect(request.count == 4 + 16)
    #expect(Array(request[8..<18]) == Array("wireguard\0".utf8))
    let answer = [1, 2, 0, 0] + M.attribute(2, Array("wireguard\0".utf8)) + M.attribute(1, M.bytes(UInt16(0x1F)))
    #expect(answer.withUnsafeBytes { WireGuardNetlink.familyID(in: $0) } == 0x1F)
    #expect([UInt8]([1, 2]).withUnsafeBytes { WireGuardNetlink.familyID(in: $0) } == nil)
    let device = try WireGuardNetlink.deviceRequest(InterfaceName("wg0"))
    #expect(Array(device.prefix(4)) == [0, 1, 0, 0])
    #expect(device.suffix(from: 8).prefix(4) == ArraySlice("wg0\0".utf8))
    #expect(throws: WireGuardUnavailable.self) { try WireGuardNetlink.deviceRequest(InterfaceName("a/b")) }
  }

  @Test(
    "one message: listen port, two peers (IPv4 and IPv6 endpoints), handshake, transfer, keepalive, allowed IPs; the private key is not kept"
  )
  func oneMessage() throws {
    var timespec = M.bytes(Int64(1_796_032_548)) + M.bytes(Int64(541_882_387))
    let peerA = M.peer(
      0,
      M.attribute(1, Self.keyA) + M.attribute(2, Self.secret)
        + M.attribute(4, M.sockaddrIn([169, 254, 77, 2], port: 51820)) + M.attribute(5, M.bytes(UInt16(25)))
        + M.attribute(6, timespec) + M.attribute(7, M.bytes(UInt64(268))) + M.attribute(8, M.bytes(UInt64(324)))
        + M.attribute(9, M.allowedIPs(2), nested: true) + M.attribute(10, M.bytes(UInt32(1))))
    timespec = [UInt8](repeating: 0, count: 16)
    let peerB = M.peer(
      1,
      M.attribute(1, Self.keyB)
        + M.attribute(4, M.sockaddrIn6([0xFD, 0, 0, 0x78] + [UInt8](repeating: 0, count: 11) + [2], port: 51821))
        + M.attribute(6, timespec) + M.attribute(9, M.allowedIPs(1), nested: true))
    let payload = M.device(
      M.attribute(1, M.bytes(UInt32(7))) + M.attribute(2, Array("wg0\0".utf8)) + M.attribute(3, Self.secret)
        + M.attribute(6, M.bytes(UInt16(51820))) + M.attribute(8, peerA + peerB, nested: true))
    var assembler = WireGuardNetlink.DeviceAssembler()
    try M.add(payload, to: &assembler)
    let device = assembler.device
    #expect(device.listenPort == 51820)
    #expect(device.peers.count == 2)
    let a = device.peers[0]
    #expect(a.publicKey.bytes == Self.keyA)
    #expect(a.endpoint == "169.254.77.2:51820")
    #expect(a.latestHandshake == Timestamp(nanoseconds: 1_796_032_548_541_882_387))
    #expect(a.rxBytes == 268 && a.txBytes == 324 && a.persistentKeepaliveSeconds == 25 && a.allowedIPs == 2)
    let b = device.peers[1]
    #expect(b.endpoint == "[fd00:78::2]:51821")
    #expect(b.latestHandshake == nil)
    #expect(b.allowedIPs == 1)
    #expect(a.allowedRanges.map(\.description) == ["10.0.0.0/32", "10.0.0.1/32"])
    #expect(b.allowedRanges.map(\.description) == ["10.0.0.0/32"])
    let secretText = WireGuardKey(bytes: Self.secret)!.base64
    #expect(!mentions(device, [secretText, "a5a5a5a5", "165, 165, 165"]))
  }

  @Test("a peer split over two messages is one peer with all its allowed IPs")
  func splitPeer() throws {
    let first = M.device(
      M.attribute(6, M.bytes(UInt16(1)))
        + M.attribute(
          8,
          M.peer(0, M.attribute(1, Self.keyA) + M.attribute(7, M.bytes(UInt64(5))))
            + M.peer(1, M.attribute(1, Self.keyB) + M.attribute(9, M.allowedIPs(2), nested: true)), nested: true))
    let second = M.device(
      M.attribute(2, Array("wg0\0".utf8))
        + M.attribute(
          8, M.peer(0, M.attribute(1, Self.keyB) + M.attribute(9, M.allowedIPs(3), nested: true)), nested: true))
    var assembler = WireGuardNetlink.DeviceAssembler()
    try M.add(first, to: &assembler)
    try M.add(second, to: &assembler)
    #expect(assembler.messages == 2)
    #expect(assembler.device.peers.map(\.allowedIPs) == [0, 5])
    #expect(assembler.device.peers.map(\.allowedRanges.count) == [0, 5])
    #expect(assembler.device.peers.map(\.rxBytes) == [5, 0])
  }

  @Test(
    "truncated and malformed messages are refused, never read past their end",
    arguments: [
      ([UInt8]([0, 1]), "shorter than its header"),
      (GenetlinkMessage.device(GenetlinkMessage.attribute(6, [1])), "listen port is not 2 bytes"),
      (
        GenetlinkMessage.onePeer(GenetlinkMessage.attribute(1, [UInt8](repeating: 1, count: 31))),
        "public key is not 32 bytes"
      ),
      (
        GenetlinkMessage.onePeer(GenetlinkMessage.attribute(7, GenetlinkMessage.bytes(UInt64(1)))),
        "without its public key"
      ),
      (
        GenetlinkMessage.onePeer(
          GenetlinkMessage.attribute(1, WireGuardNetlinkTests.keyA)
            + GenetlinkMessage.attribute(6, [UInt8](repeating: 0, count: 15))),
        "handshake time is not 16 bytes"
      ),
      (
        GenetlinkMessage.onePeer(
          GenetlinkMessage.attribute(1, WireGuardNetlinkTests.keyA)
            + GenetlinkMessage.attribute(6, GenetlinkMessage.bytes(Int64(-5)) + GenetlinkMessage.bytes(Int64(0)))),
        "handshake time is out of range"
      ),
      (
        GenetlinkMessage.onePeer(
          GenetlinkMessage.attribute(1, WireGuardNetlinkTests.keyA)
            + GenetlinkMessage.attribute(4, GenetlinkMessage.bytes(UInt16(99)) + [0, 0, 1, 2, 3, 4])),
        "endpoint is no address"
      ),
      (GenetlinkMessage.device([200, 0, 6, 0, 1, 2]), "cut short"),
      (
        GenetlinkMessage.device(
          GenetlinkMessage.attribute(8, [40, 0, 1, 0x80] + [UInt8](repeating: 0, count: 8), nested: true)),
        "cut short"
      ),
    ])
  func malformed(payload: [UInt8], reason: String) {
    var assembler = WireGuardNetlink.DeviceAssembler()
    do {
      try M.add(payload, to: &assembler)
      Issue.record("accepted: \(assembler.device)")
    } catch {
      #expect(error.description.contains(reason), "\(error)")
    }
  }

  @Test("random and mangled messages never crash the assembler")
  func fuzz() {
    var generator = SplitMix(seed: 4)
    let base = M.device(
      M.attribute(6, M.bytes(UInt16(1)))
        + M.attribute(
          8, M.peer(0, M.attribute(1, Self.keyA) + M.attribute(9, M.allowedIPs(2), nested: true)), nested: true))
    for round in 0..<3000 {
      var bytes = base
      if round % 3 == 0 {
        bytes = (0..<Int(generator.next() % 200)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      } else {
        for _ in 0..<(1 + generator.next() % 4) {
          bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
        }
      }
      var assembler = WireGuardNetlink.DeviceAssembler()
      _ = try? M.add(bytes, to: &assembler)
    }
  }

  @Test("IPv6 endpoints are written as wg writes them (RFC 5952)")
  func ipv6Text() {
    func text(_ groups: [UInt16]) -> String {
      WireGuardNetlink.ipv6Text(groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
    }
    #expect(text([0xFD00, 0x78, 0, 0, 0, 0, 0, 2]) == "fd00:78::2")
    #expect(text([0, 0, 0, 0, 0, 0, 0, 1]) == "::1")
    #expect(text([0, 0, 0, 0, 0, 0, 0, 0]) == "::")
    #expect(text([1, 0, 0, 0, 0, 0, 0, 0]) == "1::")
    #expect(text([1, 0, 0, 1, 0, 0, 0, 1]) == "1:0:0:1::1")
    #expect(text([1, 0, 2, 3, 4, 5, 6, 7]) == "1:0:2:3:4:5:6:7")
  }

  @Test("what the kernel refuses becomes a reason: no permission, no such device, anything else")
  func kernelRefusals() {
    let name = InterfaceName("wg0")
    #expect(
      WireGuardNetlink.unavailable(Errno(rawValue: EPERM), device: name)
        == .notPermitted("reading WireGuard from the kernel needs CAP_NET_ADMIN"))
    #expect(
      WireGuardNetlink.unavailable(Errno(rawValue: EACCES), device: nil).description.hasPrefix("permission denied"))
    for code in [ENODEV, ENOENT, EOPNOTSUPP] {
      #expect(
        WireGuardNetlink.unavailable(Errno(rawValue: code), device: name)
          == .noSource("the kernel's WireGuard has no device wg0"))
    }
    #expect(
      WireGuardNetlink.unavailable(Errno(rawValue: EIO), device: name) == .failed("netlink: \(Errno(rawValue: EIO))"))
  }

  @Test("on this kernel the family lookup gives the real answer: no family without the wireguard module")
  func realFamilyLookup() throws {
    let socket = try NetlinkSocket(protocol: NetlinkSocket.generic)
    let moduleLoaded = FileManager.default.fileExists(atPath: "/sys/module/wireguard")
    do {
      let device = try WireGuardNetlink.read(InterfaceName("vpnstat-none"), socket: socket)
      Issue.record("read a device that does not exist: \(device)")
    } catch {
      guard case .noSource(let why) = error else {
        Issue.record("not noSource: \(error)")
        return
      }
      if moduleLoaded {
        #expect(why.contains("has no device"), "\(why)")
      } else {
        #expect(why == "the kernel has no WireGuard netlink family (no wireguard module)")
      }
    }
  }
}

// MARK: - The control socket and the reader

struct WireGuardReaderTests {
  /// The timeout of every test that is not about timeouts: a fake server on a loaded machine may
  /// take longer than the real 200 ms to be scheduled.
  static let patient = Duration.seconds(10)

  static func tun(_ name: String, index: Int32 = 5) -> WireGuardCandidate {
    WireGuardCandidate(name: InterfaceName(name), index: index, implementation: .tun)
  }

  @Test(
    "wireguard-go is found as the holder of a tun in our namespace; others, other namespaces and unattached tuns are not"
  )
  func holders() throws {
    let proc = try ProcFixture()
    try proc.process(
      10, command: "wireguard-go", arguments: ["wireguard-go", "wg0"], tuns: [3: "wg0"], otherFiles: [4: "socket:[99]"])
    try proc.process(
      11, command: "wireguard-go", arguments: ["wireguard-go", "wg0"], namespace: "net:[4026532458]", tuns: [3: "wg0"])
    try proc.process(12, command: "openvpn", arguments: ["openvpn", "--dev", "tun7"], tuns: [3: "tun7"])
    try proc.process(13, command: "wireguard-go", arguments: ["wireguard-go", "-f", "wg1"], tuns: [3: ""])
    try proc.process(14, command: "wireguard-go", arguments: ["wireguard-go", "wg2"], tuns: [5: "wg2"])
    // In another mount namespace whose /dev is not under our root (ip netns exec in a chroot).
    try proc.process(
      15, command: "wireguard-go", arguments: ["wireguard-go", "wg3"], tuns: [3: "wg3"],
      tunLink: "/tmp/fresh-ci.AbCd/dev/net/tun")
    try proc.process(
      16, command: "wireguard-go", arguments: ["wireguard-go", "wg4"], tuns: [3: "wg4"], tunLink: "/dev/net/tunnel")
    // Another user's process is no manager, whatever it holds and says.
    try proc.process(17, command: "wireguard-go", arguments: ["wireguard-go", "wg5"], tuns: [3: "wg5"], uid: 65534)
    // Root's, but its tun is a device of another namespace that shares the name.
    try proc.process(
      18, command: "wireguard-go", arguments: ["wireguard-go", "wg6"], tuns: [3: "wg6"], foreign: [3])
    // A system service's process that is not root is still the service's.
    try proc.process(
      19, command: "wireguard-go", arguments: ["wireguard-go", "wg7"], tuns: [3: "wg7"], uid: 104,
      controlGroup: "/system.slice/wg-quick@wg7.service")
    let found = UserspaceWireGuard.find(
      in: TunProcesses.read(procRoot: SystemPath(proc.root), attachments: proc.attachments))
    #expect(
      Set(found) == [
        UserspaceWireGuard(pid: 10, device: InterfaceName("wg0"), inspected: true),
        UserspaceWireGuard(pid: 14, device: InterfaceName("wg2"), inspected: true),
        UserspaceWireGuard(pid: 15, device: InterfaceName("wg3"), inspected: true),
        UserspaceWireGuard(pid: 19, device: InterfaceName("wg7"), inspected: true),
      ])
    // Its socket is reached through its own root.
    let sockets = found.first { $0.pid == 10 }!.controlSockets(procRoot: SystemPath(proc.root)).map(\.description)
    #expect(sockets == [proc.socketPath(10, "wg0"), proc.root + "/10/root/var/run/wireguard/wg0.sock"])
  }

  @Test("a tun held by wireguard-go is read through its control socket; a tun nobody WireGuard holds is not WireGuard")
  func readsThroughHolder() throws {
    let proc = try ProcFixture()
    try proc.process(10, command: "wireguard-go", arguments: ["wireguard-go", "wg0"], tuns: [3: "wg0"])
    let server = try FakeControlSocket(path: proc.socketPath(10, "wg0"), behaviour: .answer(UAPICapture.twoPeersBytes))
    defer { server.stop() }
    var reader = WireGuardReader(
      procRoot: SystemPath(proc.root), runDirectory: SystemPath(proc.directory.path), idleTimeout: Self.patient,
      totalTimeout: Self.patient * 2, useNetlink: false, attachments: proc.attachments)
    let statuses = reader.read([Self.tun("wg0"), Self.tun("tun7", index: 6)])
    #expect(statuses.count == 2)
    let status = try #require(statuses[0])
    #expect(status.evidence == .wireguardGo)
    #expect(status.source == .uapi)
    #expect(status.device?.peers.map(\.publicKey.base64) == UAPICapture.peerKeys)
    #expect(statuses[1] == nil)
    #expect(server.requests == ["get=1\n\n"])
    // The holder is remembered per instance: no second walk of /proc for the same tun …
    let again = reader.read([Self.tun("wg0"), Self.tun("tun7", index: 6)])
    #expect(reader.processScans == 1)
    #expect(again.first??.source == .uapi, "\(again)")
    // … and a recreated tun (a new ifindex) is looked up again.
    let recreated = reader.read([Self.tun("wg0", index: 9)])
    #expect(reader.processScans == 2)
    #expect(recreated.first??.source == .uapi, "\(recreated)")
    #expect(server.requests.count == 3)
  }

  @Test("no candidate: no /proc walk and no socket; a tun where no /run/wireguard exists: no walk either")
  func nothingToRead() throws {
    var reader = WireGuardReader(procRoot: "/nonexistent-proc", useNetlink: false)
    #expect(reader.read([]).isEmpty)
    #expect(reader.processScans == 0 && reader.exchanges == 0)
    let proc = try ProcFixture()
    try proc.process(10, command: "wireguard-go", arguments: ["wireguard-go", "wg0"], tuns: [3: "wg0"])
    var gated = WireGuardReader(
      procRoot: SystemPath(proc.root), runDirectory: SystemPath(proc.directory.file("no-run-wireguard")),
      useNetlink: false)
    #expect(gated.read([Self.tun("wg0")]) == [nil])
    #expect(gated.processScans == 0 && gated.exchanges == 0)
  }

  @Test("a kernel device: no netlink family here, then the control socket; with neither, both reasons")
  func kernelFallback() throws {
    let run = try TemporaryDirectory("wgrun")
    let candidate = WireGuardCandidate(name: InterfaceName("wg0"), index: 3, implementation: .kernel(.devtype))
    var reader = WireGuardReader(
      runDirectory: SystemPath(run.path), idleTimeout: Self.patient, totalTimeout: Self.patient * 2)
    let missing = try #require(reader.read([candidate]).first ?? nil)
    #expect(missing.evidence == .devtype)
    let why = try #require(missing.unavailable).description
    #expect(why.contains("no control socket \(run.path)/wg0.sock"), "\(why)")
    if !FileManager.default.fileExists(atPath: "/sys/module/wireguard") {
      #expect(why.hasPrefix("the kernel has no WireGuard netlink family (no wireguard module); "), "\(why)")
      let server = try FakeControlSocket(
        path: run.file("wg0.sock"), behaviour: .answer(Array(UAPICapture.handshake.utf8)))
      defer { server.stop() }
      let found = try #require(reader.read([candidate]).first ?? nil)
      #expect(found.source == .uapi)
      #expect(found.device?.latestHandshake == Timestamp(nanoseconds: 1_796_032_548_541_882_387))
      #expect(server.connections == 1)
      // The seam `connect` uses.
      #expect(try reader.latestHandshake(of: candidate).get() == Timestamp(nanoseconds: 1_796_032_548_541_882_387))
    }
  }

  @Test("a socket that answers nothing costs the timeout, and says so")
  func silentSocket() throws {
    let run = try TemporaryDirectory("wgsilent")
    let server = try FakeControlSocket(path: run.file("wg0.sock"), behaviour: .silent)
    defer { server.stop() }
    // A long total: the wait that must end it is the idle one, 200 ms.
    var reader = WireGuardReader(runDirectory: SystemPath(run.path), totalTimeout: .seconds(10), useNetlink: false)
    let started = Date()
    let status = try #require(
      reader.read([WireGuardCandidate(name: InterfaceName("wg0"), index: 3, implementation: .kernel(.kind))]).first
        ?? nil)
    let elapsed = Date().timeIntervalSince(started)
    #expect(status.unavailable == .timedOut(WireGuardReader.defaultIdleTimeout))
    #expect(status.unavailable?.description == "no answer within 200 ms")
    // It waited (not a quick failure), and not much longer than the timeout (margin for load).
    #expect(elapsed >= 0.19, "\(elapsed)")
    #expect(elapsed < 0.2 + 1.5, "\(elapsed)")
    #expect(server.connections == 1)
  }

  @Test("a socket that trickles is cut at the total timeout; one that floods at the size limit")
  func trickleAndFlood() throws {
    let run = try TemporaryDirectory("wgslow")
    let candidate = WireGuardCandidate(name: InterfaceName("wg0"), index: 3, implementation: .kernel(.kind))
    do {
      let server = try FakeControlSocket(path: run.file("wg0.sock"), behaviour: .trickle(.milliseconds(50)))
      var reader = WireGuardReader(
        runDirectory: SystemPath(run.path), idleTimeout: Self.patient, totalTimeout: .milliseconds(400),
        useNetlink: false)
      let started = Date()
      let status = reader.read([candidate]).first ?? nil
      let elapsed = Date().timeIntervalSince(started)
      #expect(status?.unavailable == .timedOut(.milliseconds(400)))
      #expect(elapsed >= 0.39 && elapsed < 0.4 + 1.5, "\(elapsed)")
      server.stop()
    }
    do {
      let server = try FakeControlSocket(path: run.file("wg1.sock"), behaviour: .flood(1 << 20))
      var reader = WireGuardReader(
        runDirectory: SystemPath(run.path), idleTimeout: Self.patient, totalTimeout: Self.patient * 2,
        answerLimit: 64 << 10, useNetlink: false)
      let status =
        reader.read([WireGuardCandidate(name: InterfaceName("wg1"), index: 4, implementation: .kernel(.kind))]).first
        ?? nil
      #expect(status?.unavailable == .tooLarge(64 << 10))
      #expect(status?.unavailable?.description == "the answer is larger than 65536 bytes")
      server.stop()
    }
  }

  @Test(
    "a socket that closes, refuses, or answers garbage or an error: unavailable with the reason",
    arguments: [
      (FakeControlSocket.Behaviour.close, "the control socket closed without answering"),
      (.answer(Array("\u{1B}[2Jgarbage\n\n".utf8)), "not a WireGuard answer: line 1 is not key=value"),
      (.answer(Array("errno=19\n\n".utf8)), "wireguard-go answered errno=19"),
      (.answer(Array(UAPICapture.twoPeers.utf8.dropLast(40))), "closed before the end of its answer"),
    ])
  func badSockets(behaviour: FakeControlSocket.Behaviour, reason: String) throws {
    let run = try TemporaryDirectory("wgbad")
    let server = try FakeControlSocket(path: run.file("wg0.sock"), behaviour: behaviour)
    var reader = WireGuardReader(
      runDirectory: SystemPath(run.path), idleTimeout: Self.patient, totalTimeout: Self.patient * 2, useNetlink: false)
    let status =
      reader.read([WireGuardCandidate(name: InterfaceName("wg0"), index: 3, implementation: .kernel(.kind))])
      .first ?? nil
    let why = status?.unavailable?.description ?? "read: \(String(describing: status))"
    #expect(why.contains(reason), "\(why)")
    #expect(!mentions(why, [UAPICapture.privateKeyHex, "\u{1B}"]))
    server.stop()
  }

  @Test("nobody listening on the socket file: nothing answers for the device")
  func refused() throws {
    let run = try TemporaryDirectory("wgref")
    let server = try FakeControlSocket(path: run.file("wg0.sock"), behaviour: .close, listening: false)
    var reader = WireGuardReader(
      runDirectory: SystemPath(run.path), idleTimeout: Self.patient, totalTimeout: Self.patient * 2, useNetlink: false)
    let status =
      reader.read([WireGuardCandidate(name: InterfaceName("wg0"), index: 3, implementation: .kernel(.kind))])
      .first ?? nil
    #expect(
      status?.unavailable?.description.contains("nothing listens on \(run.path)/wg0.sock") == true,
      "\(String(describing: status))")
    server.stop()
  }
}

/// Issue 19's rule for wireguard-go's control socket, its negative case on real processes: root
/// reads a socket only when root (or its own user) serves it. Any user may bind a socket where
/// they can write and answer what they like — a handshake `connect` would take for proof.
@Suite(.enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
struct WireGuardSocketServerTests {
  /// Python that listens on DIR/wg0.sock, prints "listening", and answers every request with a
  /// device holding one peer that shook hands at 2026-12-03 (writing what it was asked to
  /// DIR/asked).
  static let server = """
    import os, socket, sys
    directory = sys.argv[1]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(os.path.join(directory, "wg0.sock"))
    s.listen(4)
    print("listening", flush=True)
    while True:
        c, _ = s.accept()
        asked = c.recv(4096)
        with open(os.path.join(directory, "asked"), "ab") as f:
            f.write(asked)
        c.sendall(b"listen_port=51820\\npublic_key=" + b"ab" * 32 + b"\\nlast_handshake_time_sec=1796300000\\n"
                  + b"last_handshake_time_nsec=0\\nrx_bytes=7\\ntx_bytes=9\\nerrno=0\\n\\n")
        c.close()
    """

  func read(_ run: String) -> WireGuardStatus? {
    var reader = WireGuardReader(
      runDirectory: SystemPath(run), idleTimeout: WireGuardReaderTests.patient,
      totalTimeout: WireGuardReaderTests.patient * 2, useNetlink: false)
    return reader.read([WireGuardCandidate(name: InterfaceName("wg0"), index: 3, implementation: .kernel(.kind))])
      .first ?? nil
  }

  @Test(
    "a control socket nobody serves where wireguard-go's would be: root asks it nothing and believes no handshake; the same server run by root is read (the fake answers as wireguard-go does)"
  )
  func servedByNobody() throws {
    try Tool.require("/usr/bin/python3")
    let directory = try TemporaryDirectory("wgnobody")
    let run = directory.file("run")
    try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: false)
    try FileManager.default.setAttributes([.ownerAccountName: "nobody"], ofItemAtPath: run)
    let server = try BackgroundProcess(
      "/usr/bin/setpriv",
      ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", "/usr/bin/python3", "-c", Self.server, run],
      environment: ["HOME": "/nonexistent"])
    defer { server.stop(SIGKILL) }
    try server.waitFor("listening")
    let status = read(run)
    let why = status?.unavailable?.description ?? "read: \(String(describing: status))"
    #expect(why.contains("is served by uid 65534, not by root: not asked"), "\(why)")
    #expect(status?.device == nil, "\(String(describing: status))")
    // Root connects to learn who serves the socket (SO_PEERCRED), then hangs up: the server may
    // note an empty request; any byte would be a question. Time for a request to arrive.
    usleep(300_000)
    let asked = FileManager.default.contents(atPath: run + "/asked") ?? Data()
    #expect(asked.isEmpty, "root sent nobody's socket a request: \(String(decoding: asked, as: UTF8.self))")

    // The positive case: the same server, root's, is read.
    let rootRun = directory.file("rootrun")
    try FileManager.default.createDirectory(atPath: rootRun, withIntermediateDirectories: false)
    let rootServer = try BackgroundProcess("/usr/bin/python3", ["-c", Self.server, rootRun])
    defer { rootServer.stop(SIGKILL) }
    try rootServer.waitFor("listening")
    let read = read(rootRun)
    #expect(read?.device?.peers.first?.rxBytes == 7, "\(String(describing: read))")
  }
}
