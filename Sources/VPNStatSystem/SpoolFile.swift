import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A file of lines that only this user writes and others may read, appended to one line at a
/// time and taken from in order: where an enforcer keeps what the database would not take, for
/// itself, the next enforcer and every reader (`session`, the gate, `notify`) to see.
///
/// Others read it without any lock, so nothing they do can hold a writer: the writers' lock is a
/// private file beside it (`PATH.lock`, 0600, `ProcessLock`'s rules), which no one else can open.
/// An append is one write of a whole line; taking lines out writes the rest to a new file that
/// replaces the old one, so a reader sees the file before or after, never half of it (and drops
/// a last line not yet ended). Only a file that is certainly the writer's is believed or written:
/// created with `O_NOFOLLOW` in a directory nobody else may write (`DirectoryTrust`), and found
/// again as a regular file of this user's (a reader: of the database's owner's) with one name
/// that no one else may write. Anything else is refused with what was found, never read, never
/// replaced. Every change is synced before the lock is let go.
package struct SpoolFile: Sendable {
  package let path: String
  let directory: String
  /// The permission bits of a new spool: who may read it (never write).
  let mode: mode_t

  /// Why the spool could not be used.
  package enum Failure: Error, CustomStringConvertible {
    /// The file or its directory is not what this user's spool must be.
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

  /// The spool at `path`; a new one gets `mode` less any write bits for others.
  package init(path: String, mode: UInt32 = 0o644) {
    self.path = path
    self.mode = mode_t(mode & 0o644)
    let slash = path.lastIndex(of: "/")
    directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
  }

  /// Appends `line` and a line break, creating the file when there is none. A line cut short by
  /// a crash before it is ended, not joined to this one.
  package func append(_ line: String) throws(Failure) {
    try withLock { () throws(Failure) in
      let fd: FileDescriptor
      do {
        fd = try FileDescriptor.open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, mode: mode)
      } catch {
        throw Self.failure(error, path)
      }
      defer { fd.close() }
      let existing = try checked(fd, owner: geteuid())
      // Readable as asked, whatever the umask: readers show what it holds.
      do throws(Errno) {
        _ = try Errno.retrying { fchmod(fd.rawValue, mode) }
      } catch {
        throw .failed(path: path, error: error)
      }
      var bytes = Array(line.utf8) + [0x0A]
      if existing.st_size > 0, try lastByte(of: path) != 0x0A { bytes.insert(0x0A, at: 0) }
      do {
        try fd.writeAll(bytes)
      } catch {
        throw .failed(path: path, error: error as? Errno ?? .invalidArgument)
      }
      try sync(fd)
    }
  }

  /// The whole file, as its writer reads it under the lock (empty when there is none).
  package func read() throws(Failure) -> [UInt8] {
    try withLock { () throws(Failure) in try contents(owner: geteuid()) }
  }

  /// The whole lines of the file, read without a lock by anyone: the file must belong to
  /// `owner` (the database's owner) and be writable by no one else. Empty when there is none.
  package func readLines(owner: UInt32) throws(Failure) -> [UInt8] {
    var bytes = try contents(owner: owner)
    while let last = bytes.last, last != 0x0A { bytes.removeLast() }
    return bytes
  }

  /// Takes `prefix` (what was read and has since been written elsewhere) off the start of the
  /// file, keeping whatever was appended after it; does nothing when the file no longer starts
  /// with it. The file is removed once empty.
  package func consume(_ prefix: [UInt8]) throws(Failure) {
    guard !prefix.isEmpty else { return }
    try withLock { () throws(Failure) in
      let bytes = try contents(owner: geteuid())
      guard bytes.starts(with: prefix) else { return }
      let rest = Array(bytes[prefix.count...])
      if rest.isEmpty {
        do throws(Errno) {
          _ = try Errno.retrying { unlink(path) }
        } catch {
          if error != .noSuchFile { throw .failed(path: path, error: error) }
        }
        return
      }
      let name = String(path[path.index(after: path.lastIndex(of: "/") ?? path.index(before: path.startIndex))...])
      do {
        try AtomicFile.write(rest, named: name, in: directory, mode: mode, synced: true)
      } catch let failure as AtomicFile.Failure {
        throw .failed(path: path, error: failure.error)
      } catch {
        throw .failed(path: path, error: .invalidArgument)
      }
    }
  }

  /// Runs `body` holding the writers' lock (`PATH.lock`), after checking the directory.
  private func withLock<T>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
    if let problem = DirectoryTrust.problem(directory) { throw .refused(path: path, detail: problem) }
    let lock: FileDescriptor
    do {
      lock = try ProcessLock.openOwned(path + ".lock")
    } catch {
      throw .refused(path: path, detail: "its lock: \(error)")
    }
    defer { lock.close() }
    do {
      _ = try retryingInterrupts { flock(lock.rawValue, LOCK_EX) }
    } catch {
      throw .failed(path: path, error: error as? Errno ?? .invalidArgument)
    }
    // Closing the lock's descriptor lets go of it too, whatever this says.
    defer { _ = try? Errno.retrying { flock(lock.rawValue, LOCK_UN) } }
    return try body()
  }

  /// The file's bytes (empty when there is none), once it is found to be `owner`'s.
  private func contents(owner: UInt32) throws(Failure) -> [UInt8] {
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
    } catch let error as Errno where error == .noSuchFile {
      return []
    } catch {
      throw Self.failure(error, path)
    }
    defer { fd.close() }
    _ = try checked(fd, owner: owner)
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

  /// The open file's status, once it is found to be a spool of `owner`'s; else refused.
  private func checked(_ fd: FileDescriptor, owner: UInt32) throws(Failure) -> stat {
    var info = stat()
    do throws(Errno) {
      _ = try Errno.retrying { fstat(fd.rawValue, &info) }
    } catch {
      throw .failed(path: path, error: error)
    }
    if let problem = Self.problem(info, owner: owner) { throw .refused(path: path, detail: problem) }
    return info
  }

  private func lastByte(of path: String) throws(Failure) -> UInt8? {
    let bytes = try contents(owner: geteuid())
    return bytes.last
  }

  /// Why a file with these attributes is not a spool of `owner`'s, or nil.
  static func problem(_ info: stat, owner: UInt32) -> String? {
    if info.st_mode & S_IFMT != S_IFREG { return "it is not a regular file" }
    if info.st_uid != owner { return "it belongs to uid \(info.st_uid), not to uid \(owner)" }
    if info.st_mode & 0o022 != 0 {
      return "others may write it (mode \(String(info.st_mode & 0o7777, radix: 8)))"
    }
    if info.st_nlink != 1 { return "it has \(info.st_nlink) names" }
    return nil
  }

  private static func failure(_ error: any Error, _ path: String) -> Failure {
    if let error = error as? Errno, error.rawValue == ELOOP {
      return .refused(path: path, detail: "it is a symbolic link")
    }
    return .failed(path: path, error: error as? Errno ?? .invalidArgument)
  }

  private func sync(_ fd: FileDescriptor) throws(Failure) {
    do throws(Errno) {
      _ = try Errno.retrying { fsync(fd.rawValue) }
    } catch {
      throw .failed(path: path, error: error)
    }
  }
}
