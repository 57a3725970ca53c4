import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// Changes to some files of one directory as a pollable descriptor (inotify): how a reader that
/// must cost nothing while nothing happens (`vpnstat notify`) learns that a database and its
/// `-wal` were written, without looking. The directory is watched, not the files: a `-wal`
/// comes and goes with its writers, and a database may be created after the watch starts.
package final class FileChanges {
  package let descriptor: FileDescriptor
  /// The names (in the directory) whose changes count.
  package let names: Set<[UInt8]>
  /// The names whose change of owner or mode (or other attributes) counts too.
  package let attributeNames: Set<[UInt8]>
  package let directory: SystemPath
  /// The watch is gone or no longer names the path it was made for (the directory was deleted,
  /// moved, or its file system unmounted): nothing more will be reported, so a caller that
  /// relies on the reports must look for itself from now on.
  package private(set) var isLost = false

  /// Watches `directory` for `names` being created, written, moved in or out, or deleted, and
  /// `attributesOf` (some of them) being given another owner or mode.
  /// Not for a close after opening to write (`IN_CLOSE_WRITE`): SQLite opens a `-wal` read-write
  /// whenever it may, even for a read-only connection, so root's own read would wake it again
  /// and again. Nor for the attributes of every name: root's SQLite gives a `-wal` it opens its
  /// database's owner, a change of attributes at each open even when they stay the same.
  /// Throws the `Errno` of a directory that cannot be watched (ENOENT: none).
  package init(directory: SystemPath, names: [String], attributesOf: [String] = []) throws {
    self.directory = directory
    self.names = Set(names.map { Array($0.utf8) })
    attributeNames = Set(attributesOf.map { Array($0.utf8) })
    let fd = try retryingInterrupts { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) }
    descriptor = FileDescriptor(rawValue: fd)
    var mask = UInt32(IN_CREATE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_MOVE_SELF)
    if !attributesOf.isEmpty { mask |= UInt32(IN_ATTRIB) }
    do throws(Errno) {
      _ = try Errno.retrying { directory.withCString { inotify_add_watch(fd, $0, mask | UInt32(IN_ONLYDIR)) } }
    } catch {
      descriptor.close()
      throw error
    }
  }

  /// Consumes the events so far; true when one was about a watched name, or when some may have
  /// been lost (the queue overflowed, the directory went away: `isLost`): then the files may have
  /// changed. Once the watch is lost, always true. Nothing queued costs one `read`, answered at
  /// once: a recorder asks every second.
  package func consume() -> Bool {
    guard !isLost else { return true }
    // On the stack: one event is at most its header and a name of 255 bytes.
    return withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 8) { consume(into: $0) }
  }

  private func consume(into buffer: UnsafeMutableRawBufferPointer) -> Bool {
    var changed = false
    while true {
      let n = (try? Errno.retrying { read(descriptor.rawValue, buffer.baseAddress, buffer.count) }) ?? -1
      guard n > 0 else { return changed }
      var offset = 0
      let header = MemoryLayout<inotify_event>.size
      while offset + header <= n {
        let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
        let nameLength = Int(event.len)
        if event.mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) != 0 { isLost = true }
        if isLost || event.mask & UInt32(IN_Q_OVERFLOW) != 0 { changed = true }
        if nameLength > 0, offset + header + nameLength <= n {
          let bytes = UnsafeRawBufferPointer(rebasing: buffer[(offset + header)..<(offset + header + nameLength)])
          // The name is NUL-padded to an alignment.
          let name = Array(bytes.prefix { $0 != 0 })
          if event.mask & UInt32(IN_ATTRIB) != 0 {
            if attributeNames.contains(name) { changed = true }
          } else if names.contains(name) {
            changed = true
          }
        }
        offset += header + nameLength
      }
    }
  }

  deinit { descriptor.close() }
}
