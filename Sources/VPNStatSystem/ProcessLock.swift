import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// An exclusive lock that one process holds for as long as it lives (flock on a file, released
/// by the kernel even after kill -9), with the holder's pid and role written in the file so a
/// second process can say who holds it.
///
/// Other users must not be able to take it: flock needs only an open descriptor, so the file is
/// ours alone (mode 0600, our uid, never a symlink) in a directory only we can write
/// (`DirectoryTrust`); one found otherwise is replaced, never used.
package final class ProcessLock {
  package let path: String
  private let descriptor: FileDescriptor
  /// A shared lock: any number of holders at once, none while an exclusive one is held.
  package let isShared: Bool

  /// Why the lock was not taken.
  package enum Failure: Error, CustomStringConvertible {
    /// Another process holds it: who, as the lock file says (raw text, not yet made safe).
    case held(path: String, holder: String)
    /// The lock file cannot be made or trusted; `notPermitted` when that is a matter of rights.
    case unusable(path: String, detail: String, notPermitted: Bool)

    package var description: String {
      switch self {
      case .held(let path, let holder): "\(holder) already holds \(path)"
      case .unusable(let path, let detail, _): "cannot use the lock \(path): \(detail)"
      }
    }
  }

  /// Takes the lock at `path` for `role` (e.g. "vpnstat record"), or throws `Failure.held`
  /// naming the holder. A `shared` lock is taken beside other shared ones and refused only
  /// while an exclusive one is held; its holders leave the file's text (the exclusive holder's
  /// name) alone.
  package init(path: String, role: String, shared: Bool = false) throws {
    self.path = path
    self.isShared = shared
    let fd = try Self.openOwned(path)
    guard (try? Errno.retrying({ flock(fd.rawValue, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) })) != nil else {
      let holder = Self.holder(fd) ?? "another process"
      fd.close()
      throw Failure.held(path: path, holder: holder)
    }
    // The text only names the holder in another process's message; the lock is the flock. A
    // file that could not be emptied gets no name rather than one run into the last holder's.
    if !shared, (try? Errno.retrying({ ftruncate(fd.rawValue, 0) })) != nil {
      try? fd.writeAll("\(role) (pid \(getpid()))\n")
    }
    descriptor = fd
  }

  deinit {
    // Nothing can be done about a failure here; the next holder empties the file anyway.
    if !isShared { _ = try? Errno.retrying { ftruncate(descriptor.rawValue, 0) } }
    descriptor.close()
  }

  /// Opens the lock file, making sure it is a regular file of ours that nobody else can open.
  static func openOwned(_ path: String) throws -> FileDescriptor {
    func fail(_ error: Errno) -> Failure {
      .unusable(path: path, detail: error.description, notPermitted: error.meansNotPermitted)
    }
    for attempt in 0..<2 {
      let fd: FileDescriptor
      do {
        fd = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_NOFOLLOW, mode: 0o600)
      } catch let error as Errno where error.rawValue == ELOOP {
        throw Failure.unusable(path: path, detail: "it is a symbolic link", notPermitted: true)
      } catch let error as Errno {
        throw fail(error)
      }
      var info = stat()
      do throws(Errno) {
        _ = try Errno.retrying { fstat(fd.rawValue, &info) }
      } catch {
        fd.close()
        throw fail(error)
      }
      let isFile = info.st_mode & S_IFMT == S_IFREG
      if isFile && info.st_uid == geteuid() && info.st_mode & 0o077 == 0 { return fd }
      fd.close()
      // Made by an older vpnstat (0644) or by someone else: whoever has it open could hold it.
      // Replace it once; a second surprise means someone is racing us.
      guard attempt == 0, isFile, (try? Errno.retrying({ unlink(path) })) != nil else {
        let owner = info.st_uid == geteuid() ? "" : ", owned by uid \(info.st_uid)"
        throw Failure.unusable(
          path: path,
          detail: "not a private file of this user (mode \(String(info.st_mode & 0o7777, radix: 8))\(owner))",
          notPermitted: true)
      }
    }
    throw Failure.unusable(path: path, detail: "replaced while being opened", notPermitted: false)
  }

  private static func holder(_ fd: FileDescriptor) -> String? {
    var buffer = [UInt8](repeating: 0, count: 256)
    let count = (try? buffer.withUnsafeMutableBytes { try fd.read(into: $0, at: 0) }) ?? 0
    let text = String(decoding: Array(buffer[0..<count]).trimmingASCIIWhitespace(), as: UTF8.self)
    return text.isEmpty ? nil : text
  }
}
