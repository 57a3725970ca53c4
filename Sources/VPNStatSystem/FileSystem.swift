import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// The file system questions and changes the store makes: whether a path exists or may be
/// written, what a path really names, making a directory chain and a file with a fixed mode.
public enum FileSystem {
  public static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

  /// Throws why this process may not read `path` (ENOENT, EACCES: its real rights, as
  /// `access(2)` judges them); returns when it may.
  package static func checkReadable(_ path: String) throws(Errno) {
    _ = try Errno.retrying { access(path, R_OK) }
  }

  /// Whether this process may write `path` (its effective rights, as `access(2)` judges them).
  public static func isWritable(_ path: String) -> Bool { access(path, W_OK) == 0 }

  /// The canonical path (symlinks resolved), or nil when `path` does not exist.
  public static func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }

  /// Creates each missing directory of `path` with exactly `mode` (not the umask's idea of it).
  /// Throws the first error other than "exists", with the directory it happened at.
  public static func createDirectories(_ path: String, mode: mode_t) throws(Failure) {
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
  public static func createFile(_ path: String, mode: mode_t) throws(Failure) -> Bool {
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
  public static func remove(_ path: String) throws(Failure) {
    if unlink(path) != 0, errno != ENOENT { throw Failure(path: path, error: Errno.current) }
  }

  /// A file system call that failed, and where.
  public struct Failure: Error, CustomStringConvertible {
    public var path: String
    public var error: Errno
    public var description: String { "\(path): \(error)" }
  }
}

/// This process as the C library sees it: who it runs as, its arguments and environment.
public enum ProcessIdentity {
  public static var isRoot: Bool { geteuid() == 0 }
  public static var userID: UInt32 { getuid() }

  /// The arguments as the kernel passed them (without the program name), as bytes: they need
  /// not be UTF-8 (an interface name or an `--exec` argument may hold any byte).
  public static var arguments: [[UInt8]] {
    (1..<Int(CommandLine.argc)).map { i in
      Array(UnsafeRawBufferPointer(start: CommandLine.unsafeArgv[i], count: strlen(CommandLine.unsafeArgv[i]!)))
    }
  }

  /// The environment, as text (a variable that is not UTF-8 is kept with replacement characters).
  /// Split at the first `=` byte: searching a String for a Character costs grapheme breaking,
  /// which was a tenth of a short command's instructions.
  public static var environment: [String: String] {
    var result: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
      let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
      if let equals = bytes.firstIndex(of: 0x3D) {
        result[String(decoding: bytes[..<equals], as: UTF8.self)] = String(
          decoding: bytes[(equals + 1)...], as: UTF8.self)
      }
      entry += 1
    }
    return result
  }

  /// SIGPIPE ignored: a write to a closed pipe fails with EPIPE, which the command handles.
  public static func ignoreBrokenPipe() { signal(SIGPIPE, SIG_IGN) }

  public static func exit(_ status: Int32) -> Never { Glibc.exit(status) }
}
