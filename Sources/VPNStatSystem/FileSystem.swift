import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// The file system questions and changes the store makes: whether a path exists or may be
/// written, what a path really names, making a directory chain and a file with a fixed mode.
package enum FileSystem {
  package static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

  /// Throws why this process may not read `path` (ENOENT, EACCES: its real rights, as
  /// `access(2)` judges them); returns when it may.
  package static func checkReadable(_ path: String) throws(Errno) {
    _ = try Errno.retrying { access(path, R_OK) }
  }

  /// Whether this process may write `path` (its effective rights, as `access(2)` judges them).
  package static func isWritable(_ path: String) -> Bool { access(path, W_OK) == 0 }

  /// The canonical path (symlinks resolved), or nil when `path` does not exist.
  package static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// Creates each missing directory of `path` with exactly `mode` (not the umask's idea of it).
  /// Throws the first error other than "exists", with the directory it happened at.
  package static func createDirectories(_ path: String, mode: mode_t) throws(Failure) {
    var prefix = ""
    for component in path.split(separator: "/", omittingEmptySubsequences: true) {
      prefix += "/" + component
      if mkdir(prefix, mode) == 0 {
        chmod(prefix, mode)
      } else if errno != EEXIST {
        throw Failure(path: prefix, error: Errno.current)
      }
    }
  }

  /// Creates an empty file with exactly `mode` unless one exists; false when it existed.
  package static func createFile(_ path: String, mode: mode_t) throws(Failure) -> Bool {
    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
    if fd < 0 {
      let error = Errno.current
      if error == .exists { return false }
      throw Failure(path: path, error: error)
    }
    fchmod(fd, mode)
    close(fd)
    return true
  }

  /// Removes the file at `path` (not a directory); one already gone is not an error.
  package static func remove(_ path: String) throws(Failure) {
    if unlink(path) != 0, errno != ENOENT { throw Failure(path: path, error: Errno.current) }
  }

  /// A file system call that failed, and where.
  package struct Failure: Error, CustomStringConvertible {
    package var path: String
    package var error: Errno
    package var description: String { "\(path): \(error)" }
  }
}
