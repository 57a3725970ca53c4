import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// Replacing a file that others read (node_exporter's textfile) without them ever seeing half of
/// it, and without trusting any name in the directory: the text is written to an unnamed file
/// (`O_TMPFILE`), given an unpredictable name with `linkat` (which neither follows nor replaces
/// anything), then renamed over the target (which replaces a planted symlink, never its target).
/// Where `O_TMPFILE` is unsupported, an `O_CREAT|O_EXCL|O_NOFOLLOW` file of a random name.
package enum AtomicFile {
  /// A file that could not be written, and why.
  package struct Failure: Error, CustomStringConvertible {
    package var path: String
    package var error: Errno
    package var description: String { "cannot write \(path): \(error)" }
  }

  /// Writes `bytes` as `directory/name`, readable as `mode` says (0644 unless told); `synced`:
  /// on the disk before it takes the name (what a crash must not lose).
  package static func write(
    _ bytes: [UInt8], named name: String, in directory: String, mode: mode_t = 0o644, synced: Bool = false
  ) throws {
    let target = directory + "/" + name
    let temporary = directory + "/." + name + "." + String(UInt64.random(in: 0...UInt64.max), radix: 36) + ".tmp"
    do {
      let fd: FileDescriptor
      var named = false
      do {
        fd = try FileDescriptor.open(directory, clinux_o_tmpfile() | O_WRONLY, mode: mode)
      } catch let error as Errno where error.rawValue == EOPNOTSUPP || error.rawValue == EISDIR {
        fd = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
        named = true
      }
      defer { fd.close() }
      do {
        try fd.writeAll(bytes)
        // The mode must not depend on the umask: the collector runs as another user.
        _ = try Errno.retrying { fchmod(fd.rawValue, mode) }
        if synced { _ = try Errno.retrying { fsync(fd.rawValue) } }
        if !named {
          let unnamed = "/proc/self/fd/\(fd.rawValue)"
          _ = try Errno.retrying { linkat(AT_FDCWD, unnamed, AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) }
          named = true
        }
        _ = try Errno.retrying { rename(temporary, target) }
      } catch {
        // The error that stopped the write is the one to report, not one of tidying up after it.
        if named { _ = try? Errno.retrying { unlink(temporary) } }
        throw error
      }
    } catch let error as Errno {
      throw Failure(path: target, error: error)
    }
  }

  /// Makes `directory/name` a symbolic link to `target`, unless it already is one: the link is
  /// made under an unpredictable name, then renamed over whatever had the name (a file, another
  /// link, never what a link points to).
  package static func link(named name: String, in directory: String, to target: String) throws {
    let path = directory + "/" + name
    if let current = try? SmallFile.symbolicLink(SystemPath(path), limit: 4096), current.elementsEqual(target.utf8) {
      return
    }
    let temporary = directory + "/." + name + "." + String(UInt64.random(in: 0...UInt64.max), radix: 36) + ".tmp"
    do {
      _ = try Errno.retrying { symlink(target, temporary) }
      do {
        _ = try Errno.retrying { rename(temporary, path) }
      } catch {
        _ = try? Errno.retrying { unlink(temporary) }
        throw error
      }
    } catch let error as Errno {
      throw Failure(path: path, error: error)
    }
  }

  /// Writes `bytes` to a file a person named (`history --svg FILE`): into it, as it is, when the
  /// name is anything but a regular file — a device (`/dev/null`, `/dev/full`), a FIFO, a pipe
  /// reached through `/dev/fd/N` — and atomically as `write(_:named:in:)` otherwise (a regular
  /// file, or none yet). Replacing a device with a regular file (`--svg /dev/null` as root) broke
  /// the machine. A directory, or a socket, is refused.
  package static func write(_ bytes: [UInt8], toNamed path: String) throws {
    var info = stat()
    if (try? Errno.retrying({ stat(path, &info) })) != nil, info.st_mode & S_IFMT != S_IFREG {
      if info.st_mode & S_IFMT == S_IFDIR { throw Failure(path: path, error: Errno(rawValue: EISDIR)) }
      do {
        // Never created, never truncated: a device or a FIFO is written as it is.
        let fd = try FileDescriptor.open(path, O_WRONLY | O_NOCTTY)
        defer { fd.close() }
        try fd.writeAll(bytes)
      } catch let error as Errno {
        throw Failure(path: path, error: error)
      }
      return
    }
    let slash = path.lastIndex(of: "/")
    let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
    guard !name.isEmpty else { throw Failure(path: path, error: Errno(rawValue: EISDIR)) }
    try write(bytes, named: name, in: directory)
  }

  /// Removes temporary files of `name` that a killed writer left in `directory` (only regular
  /// files of this user: a name someone else planted is not ours to touch).
  package static func removeLeftovers(of name: String, in directory: String) {
    guard let listing = try? OpenDirectory(SystemPath(directory)) else { return }
    let prefix = "." + name + "."
    // A directory that cannot be read to its end is left as it is: the next start tries again.
    try? listing.forEachEntry { entry in
      let entryName = String(decoding: entry.name, as: UTF8.self)
      guard entryName.hasPrefix(prefix), entryName.hasSuffix(".tmp") else { return true }
      let path = directory + "/" + entryName
      var info = stat()
      if (try? Errno.retrying({ lstat(path, &info) })) != nil, info.st_mode & S_IFMT == S_IFREG,
        info.st_uid == geteuid()
      {
        _ = try? Errno.retrying { unlink(path) }
      }
      return true
    }
  }
}
