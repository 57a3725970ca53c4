import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A file of lines that only this user can read or write, appended to one line at a time and
/// taken from in order: where an enforcer keeps what the database would not take.
///
/// Only a file that is certainly ours is believed or written: created 0600 with `O_NOFOLLOW`, in
/// a directory nobody else may write (`DirectoryTrust`), and found again as a regular file of
/// this user's, private, with one name. Anything else is refused with what was found, never
/// read, never replaced. Every append and every change is made under an exclusive `flock` of
/// the file (nobody else can open it to take that lock) and synced before the lock is let go.
package struct PrivateSpoolFile: Sendable {
  package let path: String
  let directory: String

  /// Why the spool could not be used.
  package enum Failure: Error, CustomStringConvertible {
    /// The file or its directory is not what a private file of this user's must be.
    case refused(path: String, detail: String)
    /// The file system refused (a full disk, a read-only mount).
    case failed(path: String, error: Errno)

    package var description: String {
      switch self {
      case .refused(let path, let detail): "refusing the spool \(path): \(detail)"
      case .failed(let path, let error): "cannot use the spool \(path): \(error)"
      }
    }
  }

  /// The most a spool is read: a stop a minute for a year is a few megabytes.
  static let readLimit = 16 << 20

  package init(path: String) {
    self.path = path
    let slash = path.lastIndex(of: "/")
    directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
  }

  /// Appends `line` and a line break, creating the file when there is none. A line cut short by
  /// a crash before it is ended, not joined to this one.
  package func append(_ line: String) throws(Failure) {
    _ = try withLockedFile(creating: true) { fd throws(Failure) in
      var bytes = Array(line.utf8) + [0x0A]
      var info = stat()
      if fstat(fd.rawValue, &info) == 0, info.st_size > 0 {
        var last: UInt8 = 0
        if pread(fd.rawValue, &last, 1, Int(info.st_size) - 1) == 1, last != 0x0A { bytes.insert(0x0A, at: 0) }
      }
      do {
        try fd.writeAll(bytes)
      } catch {
        throw .failed(path: path, error: error as? Errno ?? .invalidArgument)
      }
      try sync(fd)
    }
  }

  /// The whole file (empty when there is none).
  package func read() throws(Failure) -> [UInt8] {
    try withLockedFile(creating: false) { fd throws(Failure) in try contents(fd) } ?? []
  }

  /// Takes `prefix` (what was read and has since been written elsewhere) off the start of the
  /// file, keeping whatever was appended after it; does nothing when the file no longer starts
  /// with it. The file is removed once empty.
  package func consume(_ prefix: [UInt8]) throws(Failure) {
    guard !prefix.isEmpty else { return }
    _ = try withLockedFile(creating: false) { fd throws(Failure) in
      let bytes = try contents(fd)
      guard bytes.starts(with: prefix) else { return }
      let rest = Array(bytes[prefix.count...])
      if rest.isEmpty {
        // Removed under the lock: whoever waits for the lock on this file finds its name gone
        // once it has it, and opens the path again.
        unlink(path)
        return
      }
      guard ftruncate(fd.rawValue, 0) == 0 else { throw .failed(path: path, error: .current) }
      do {
        try fd.writeAll(rest)
      } catch {
        throw .failed(path: path, error: error as? Errno ?? .invalidArgument)
      }
      try sync(fd)
    }
  }

  /// Runs `body` on the spool, opened and checked to be a private regular file of this user's
  /// with one name, under its lock, while the path still leads to it; nil (and `body` not run)
  /// when there is no spool and `creating` is false.
  private func withLockedFile<T>(creating: Bool, _ body: (FileDescriptor) throws(Failure) -> T) throws(Failure) -> T? {
    if creating, let problem = DirectoryTrust.problem(directory) {
      throw .refused(path: path, detail: problem)
    }
    for _ in 0..<3 {
      let fd: FileDescriptor
      do {
        fd = try FileDescriptor.open(path, O_RDWR | O_APPEND | O_NOFOLLOW | (creating ? O_CREAT : 0), mode: 0o600)
      } catch let error as Errno where error.rawValue == ELOOP {
        throw .refused(path: path, detail: "it is a symbolic link")
      } catch let error as Errno where error == .noSuchFile && !creating {
        return nil
      } catch {
        throw .failed(path: path, error: error as? Errno ?? .invalidArgument)
      }
      defer { fd.close() }
      var info = stat()
      guard fstat(fd.rawValue, &info) == 0 else { throw .failed(path: path, error: .current) }
      if let problem = Self.problem(info) { throw .refused(path: path, detail: problem) }
      do {
        _ = try retryingInterrupts { flock(fd.rawValue, LOCK_EX) }
      } catch {
        throw .failed(path: path, error: error as? Errno ?? .invalidArgument)
      }
      defer { flock(fd.rawValue, LOCK_UN) }
      // Taken off by `consume` while this waited for the lock: the name leads elsewhere, or nowhere.
      var named = stat()
      if lstat(path, &named) == 0, named.st_ino == info.st_ino, named.st_dev == info.st_dev { return try body(fd) }
      if !creating, lstat(path, &named) != 0 { return nil }
    }
    throw .failed(path: path, error: .busy)
  }

  /// Why a file with these attributes is not a private file of this user's, or nil.
  static func problem(_ info: stat) -> String? {
    if info.st_mode & S_IFMT != S_IFREG { return "it is not a regular file" }
    if info.st_uid != geteuid() { return "it belongs to uid \(info.st_uid), not to this user (\(geteuid()))" }
    if info.st_mode & 0o077 != 0 {
      return "others may open it (mode \(String(info.st_mode & 0o7777, radix: 8)), not 600)"
    }
    if info.st_nlink != 1 { return "it has \(info.st_nlink) names" }
    return nil
  }

  private func contents(_ fd: FileDescriptor) throws(Failure) -> [UInt8] {
    var result = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while result.count < Self.readLimit {
      let offset = result.count
      let count: Int
      do {
        count = try chunk.withUnsafeMutableBytes { try fd.read(into: $0, at: offset) }
      } catch {
        throw .failed(path: path, error: error as? Errno ?? .invalidArgument)
      }
      if count == 0 { break }
      result.append(contentsOf: chunk[0..<count])
    }
    return result
  }

  private func sync(_ fd: FileDescriptor) throws(Failure) {
    guard fsync(fd.rawValue) == 0 else { throw .failed(path: path, error: .current) }
  }
}
