import CLinux

/// Route attributes (`struct rtattr` chains): type, then value bytes.
///
/// Here, in the module that parses every message with them: a link's dump message carries some
/// fifty attributes, and a call per attribute into another module (this toolchain does not
/// serialize a `package` declaration's `@inlinable` body) was an eighth of `status --json`'s
/// instructions at 1000 interfaces.
package struct RouteAttributes: Sequence {
  let bytes: UnsafeRawBufferPointer

  package init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

  package struct Iterator: IteratorProtocol {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    package mutating func next() -> (type: UInt16, value: UnsafeRawBufferPointer)? {
      // Wrapping arithmetic, with nothing to wrap: `offset` stays within the buffer and each sum
      // adds a 16-bit length to it. Checked arithmetic was a fifth of each attribute's
      // instructions, and a link dump's messages hold some forty attributes each.
      let remaining = bytes.count &- offset
      guard remaining >= 4, let base = bytes.baseAddress else { return nil }
      let length = Int((base + offset).loadUnaligned(as: UInt16.self))
      let type = (base + (offset &+ 2)).loadUnaligned(as: UInt16.self)
      guard length >= 4, length <= remaining else { return nil }
      // Within the bounds just checked: made from the address, not by slicing (whose checks and
      // rebasing cost a link dump's parse a third of its instructions).
      let value = UnsafeRawBufferPointer(start: base + (offset &+ 4), count: length &- 4)
      offset = offset &+ Int(clinux_rta_align(UInt32(truncatingIfNeeded: length)))
      // NLA_F_NESTED and NLA_F_NET_BYTEORDER live in the top bits of the type.
      return (type & 0x3FFF, value)
    }
  }

  package func makeIterator() -> Iterator { Iterator(bytes: bytes) }

  /// Builds one attribute: header, value, padding.
  package static func encode(type: UInt16, value: [UInt8]) -> [UInt8] {
    let length = 4 + value.count
    var out = [UInt8]()
    out.reserveCapacity(Int(clinux_rta_align(UInt32(length))))
    withUnsafeBytes(of: UInt16(length).littleEndian) { out.append(contentsOf: $0) }
    withUnsafeBytes(of: type.littleEndian) { out.append(contentsOf: $0) }
    out.append(contentsOf: value)
    while out.count % 4 != 0 { out.append(0) }
    return out
  }
}

extension UnsafeRawBufferPointer {
  /// The bytes up to the first NUL, for netlink string attributes.
  package var cStringBytes: UnsafeRawBufferPointer {
    if let end = firstIndex(of: 0) { return UnsafeRawBufferPointer(rebasing: self[0..<end]) }
    return self
  }
}
