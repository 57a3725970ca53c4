import Testing

@testable import VPNStatSystem

/// The parser of Linux's ACL attributes and its verdict, on bytes: no file, no root. The format
/// (`<linux/posix_acl_xattr.h>`): a 4-byte version 2, then 8-byte entries {tag, permissions, id},
/// little-endian.
struct AccessControlListTests {
  /// An attribute's bytes: version 2, then the entries (tag, permissions, id).
  static func attribute(_ entries: [(UInt16, UInt16, UInt32)], version: UInt32 = 2) -> [UInt8] {
    func little<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
      (0..<(T.bitWidth / 8)).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
    return little(version) + entries.flatMap { little($0.0) + little($0.1) + little($0.2) }
  }

  /// The minimal ACL (the mode bits as entries) with `extra` entries and a mask.
  static func acl(_ extra: [(UInt16, UInt16, UInt32)], mask: UInt16? = 6, owningGroup: UInt16 = 4, other: UInt16 = 4)
    -> AccessControlList?
  {
    let any: UInt32 = 0xFFFF_FFFF
    var entries: [(UInt16, UInt16, UInt32)] = [(0x01, 6, any)] + extra + [(0x04, owningGroup, any)]
    if let mask { entries.append((0x10, mask, any)) }
    entries.append((0x20, other, any))
    return AccessControlList(attribute: attribute(entries))
  }

  @Test("what getfacl shows for setfacl -m u:nobody:rw, byte for byte, is read as it is")
  func setfaclBytes() throws {
    // getfattr -n system.posix_acl_access -e hex, after `setfacl -m u:nobody:rw` on a 0644 file.
    let hex = "0200000001000600ffffffff02000600feff000004000400ffffffff10000600ffffffff20000400ffffffff"
    let bytes = stride(from: 0, to: hex.count, by: 2).map { offset -> UInt8 in
      let start = hex.index(hex.startIndex, offsetBy: offset)
      return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
    }
    let list = try #require(AccessControlList(attribute: bytes))
    #expect(list.entries.map(\.tag) == [.owner, .user, .owningGroup, .mask, .other])
    #expect(list.entries[1] == AccessControlList.Entry(tag: .user, permissions: 6, id: 65534))
    #expect(list.othersWriter(me: 0, owningGroup: 0) == list.entries[1])
  }

  @Test("a named user or group with write through the mask is someone else; root, this user and root's group are not")
  func namedEntries() {
    let nobody: UInt32 = 65534
    #expect(Self.acl([(0x02, 6, nobody)])?.othersWriter(me: 0, owningGroup: 0)?.id == nobody)
    #expect(Self.acl([(0x02, 2, nobody)])?.othersWriter(me: 0, owningGroup: 0)?.id == nobody, "write alone")
    #expect(Self.acl([(0x02, 5, nobody)])?.othersWriter(me: 0, owningGroup: 0) == nil, "read and execute")
    #expect(Self.acl([(0x02, 7, 0)])?.othersWriter(me: 1000, owningGroup: 0) == nil, "root")
    #expect(Self.acl([(0x02, 7, 1000)])?.othersWriter(me: 1000, owningGroup: 0) == nil, "this user")
    #expect(Self.acl([(0x02, 7, 1000)])?.othersWriter(me: 0, owningGroup: 0)?.id == 1000, "another user")
    #expect(Self.acl([(0x08, 6, 0)])?.othersWriter(me: 0, owningGroup: 0) == nil, "root's group")
    #expect(Self.acl([(0x08, 6, 100)])?.othersWriter(me: 0, owningGroup: 0)?.tag == .group)
    // The first writer is named, whatever follows.
    let two = Self.acl([(0x02, 4, 7), (0x08, 6, 100), (0x02, 6, 8)])?.othersWriter(me: 0, owningGroup: 0)
    #expect(two?.tag == .group && two?.id == 100)
  }

  @Test(
    "the mask bounds named entries and the owning group; without one (never from the kernel) they count as they are")
  func mask() {
    #expect(Self.acl([(0x02, 6, 65534)], mask: 4)?.othersWriter(me: 0, owningGroup: 0) == nil)
    #expect(Self.acl([(0x08, 7, 100)], mask: 5)?.othersWriter(me: 0, owningGroup: 0) == nil)
    #expect(Self.acl([(0x02, 6, 65534)], mask: nil)?.othersWriter(me: 0, owningGroup: 0)?.id == 65534)
    // The owning group is others unless it is root's, as in the mode rule.
    #expect(Self.acl([], mask: 6, owningGroup: 6)?.othersWriter(me: 0, owningGroup: 100)?.tag == .owningGroup)
    #expect(Self.acl([], mask: 6, owningGroup: 6)?.othersWriter(me: 0, owningGroup: 0) == nil)
    #expect(Self.acl([], mask: 4, owningGroup: 6)?.othersWriter(me: 0, owningGroup: 100) == nil)
    // Other is everyone: no mask applies.
    #expect(Self.acl([], mask: 0, other: 2)?.othersWriter(me: 0, owningGroup: 0)?.tag == .other)
    // The owner's entry and the mask itself let no one else write.
    #expect(Self.acl([], mask: 7)?.othersWriter(me: 0, owningGroup: 0) == nil)
  }

  @Test("what is not an ACL of version 2 in whole entries is not read (the caller refuses it)")
  func malformed() {
    let good: [(UInt16, UInt16, UInt32)] = [(0x01, 6, 0), (0x04, 4, 0), (0x20, 4, 0)]
    #expect(AccessControlList(attribute: Self.attribute(good)) != nil)
    #expect(AccessControlList(attribute: Self.attribute(good, version: 1)) == nil)
    #expect(AccessControlList(attribute: Self.attribute(good) + [0]) == nil)
    #expect(AccessControlList(attribute: Array(Self.attribute(good).dropLast())) == nil)
    #expect(AccessControlList(attribute: [2, 0, 0]) == nil)
    #expect(AccessControlList(attribute: Self.attribute([(0x40, 6, 0)])) == nil, "unknown tag")
    #expect(AccessControlList(attribute: Self.attribute([]))?.entries == [])
  }
}
