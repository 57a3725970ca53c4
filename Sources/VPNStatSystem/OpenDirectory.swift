import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A directory open for reading one entry at a time, for walks that run often and must stay
/// cheap: the /proc/*/fd walk that finds which process holds a socket runs on a capture's
/// refresh. Entries are opened and read relative to the directory (`openat`, `readlinkat`), so
/// a walk builds no paths, and a name is lent to the caller, not copied. Closed when released.
package final class OpenDirectory {
  private let stream: OpaquePointer

  /// One entry (never `.` or `..`), lent for the duration of a `forEachEntry` call.
  package struct Entry {
    /// The name's bytes, without the terminating NUL.
    package let name: UnsafeBufferPointer<UInt8>
    /// The entry's inode number (`d_ino`).
    package let identity: UInt64
    fileprivate let cName: UnsafePointer<CChar>
  }

  /// Opens the directory at `path`. Throws ENOENT when it is gone, EACCES for another user's.
  package convenience init(_ path: SystemPath) throws(Errno) {
    let fd = try Errno.retrying { path.withCString { open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) } }
    try self.init(adopting: fd)
  }

  private init(adopting fd: Int32) throws(Errno) {
    do throws(Errno) {
      // fdopendir sets errno whenever it fails: a NULL without one is not expected.
      guard let stream = try Errno.retryingPointer({ fdopendir(fd) }) else { throw Errno.invalidArgument }
      self.stream = stream
    } catch {
      FileDescriptor(rawValue: fd).close()
      throw error
    }
  }

  deinit { closedir(stream) }

  private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

  /// Opens the directory `entry` names, or `component` inside it (`fd` of a /proc/PID entry).
  package func directory(_ entry: Entry, appending component: StaticString? = nil) throws(Errno) -> OpenDirectory {
    let parent = dirfd(stream)
    let flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC
    guard let component else {
      return try OpenDirectory(adopting: try Errno.retrying { openat(parent, entry.cName, flags) })
    }
    // NAME/COMPONENT on the stack: one openat, no allocation.
    let length = entry.name.count + 1 + component.utf8CodeUnitCount
    let fd = try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length + 1) { (path) throws(Errno) -> Int32 in
      _ = path.initialize(fromContentsOf: entry.name)
      path[entry.name.count] = 0x2F
      let tail = UnsafeBufferPointer(start: component.utf8Start, count: component.utf8CodeUnitCount)
      _ = UnsafeMutableBufferPointer(rebasing: path[(entry.name.count + 1)...]).initialize(fromContentsOf: tail)
      path[length] = 0
      return try path.withMemoryRebound(to: CChar.self) { (cPath) throws(Errno) -> Int32 in
        try Errno.retrying { openat(parent, cPath.baseAddress!, flags) }
      }
    }
    return try OpenDirectory(adopting: fd)
  }

  /// Calls `body` with each entry until it returns false.
  package func forEachEntry(_ body: (Entry) -> Bool) throws(Errno) {
    while true {
      guard let entry = try Errno.retryingPointer({ readdir(stream) }) else { return }
      // The name in place, in the entry readdir lent (valid until the next readdir).
      let cName = UnsafeRawPointer(entry).advanced(by: Self.nameOffset).assumingMemoryBound(to: CChar.self)
      let name = UnsafeBufferPointer(
        start: UnsafeRawPointer(cName).assumingMemoryBound(to: UInt8.self), count: strlen(cName))
      if name.count == 1 && name[0] == 0x2E || name.count == 2 && name[0] == 0x2E && name[1] == 0x2E { continue }
      let keepGoing = body(Entry(name: name, identity: UInt64(entry.pointee.d_ino), cName: cName))
      if !keepGoing { return }
    }
  }

  /// Reads the symbolic link `entry` into `buffer`: the target's byte count (cut at the
  /// buffer's size). Throws ENOENT for a link gone since it was listed, EINVAL for no link.
  package func symbolicLink(_ entry: Entry, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
    let parent = dirfd(stream)
    return try Errno.retrying {
      readlinkat(parent, entry.cName, buffer.baseAddress!.assumingMemoryBound(to: CChar.self), buffer.count)
    }
  }
}
