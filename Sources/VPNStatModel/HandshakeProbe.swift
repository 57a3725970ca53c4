/// An IP range as WireGuard routes it to a peer (one AllowedIPs entry): an address and how many
/// of its leading bits count.
public struct IPRange: Hashable, Sendable, CustomStringConvertible {
  /// 4 bytes (IPv4) or 16 (IPv6), in network order, the bits past the prefix cleared.
  public let address: [UInt8]
  public let prefixLength: Int

  /// Nil unless `address` is 4 or 16 bytes and `prefixLength` fits it.
  public init?(address: [UInt8], prefixLength: Int) {
    guard address.count == 4 || address.count == 16, (0...address.count * 8).contains(prefixLength) else {
      return nil
    }
    self.address = address.enumerated().map { index, byte in
      let kept = max(0, min(8, prefixLength - index * 8))
      return kept == 8 ? byte : byte & ~(0xFF >> kept)
    }
    self.prefixLength = prefixLength
  }

  public var isIPv4: Bool { address.count == 4 }

  /// Whether `other` (of either family) lies in the range.
  public func contains(_ other: [UInt8]) -> Bool {
    other.count == address.count && IPRange(address: other, prefixLength: prefixLength)?.address == address
  }

  /// The range's first address plus `offset`, or nil when that is past its end.
  func address(plus offset: UInt8) -> [UInt8]? {
    let hostBits = address.count * 8 - prefixLength
    if hostBits < 8, Int(offset) >= 1 << hostBits { return nil }
    var result = address
    result[result.count - 1] |= offset
    return result
  }

  /// `10.0.0.0/24`, `fd00::/64`.
  public var description: String { Self.text(of: address) + "/\(prefixLength)" }

  /// An address as people write it: a dotted quad, or RFC 5952 text for IPv6 (lower-case hex
  /// groups, the longest run of two or more zero groups as `::`).
  public static func text(of bytes: [UInt8]) -> String {
    if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
    guard bytes.count == 16 else { return "?" }
    let groups = (0..<8).map { UInt16(bytes[$0 * 2]) << 8 | UInt16(bytes[$0 * 2 + 1]) }
    var best: Range<Int>?
    var index = 0
    while index < 8 {
      guard groups[index] == 0 else {
        index += 1
        continue
      }
      var end = index
      while end < 8, groups[end] == 0 { end += 1 }
      if end - index >= 2, end - index > (best?.count ?? 0) { best = index..<end }
      index = end
    }
    func hex(_ range: Range<Int>) -> String {
      range.map { String(groups[$0], radix: 16) }.joined(separator: ":")
    }
    guard let best else { return hex(0..<8) }
    return hex(0..<best.lowerBound) + "::" + hex(best.upperBound..<8)
  }
}

/// Where `connect` sends the datagram that makes a quiet WireGuard tunnel shake hands. WireGuard
/// shakes hands when it has something to send to a peer, and a client without
/// `PersistentKeepalive` on a machine that sends nothing never has: `connect` would wait for a
/// proof that never comes, though the peer is up. So it sends one empty UDP datagram into the
/// tunnel device for each peer (bound to the device, so it cannot leave any other way; with a
/// TTL of 1, so the peer cannot forward it further), to port 9 (discard), at an address the peer
/// is routed: a documentation address (192.0.2.1, 198.51.100.1, 203.0.113.1, 2001:db8::1) where
/// the peer's range holds one — a full tunnel's 0.0.0.0/0 — since no host anywhere has it; else
/// the range's first host.
public enum HandshakeProbe {
  /// Port 9, discard: nothing is meant to answer.
  public static let port: UInt16 = 9
  /// At most this many peers are sent to.
  public static let peerLimit = 8

  /// The documentation networks' first hosts (RFC 5737's three, RFC 3849's).
  static let documentation4: [[UInt8]] = [[192, 0, 2, 1], [198, 51, 100, 1], [203, 0, 113, 1]]
  static let documentation6: [[UInt8]] = [[0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 11) + [1]]

  /// For each peer (up to `peerLimit`), the addresses to try in order (IPv4 first): inside its
  /// allowed IPs, routed to it and to no other peer (the longest prefix wins, as WireGuard
  /// routes), none of the device's own addresses (`own`), none that cannot be a destination.
  /// A peer with no such address gets none.
  public static func destinations(peers: [WireGuardPeer], own: [[UInt8]]) -> [[[UInt8]]] {
    let routes = peers.enumerated().flatMap { index, peer in peer.allowedRanges.map { (range: $0, peer: index) } }
    func routedPeer(_ address: [UInt8]) -> Int? {
      routes.filter { $0.range.contains(address) }.max { $0.range.prefixLength < $1.range.prefixLength }?.peer
    }
    return peers.prefix(peerLimit).indices.map { index in
      let ranges = peers[index].allowedRanges.filter(\.isIPv4) + peers[index].allowedRanges.filter { !$0.isIPv4 }
      var chosen: [[UInt8]] = []
      for range in ranges where !chosen.contains(where: { $0.count == range.address.count }) {
        let documentation = (range.isIPv4 ? documentation4 : documentation6).filter(range.contains)
        // The range's first hosts, then its first address (all a /32 or /128 has).
        let candidates =
          documentation.isEmpty ? (1...3).compactMap { range.address(plus: $0) } + [range.address] : documentation
        if let address = candidates.first(where: { address in
          isDestination(address) && !own.contains(address) && routedPeer(address) == index
        }) {
          chosen.append(address)
        }
      }
      return chosen
    }
  }

  /// Not a destination a datagram can be sent to: unspecified, loopback, multicast, broadcast
  /// (IPv4 `0/8`, `127/8`, `224/4` and above; IPv6 `::`, `::1`, `ff00::/8`).
  static func isDestination(_ address: [UInt8]) -> Bool {
    if address.count == 4 { return address[0] != 0 && address[0] != 127 && address[0] < 224 }
    if address[0] == 0xFF { return false }
    return !address.dropLast().allSatisfy { $0 == 0 } || address.last! > 1
  }
}
