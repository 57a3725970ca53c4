import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// An IPv4 or IPv6 address as two 64-bit words in network order, IPv4 held as `::ffff:a.b.c.d`.
/// Fixed size and trivially hashable so the packet path never allocates; the same form
/// `/proc/net/*6` uses for dual-stack sockets, so an IPv4 flow matches a v4-mapped socket.
package struct IPAddress: Hashable, Comparable, Sendable, CustomStringConvertible {
  package var high: UInt64
  package var low: UInt64

  package init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// An IPv4 address from its 32-bit value in host order (`0xA9FE0001` = 169.254.0.1).
  package init(ipv4 value: UInt32) {
    high = 0
    low = 0x0000_FFFF_0000_0000 | UInt64(value)
  }

  /// Reads 4 (IPv4) or 16 (IPv6) bytes in network order.
  init(ipv4At offset: Int, in bytes: UnsafeRawBufferPointer) {
    self.init(ipv4: UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
  }
  init(ipv6At offset: Int, in bytes: UnsafeRawBufferPointer) {
    high = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    low = UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
  }

  /// Sixteen bytes in network order (IPv4 in its mapped form).
  init(bytes: [UInt8]) {
    precondition(bytes.count == 16)
    var high: UInt64 = 0
    var low: UInt64 = 0
    for i in 0..<8 { high = high << 8 | UInt64(bytes[i]) }
    for i in 8..<16 { low = low << 8 | UInt64(bytes[i]) }
    self.init(high: high, low: low)
  }

  package var isIPv4: Bool { high == 0 && low >> 32 == 0xFFFF }
  /// `0.0.0.0` or `::`: what a socket bound to every address shows as its local address.
  package var isUnspecified: Bool {
    (high == 0 && low == 0) || (isIPv4 && UInt32(truncatingIfNeeded: low) == 0)
  }

  /// Multicast (224.0.0.0/4, ff00::/8) or the IPv4 limited broadcast: never a flow's sender.
  package var isMulticastOrBroadcast: Bool {
    if isIPv4 {
      let value = UInt32(truncatingIfNeeded: low)
      return value >> 28 == 0xE || value == 0xFFFF_FFFF
    }
    return high >> 56 == 0xFF
  }

  package static let unspecified = IPAddress(high: 0, low: 0)

  package static func < (a: IPAddress, b: IPAddress) -> Bool {
    a.high != b.high ? a.high < b.high : a.low < b.low
  }

  package var networkBytes: [UInt8] {
    var out = [UInt8](repeating: 0, count: 16)
    for i in 0..<8 {
      out[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
      out[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i)))
    }
    return out
  }

  /// Dotted quad for IPv4, RFC 5952 text for IPv6 (as `inet_ntop` writes them).
  package var description: String {
    guard isIPv4 else { return NumericAddress.text(networkBytes) ?? "?" }
    // Digits written straight into a small string: a report writes two addresses a flow, and
    // an array of four strings joined cost some 3,000 instructions an address.
    let value = UInt32(truncatingIfNeeded: low)
    return String(unsafeUninitializedCapacity: 15) { text in
      var count = 0
      for shift: UInt32 in [24, 16, 8, 0] {
        let octet = Int(value >> shift & 0xFF)
        if shift != 24 {
          text[count] = UInt8(ascii: ".")
          count += 1
        }
        if octet >= 100 {
          text[count] = UInt8(48 + octet / 100)
          count += 1
        }
        if octet >= 10 {
          text[count] = UInt8(48 + octet / 10 % 10)
          count += 1
        }
        text[count] = UInt8(48 + octet % 10)
        count += 1
      }
      return count
    }
  }

  /// Parses IPv4 dotted-quad or IPv6 text; nil for anything else.
  package init?(parsing text: String) {
    guard let address = NumericAddress.parse(text) else { return nil }
    self.init(networkOrder: address)
  }

  /// Reads 4 (IPv4) or 16 (IPv6) bytes in network order; nil for another length.
  init?(networkOrder address: [UInt8]) {
    switch address.count {
    case 4: self.init(ipv4: address.reduce(0) { $0 << 8 | UInt32($1) })
    case 16: self.init(bytes: address)
    default: return nil
    }
  }
}
