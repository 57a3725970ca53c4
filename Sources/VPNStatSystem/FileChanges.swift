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
  package let directory: SystemPath

  /// Watches `directory` for `names` being created, written, moved in or out, or deleted.
  /// Not for a close after opening to write (`IN_CLOSE_WRITE`): SQLite opens a `-wal` read-write
  /// whenever it may, even for a read-only connection, so root's own read would wake it again
  /// and again. Throws the `Errno` of a directory that cannot be watched (ENOENT: none).
  package init(directory: SystemPath, names: [String]) throws {
    self.directory = directory
    self.names = Set(names.map { Array($0.utf8) })
    let fd = try retryingInterrupts { inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)) }
    descriptor = FileDescriptor(rawValue: fd)
    let mask = UInt32(IN_CREATE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE)
    do throws(Errno) {
      _ = try Errno.retrying { directory.withCString { inotify_add_watch(fd, $0, mask | UInt32(IN_ONLYDIR)) } }
    } catch {
      descriptor.close()
      throw error
    }
  }

  /// Consumes the events so far; true when one was about a watched name, or when some may have
  /// been lost (the queue overflowed, the directory went away): then the files may have changed.
  package func consume() -> Bool {
    var changed = false
    let size = 16 * 1024
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
    defer { buffer.deallocate() }
    while true {
      let n = (try? Errno.retrying { read(descriptor.rawValue, buffer.baseAddress, size) }) ?? -1
      guard n > 0 else { return changed }
      var offset = 0
      let header = MemoryLayout<inotify_event>.size
      while offset + header <= n {
        let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
        let nameLength = Int(event.len)
        if event.mask & UInt32(IN_Q_OVERFLOW | IN_IGNORED | IN_DELETE_SELF) != 0 { changed = true }
        if nameLength > 0, offset + header + nameLength <= n {
          let bytes = UnsafeRawBufferPointer(rebasing: buffer[(offset + header)..<(offset + header + nameLength)])
          // The name is NUL-padded to an alignment.
          let name = Array(bytes.prefix { $0 != 0 })
          if names.contains(name) { changed = true }
        }
        offset += header + nameLength
      }
    }
  }

  deinit { descriptor.close() }
}
