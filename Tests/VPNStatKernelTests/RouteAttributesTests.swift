import CLinux
import Testing

import VPNStatKernel
import VPNStatModel

/// The walk over a message's route attributes: each attribute where its padded length says, the
/// flag bits off its type, and a length that does not fit what is left ends the walk there.
struct RouteAttributesTests {
  /// One attribute as the kernel lays it out: length, type, value, padding to four bytes.
  func attribute(_ type: UInt16, _ value: [UInt8], length: UInt16? = nil) -> [UInt8] {
    var bytes = RouteAttributes.encode(type: type, value: value)
    if let length { withUnsafeBytes(of: length) { bytes.replaceSubrange(0..<2, with: $0) } }
    return bytes
  }

  func walk(_ bytes: [UInt8]) -> [(UInt16, [UInt8])] {
    bytes.withUnsafeBytes { raw in RouteAttributes(raw).map { ($0.type, Array($0.value)) } }
  }

  @Test("each attribute is read where the padded length of the one before ends, its flag bits off its type")
  func chain() {
    let bytes =
      attribute(3, Array("wg0\0".utf8)) + attribute(0x8000 | 18, [1, 2, 3]) + attribute(7, [])
      + attribute(0x4000 | 9, [9, 9, 9, 9, 9])
    let read = walk(bytes)
    #expect(read.map(\.0) == [3, 18, 7, 9])
    #expect(read.map(\.1) == [Array("wg0\0".utf8), [1, 2, 3], [], [9, 9, 9, 9, 9]])
  }

  @Test(
    "a length past what is left of the message, or shorter than a header, ends the walk: nothing is read past the end",
    arguments: [
      (UInt16(200), "past the end"), (UInt16(13), "one byte past the end"), (UInt16(3), "shorter than its header"),
      (UInt16(0), "zero"),
    ])
  func lengthThatDoesNotFit(length: UInt16, reason: String) {
    let bytes = attribute(3, Array("lo\0".utf8)) + attribute(4, [1, 2, 3, 4, 5, 6, 7, 8], length: length)
    let read = walk(bytes)
    #expect(read.map(\.0) == [3], "\(reason)")
    // Cut anywhere inside the first attribute (seven bytes, its padding not needed at the end):
    // nothing is read at all.
    for cut in 0..<7 { #expect(walk(Array(bytes.prefix(cut))).isEmpty, "cut at \(cut)") }
  }

  @Test("a link message whose attributes run past its end still gives the link it names, with what fits")
  func linkMessageCutShort() throws {
    var header = [UInt8](repeating: 0, count: MemoryLayout<ifinfomsg>.size)
    withUnsafeBytes(of: Int32(7)) { header.replaceSubrange(4..<8, with: $0) }
    let name = attribute(UInt16(IFLA_IFNAME), Array("tun7\0".utf8))
    let stats = attribute(UInt16(IFLA_STATS64), [UInt8](repeating: 1, count: 200), length: 4000)
    let record = try #require(
      (header + name + stats).withUnsafeBytes { RouteLinkMessages.parseLink($0) })
    #expect(record.index == 7)
    #expect(record.name == InterfaceName("tun7"))
    #expect(record.counters == nil)
    let nameless = (header + stats + name).withUnsafeBytes { RouteLinkMessages.parseLink($0) }
    #expect(nameless == nil)
  }
}
