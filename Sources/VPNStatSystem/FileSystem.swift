import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// The file system questions and changes the store makes: whether a path exists or may be
/// written, what a path really names, making a directory chain and a file with a fixed mode.
package enum FileSystem {
  package static func exists(_ path: String) -> Bool { (try? Errno.retrying { access(path, F_OK) }) != nil }

  /// Throws why this process may not read `path` (ENOENT, EACCES: its real rights, as
  /// `access(2)` judges them); returns when it may.
  package static func checkReadable(_ path: String) throws(Errno) {
    _ = try Errno.retrying { access(path, R_OK) }
  }

  /// Whether this process may write `path` (its effective rights, as `access(2)` judges them).
  package static func isWritable(_ path: String) -> Bool { (try? Errno.retrying { access(path, W_OK) }) != nil }

  /// The canonical path (symlinks resolved), or nil when `path` does not exist.
  package static func realPath(_ path: String) -> String? {
    guard let resolved = try? Errno.retryingPointer({ realpath(path, nil) }) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// Creates each missing directory of `path` with exactly `mode` (not the umask's idea of it).
  /// Throws the first error other than "exists", with the directory it happened at.
  package static func createDirectories(_ path: String, mode: mode_t) throws(Failure) {
    var prefix = ""
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      prefix += "/" + component
      do throws(Errno) {
        _ = try Errno.retrying { mkdir(prefix, mode) }
        _ = try Errno.retrying { chmod(prefix, mode) }
      } catch {
        if error != .exists { throw Failure(path: prefix, error: error) }
      }
    }
  }

  /// Creates an empty file with exactly `mode` unless one exists; false when it existed.
  package static func createFile(_ path: String, mode: mode_t) throws(Failure) -> Bool {
    let fd: Int32
    do throws(Errno) {
      fd = try Errno.retrying { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode) }
    } catch {
      if error == .exists { return false }
      throw Failure(path: path, error: error)
    }
    defer { FileDescriptor(rawValue: fd).close() }
    do throws(Errno) {
      _ = try Errno.retrying { fchmod(fd, mode) }
    } catch {
      throw Failure(path: path, error: error)
    }
    return true
  }

  /// Removes the file at `path` (not a directory); one already gone is not an error.
  package static func remove(_ path: String) throws(Failure) {
    do throws(Errno) {
      _ = try Errno.retrying { unlink(path) }
    } catch {
      if error != .noSuchFile { throw Failure(path: path, error: error) }
    }
  }

  /// A file system call that failed, and where.
  package struct Failure: Error, CustomStringConvertible {
    package var path: String
    package var error: Errno
    package var description: String { "\(path): \(error)" }
  }
}
