import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A POSIX access control list as Linux keeps it in an extended attribute of a file:
/// `system.posix_acl_access`, and for a directory `system.posix_acl_default`, which what is
/// created in it inherits. `DirectoryTrust` reads it besides the mode bits, because an entry can
/// let another user write a file whose mode says no one else may: with one, `ls -l` shows the
/// mask in the group bits (`-rw-rw----+ root root` for `user:nobody:rw`), not who it is for.
package struct AccessControlList: Hashable, Sendable {
  /// Whose permissions an entry holds (`ACL_USER_OBJ` … `ACL_OTHER` of `<linux/posix_acl.h>`).
  package enum Tag: UInt16, Sendable {
    /// The file's owner (`ACL_USER_OBJ`): the mode's owner bits.
    case owner = 0x01
    /// A named user (`ACL_USER`), through the mask.
    case user = 0x02
    /// The file's group (`ACL_GROUP_OBJ`), through the mask.
    case owningGroup = 0x04
    /// A named group (`ACL_GROUP`), through the mask.
    case group = 0x08
    /// The most a named entry or the owning group may have (`ACL_MASK`): the mode's group bits.
    case mask = 0x10
    /// Everyone else (`ACL_OTHER`): the mode's other bits.
    case other = 0x20
  }

  /// One entry: whose, what it allows (read 4, write 2, execute 1), and for a named entry whom.
  package struct Entry: Hashable, Sendable {
    package var tag: Tag
    package var permissions: UInt16
    /// The uid of a named user, the gid of a named group; meaningless for the other tags.
    package var id: UInt32

    package init(tag: Tag, permissions: UInt16, id: UInt32) {
      self.tag = tag
      self.permissions = permissions
      self.id = id
    }

    package var allowsWrite: Bool { permissions & 0x02 != 0 }
  }

  /// The entries in the order the attribute lists them.
  package var entries: [Entry]

  /// The attribute names: the ACL that decides who may use the file, and a directory's default.
  package static let accessAttribute = "system.posix_acl_access"
  package static let defaultAttribute = "system.posix_acl_default"

  package init(entries: [Entry]) { self.entries = entries }

  /// Parses the attribute's bytes: a 4-byte version, 2, then 8-byte entries {tag (16 bits),
  /// permissions (16 bits), id (32 bits)}, little-endian. Nil for anything else — another
  /// version, a length that is not a whole number of entries, an unknown tag: what cannot be
  /// read cannot be trusted.
  package init?(attribute bytes: [UInt8]) {
    func little(_ offset: Int, _ count: Int) -> UInt32 {
      var value: UInt32 = 0
      for index in (0..<count).reversed() { value = value << 8 | UInt32(bytes[offset + index]) }
      return value
    }
    guard bytes.count >= 4, (bytes.count - 4) % 8 == 0, little(0, 4) == 2 else { return nil }
    var entries: [Entry] = []
    for offset in stride(from: 4, to: bytes.count, by: 8) {
      guard let tag = Tag(rawValue: UInt16(little(offset, 2))) else { return nil }
      entries.append(Entry(tag: tag, permissions: UInt16(little(offset + 2, 2)), id: little(offset + 4, 4)))
    }
    self.entries = entries
  }

  /// The first entry that lets someone write other than those the mode rule trusts — root, the
  /// user `me`, and the owning group only when it is root's (`owningGroup` 0) — or nil. A named
  /// entry and the owning group's are worth what the mask lets through (all, without one);
  /// the owner's is the owner's.
  package func othersWriter(me: UInt32, owningGroup: UInt32) -> Entry? {
    let throughMask = entries.first { $0.tag == .mask }?.allowsWrite ?? true
    return entries.first { entry in
      guard entry.allowsWrite else { return false }
      switch entry.tag {
      case .owner, .mask: return false
      case .user: return throughMask && entry.id != 0 && entry.id != me
      case .group: return throughMask && entry.id != 0
      case .owningGroup: return throughMask && owningGroup != 0
      case .other: return true
      }
    }
  }
}

extension AccessControlList {
  /// The ACL the file at `path` holds in `attribute` (`accessAttribute` or `defaultAttribute`;
  /// `path` itself, not what a last symbolic link names). Nil when it has none: ENODATA, or
  /// EOPNOTSUPP from a file system without ACLs. Throws what else the kernel says, and
  /// `Unreadable` for bytes that are no ACL.
  package static func read(_ path: String, attribute: String) throws -> AccessControlList? {
    // Most ACLs are a handful of entries: one call. A longer one says how long (ERANGE).
    var size = 4 + 8 * 32
    while true {
      var bytes = [UInt8](repeating: 0, count: size)
      let count = bytes.withUnsafeMutableBytes { raw in
        Result { () throws(Errno) in try Errno.retrying { lgetxattr(path, attribute, raw.baseAddress, raw.count) } }
      }
      switch count {
      case .success(let count):
        guard let list = AccessControlList(attribute: Array(bytes[0..<count])) else { throw Unreadable() }
        return list
      case .failure(let error) where error.rawValue == ENODATA || error == .operationNotSupported:
        return nil
      case .failure(let error) where error.rawValue == ERANGE:
        size = max(size * 2, try Errno.retrying { lgetxattr(path, attribute, nil, 0) })
      case .failure(let error):
        throw error
      }
    }
  }

  /// An attribute that holds no ACL vpnstat can read (another version, a broken length).
  package struct Unreadable: Error, CustomStringConvertible {
    package var description: String { "not an ACL vpnstat can read" }
  }

  /// How `getfacl` names the entry, with the number beside a name: `user:nobody (uid 65534)`,
  /// `group:nogroup (gid 65534)`, `group::` (the file's group), `other::`.
  package static func describe(_ entry: Entry, owningGroup: UInt32) -> String {
    switch entry.tag {
    case .user: SystemAccounts.userName(entry.id).map { "user:\($0) (uid \(entry.id))" } ?? "user:\(entry.id)"
    case .group: SystemAccounts.groupName(entry.id).map { "group:\($0) (gid \(entry.id))" } ?? "group:\(entry.id)"
    case .owningGroup: "group:: (the file's group, gid \(owningGroup))"
    case .owner: "user::"
    case .mask: "mask::"
    case .other: "other::"
    }
  }
}

/// The names of users and groups in /etc/passwd and /etc/group, for messages only: a uid in an
/// ACL entry reads better as `nobody`. Read from the files rather than through NSS, which a
/// static binary would have to load at run time; a name they lack is shown as its number.
package enum SystemAccounts {
  package static func userName(_ uid: UInt32) -> String? { name(of: uid, in: "/etc/passwd") }
  package static func groupName(_ gid: UInt32) -> String? { name(of: gid, in: "/etc/group") }

  /// The first field of the first line of `file` whose third field is `id`.
  static func name(of id: UInt32, in file: String) -> String? {
    guard let bytes = try? SmallFile.readRegularFile(SystemPath(file), limit: 1 << 22) else { return nil }
    for line in bytes.split(separator: 0x0A) {
      let fields = line.split(separator: 0x3A, maxSplits: 3, omittingEmptySubsequences: false)
      guard fields.count > 2, !fields[0].isEmpty, UInt32(String(decoding: fields[2], as: UTF8.self)) == id else {
        continue
      }
      return String(decoding: fields[0], as: UTF8.self)
    }
    return nil
  }
}
