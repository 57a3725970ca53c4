import Testing

@testable import VPNStatModel

/// Where `connect` sends the datagram that makes a quiet WireGuard tunnel shake hands.
struct HandshakeProbeTests {
  func peer(_ ranges: [(String, Int)], key: UInt8 = 1) -> WireGuardPeer {
    WireGuardPeer(
      publicKey: WireGuardKey(bytes: [UInt8](repeating: key, count: 32))!, allowedIPs: ranges.count,
      allowedRanges: ranges.map { IPRange(address: bytes($0.0), prefixLength: $0.1)! })
  }

  /// "10.0.0.1" or "fd00::1" (only the forms the tests use: a dotted quad, or groups with one `::`).
  func bytes(_ text: String) -> [UInt8] {
    if !text.contains(":") { return text.split(separator: ".").map { UInt8($0)! } }
    let halves = text.components(separatedBy: "::")
    func groups(_ part: String) -> [UInt16] {
      part.isEmpty ? [] : part.split(separator: ":").map { UInt16($0, radix: 16)! }
    }
    let head = groups(halves[0])
    let tail = halves.count > 1 ? groups(halves[1]) : []
    let all = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
    return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
  }

  func texts(_ destinations: [[[UInt8]]]) -> [[String]] { destinations.map { $0.map(IPRange.text(of:)) } }

  @Test("a full tunnel (0.0.0.0/0, ::/0): the documentation addresses, which no host anywhere has")
  func fullTunnel() {
    let destinations = HandshakeProbe.destinations(peers: [peer([("0.0.0.0", 0), ("::", 0)])], own: [])
    #expect(texts(destinations) == [["192.0.2.1", "2001:db8::1"]])
    // With the documentation networks routed elsewhere (unlikely), none is sent there.
    let documentation = peer([("192.0.0.0", 8), ("198.0.0.0", 8), ("203.0.0.0", 8)], key: 2)
    let beside = HandshakeProbe.destinations(peers: [peer([("0.0.0.0", 0)]), documentation], own: [])
    #expect(texts(beside) == [[], ["192.0.2.1"]])
  }

  @Test("a peer's own address (/32, /128) is that address; a subnet's first host, never the device's own address")
  func narrowRanges() {
    #expect(
      texts(HandshakeProbe.destinations(peers: [peer([("10.8.0.1", 32), ("fd00:1::1", 128)])], own: []))
        == [["10.8.0.1", "fd00:1::1"]])
    #expect(texts(HandshakeProbe.destinations(peers: [peer([("10.8.0.0", 24)])], own: [])) == [["10.8.0.1"]])
    #expect(
      texts(HandshakeProbe.destinations(peers: [peer([("10.8.0.0", 24)])], own: [bytes("10.8.0.1")]))
        == [["10.8.0.2"]])
    // Host bits given in a range are not an address of it.
    #expect(IPRange(address: bytes("10.8.0.77"), prefixLength: 24)?.address == bytes("10.8.0.0"))
  }

  @Test(
    "each peer gets an address WireGuard routes to it, not to a peer with a longer prefix; a peer without one gets none"
  )
  func routedToThatPeer() {
    let server = peer([("0.0.0.0", 0)], key: 1)
    let office = peer([("192.0.2.0", 24)], key: 2)
    let host = peer([("10.0.0.1", 32)], key: 3)
    let subnet = peer([("10.0.0.0", 8)], key: 4)
    let nowhere = peer([("10.0.0.1", 31)], key: 5)
    let destinations = texts(HandshakeProbe.destinations(peers: [server, office, host, subnet, nowhere], own: []))
    // The first documentation address is the office's (/24 beats /0): the server gets the next.
    #expect(destinations[0] == ["198.51.100.1"])
    #expect(destinations[1] == ["192.0.2.1"])
    // 10.0.0.1 is the /32's; the /8 gets its next host.
    #expect(destinations[2] == ["10.0.0.1"])
    #expect(destinations[3] == ["10.0.0.2"])
    // 10.0.0.0/31: its first host is the /32's, so its first address.
    #expect(destinations[4] == ["10.0.0.0"])
  }

  @Test("half ranges (0.0.0.0/1 and 128.0.0.0/1): never 0.0.0.1, which is no destination")
  func halves() {
    let destinations = HandshakeProbe.destinations(peers: [peer([("0.0.0.0", 1), ("128.0.0.0", 1)])], own: [])
    #expect(texts(destinations) == [["192.0.2.1"]])
    #expect(!HandshakeProbe.isDestination(bytes("0.0.0.1")))
    #expect(!HandshakeProbe.isDestination(bytes("127.0.0.1")) && !HandshakeProbe.isDestination(bytes("224.0.0.1")))
    #expect(!HandshakeProbe.isDestination(bytes("::1")) && !HandshakeProbe.isDestination(bytes("ff02::1")))
    #expect(HandshakeProbe.isDestination(bytes("fd00::1")) && HandshakeProbe.isDestination(bytes("10.0.0.1")))
  }

  @Test("no ranges, no peers: nothing is sent; at most eight peers are")
  func limits() {
    #expect(HandshakeProbe.destinations(peers: [], own: []).isEmpty)
    #expect(texts(HandshakeProbe.destinations(peers: [peer([])], own: [])) == [[]])
    let many = (0..<20).map { peer([("10.\($0).0.0", 16)], key: UInt8($0)) }
    #expect(HandshakeProbe.destinations(peers: many, own: []).count == HandshakeProbe.peerLimit)
  }
}
