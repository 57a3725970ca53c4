import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// An owned-by-convention file descriptor with the few calls vpnstat makes, each retried on EINTR
/// and failing with a typed `Errno`. Closing is explicit: the owner decides when.
package struct FileDescriptor: Hashable, Sendable {
  package let rawValue: Int32
  package init(rawValue: Int32) { self.rawValue = rawValue }

  package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws
    -> FileDescriptor
  {
    // A native String lends its own NUL-terminated bytes: no copy, as a `SystemPath` would make.
    try path.withCString { try open(cPath: $0, flags, mode: mode) }
  }

  package static func open(_ path: SystemPath, _ flags: Int32, mode: mode_t = 0) throws
    -> FileDescriptor
  {
    try path.withCString { try open(cPath: $0, flags, mode: mode) }
  }

  private static func open(cPath: UnsafePointer<CChar>, _ flags: Int32, mode: mode_t) throws -> FileDescriptor {
    FileDescriptor(rawValue: try retryingInterrupts { Glibc.open(cPath, flags | O_CLOEXEC, mode) })
  }

  /// Flags to read a file named by a path that must not be a symlink, and whose open must not
  /// wait (a FIFO planted in its place).
  package static let readingNoFollow = O_RDONLY | O_NOFOLLOW | O_NONBLOCK

  /// Opens a file to read it.
  package static func openForReading(_ path: SystemPath) throws -> FileDescriptor {
    try open(path, O_RDONLY)
  }

  /// Opens the regular file at `path` to read it, or refuses what is not one (`NotARegularFile`):
  /// a FIFO planted as a configuration file or a sysfs counter would hold its open, then every
  /// read, until someone writes — for ever — and a device answers what it likes. The open does
  /// not wait (O_NONBLOCK), and fstat says what was opened; a regular file ignores O_NONBLOCK,
  /// so it reads as usual.
  package static func openRegularFile(_ path: SystemPath) throws -> FileDescriptor {
    let fd = try open(path, O_RDONLY | O_NONBLOCK)
    var info = stat()
    do {
      _ = try retryingInterrupts { fstat(fd.rawValue, &info) }
    } catch {
      fd.close()
      throw error
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      fd.close()
      throw NotARegularFile(path: path.description, mode: info.st_mode)
    }
    return fd
  }

  /// Opens the regular file `path` leads to (a symlink followed) to read it, having looked before
  /// opening: the path is first opened `O_PATH`, which runs no device's open, and reopened through
  /// `/proc/self/fd` only when that is a regular file. A link whoever may write its directory can
  /// plant (to `/dev/watchdog`, a tape) is then never opened by root; what it leads to is judged
  /// by the caller's `fstat` as a file named directly would be. Throws `NotARegularFile`.
  package static func openRegularFollowing(_ path: String) throws -> FileDescriptor {
    let located = try open(path, clinux_o_path())
    defer { located.close() }
    var info = stat()
    _ = try retryingInterrupts { fstat(located.rawValue, &info) }
    guard info.st_mode & S_IFMT == S_IFREG else { throw NotARegularFile(path: path, mode: info.st_mode) }
    return try open("/proc/self/fd/\(located.rawValue)", O_RDONLY | O_NONBLOCK)
  }

  package func close() {
    // Linux closes the descriptor even when close reports EINTR: never retry.
    _ = Glibc.close(rawValue)
  }

  package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    try retryingInterrupts { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
  }

  package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws
    -> Int
  {
    try retryingInterrupts { Glibc.pread(rawValue, buffer.baseAddress, buffer.count, offset) }
  }

  /// Writes all of `bytes`, continuing after short writes.
  package func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
    var offset = 0
    while offset < bytes.count {
      let written = try retryingInterrupts {
        Glibc.write(rawValue, bytes.baseAddress! + offset, bytes.count - offset)
      }
      offset += written
    }
  }

  package func writeAll(_ bytes: [UInt8]) throws {
    try bytes.withUnsafeBytes { (raw) in try writeAll(raw) }
  }

  package func writeAll(_ string: String) throws {
    var string = string
    try string.withUTF8 { (utf8) in try writeAll(UnsafeRawBufferPointer(utf8)) }
  }

  /// Who owns the open file and who may write it (fstat: the file itself, whatever path led to
  /// it, so it cannot change between the check and the read).
  package func ownership() throws -> FileOwnership {
    var info = stat()
    _ = try retryingInterrupts { fstat(rawValue, &info) }
    return FileOwnership(owner: info.st_uid, permissions: info.st_mode & 0o7777)
  }

  /// What the kernel says of the open file (fstat).
  package func status() throws -> FileStatus {
    var info = stat()
    _ = try retryingInterrupts { fstat(rawValue, &info) }
    return FileStatus(info)
  }

  package static let standardInput = FileDescriptor(rawValue: 0)
  package static let standardOutput = FileDescriptor(rawValue: 1)
  package static let standardError = FileDescriptor(rawValue: 2)

  package var isTerminal: Bool { isatty(rawValue) == 1 }

  /// True for a pipe or a socket: descriptors whose far end can go away (and poll says so).
  package var isPipeOrSocket: Bool {
    var info = stat()
    guard (try? Errno.retrying({ fstat(rawValue, &info) })) != nil else { return false }
    let type = info.st_mode & S_IFMT
    return type == S_IFIFO || type == S_IFSOCK
  }
}

/// A file read as data or obeyed — a configuration, a wg-quick configuration, a sysfs counter, a
/// presence file — that is not a regular file: refused, never read (see
/// `FileDescriptor.openRegularFile`).
package struct NotARegularFile: Error, Sendable, CustomStringConvertible {
  package var path: String
  /// What it is instead: "a FIFO", "a directory", "a character device"…
  package var kind: String

  package init(path: String, mode: mode_t) {
    self.path = path
    kind = Self.kind(mode)
  }

  /// What a file of this mode is, in words.
  package static func kind(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFIFO: "a FIFO"
    case S_IFDIR: "a directory"
    case S_IFCHR: "a character device"
    case S_IFBLK: "a block device"
    case S_IFSOCK: "a socket"
    case S_IFLNK: "a symbolic link"
    default: "a file of unknown type"
    }
  }

  package var description: String { "\(path) is \(kind), not a regular file" }
}

/// The owner and permission bits of a file, for refusing files others could have written.
package struct FileOwnership: Hashable, Sendable {
  package var owner: UInt32
  package var permissions: UInt32

  package init(owner: UInt32, permissions: UInt32) {
    self.owner = owner
    self.permissions = permissions
  }

  /// Anyone may write it (S_IWOTH).
  package var isWorldWritable: Bool { permissions & 0o002 != 0 }

  /// The real user id of this process: who ran it.
  package static var currentUser: UInt32 { getuid() }
}

/// Which file a path or a descriptor is (device and inode), who owns it, who may write it, and
/// its size: what tells a copy of a file's content from the file it was made of.
package struct FileStatus: Hashable, Sendable {
  package var device: UInt64
  package var inode: UInt64
  package var owner: UInt32
  /// The permission bits (and set-id and sticky bits).
  package var permissions: UInt32
  package var isRegular: Bool
  package var size: Int

  init(_ info: stat) {
    device = UInt64(info.st_dev)
    inode = UInt64(info.st_ino)
    owner = info.st_uid
    permissions = info.st_mode & 0o7777
    isRegular = info.st_mode & S_IFMT == S_IFREG
    size = Int(info.st_size)
  }

  /// The file at `path` (a symlink followed), or nil when there is none or it cannot be looked at.
  package static func of(_ path: String) -> FileStatus? {
    var info = stat()
    // The String's own bytes, lent: passed as is, it was copied into a new C string at each call.
    guard (try? path.withCString { path in try retryingInterrupts({ stat(path, &info) }) }) != nil else { return nil }
    return FileStatus(info)
  }

  /// Others than its owner may write it (S_IWGRP or S_IWOTH).
  package var othersMayWrite: Bool { permissions & 0o022 != 0 }
}

/// Whole-file reads of the small files sysfs and procfs serve.
package enum SmallFile {
  /// Reads up to `limit` bytes of the file at `path`. sysfs attributes are at most a page.
  package static func read(_ path: SystemPath, limit: Int = 4096) throws -> [UInt8] {
    let fd = try FileDescriptor.open(path, O_RDONLY)
    defer { fd.close() }
    return try read(fd, limit: limit)
  }

  /// Reads up to `limit` bytes of the regular file at `path`, refusing anything else
  /// (`NotARegularFile`) without waiting: for files a user could replace by a FIFO (a fixture
  /// sysfs tree, a presence file beside someone's database).
  package static func readRegularFile(_ path: SystemPath, limit: Int = 4096) throws -> [UInt8] {
    let fd = try FileDescriptor.openRegularFile(path)
    defer { fd.close() }
    return try read(fd, limit: limit)
  }

  /// Reads up to `limit` bytes from `fd`, from where it stands to the end.
  package static func read(_ fd: FileDescriptor, limit: Int) throws -> [UInt8] {
    var result = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: min(limit, 4096))
    while result.count < limit {
      let count = try chunk.withUnsafeMutableBytes { (raw) in
        try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<min(raw.count, limit - result.count)]))
      }
      if count == 0 { break }
      result.append(contentsOf: chunk[0..<count])
    }
    return result
  }

  /// The file's text with surrounding whitespace removed, or nil when it cannot be read.
  package static func trimmedText(_ path: SystemPath) -> String? {
    guard let bytes = try? read(path) else { return nil }
    return String(decoding: bytes.trimmingASCIIWhitespace(), as: UTF8.self)
  }

  /// The names in the directory at `path` (not `.` and `..`), as bytes: an interface name in
  /// `/sys/class/net` need not be UTF-8.
  package static func directoryEntries(_ path: SystemPath) throws -> [[UInt8]] {
    try directoryListing(path).map(\.name)
  }

  /// One name in a directory and the identity of the entry (its inode number, `d_ino`): sysfs
  /// never gives a new entry the number of a removed one, so a name whose number changed names
  /// something new (a device deleted and created again under the same name).
  package struct DirectoryEntry: Hashable, Sendable {
    package var name: [UInt8]
    package var identity: UInt64
  }

  /// The entries of the directory at `path` (not `.` and `..`), with their identities.
  package static func directoryListing(_ path: SystemPath) throws -> [DirectoryEntry] {
    var entries: [DirectoryEntry] = []
    try OpenDirectory(path).forEachEntry { entry in
      entries.append(DirectoryEntry(name: Array(entry.name), identity: entry.identity))
      return true
    }
    return entries
  }

  /// Reads a file kept open from its start again (`pread` at 0), into `buffer`; the byte count.
  /// sysfs answers a deleted device's kept attribute with an error (ENODEV), never with another
  /// device's value.
  package static func reread(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    try fd.read(into: buffer, at: 0)
  }

  /// The target of the symbolic link at `path`, as bytes, at most `limit` of them (procfs
  /// links such as `/proc/PID/fd/N` and `/proc/PID/ns/net` are short). Throws EACCES for another
  /// user's process, ENOENT for one that is gone.
  package static func symbolicLink(_ path: SystemPath, limit: Int = 256) throws -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: limit)
    let count = try path.withCString { cPath in
      try buffer.withUnsafeMutableBytes { raw in
        try retryingInterrupts { readlink(cPath, raw.baseAddress!.assumingMemoryBound(to: CChar.self), raw.count) }
      }
    }
    return Array(buffer[0..<count])
  }

  /// True when something exists at `path` (a file, directory or symlink target).
  package static func exists(_ path: SystemPath) -> Bool {
    (try? Errno.retrying { path.withCString { access($0, F_OK) } }) != nil
  }
}

extension BidirectionalCollection where Element == UInt8 {
  /// The bytes without ASCII whitespace at either end (sysfs and procfs values end in a newline).
  @inlinable
  package func trimmingASCIIWhitespace() -> SubSequence {
    var slice = self[...]
    while let first = slice.first, first == 0x20 || first == 0x0A || first == 0x09 || first == 0x0D {
      slice = slice.dropFirst()
    }
    while let last = slice.last, last == 0x20 || last == 0x0A || last == 0x09 || last == 0x0D {
      slice = slice.dropLast()
    }
    return slice
  }
}

/// A file system path as bytes: interface names in `/sys/class/net` need not be UTF-8, so paths
/// built from them must not pass through `String`.
package struct SystemPath: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
  package var bytes: [UInt8]
  package init(_ string: String) { bytes = Array(string.utf8) }
  package init(bytes: [UInt8]) { self.bytes = bytes }
  package init(stringLiteral value: String) { self.init(value) }

  /// This path with `/component` appended.
  package func appending(_ component: String) -> SystemPath {
    SystemPath(bytes: bytes + [0x2F] + Array(component.utf8))
  }
  package func appending(_ name: InterfaceName) -> SystemPath {
    SystemPath(bytes: bytes + [0x2F] + name.bytes)
  }

  package func withCString<R>(_ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
    var terminated = bytes
    terminated.append(0)
    return try terminated.withUnsafeBufferPointer { (buffer) throws -> R in
      try buffer.withMemoryRebound(to: CChar.self) { (chars) throws -> R in try body(chars.baseAddress!) }
    }
  }

  package var description: String { String(decoding: bytes, as: UTF8.self) }
}
