#if canImport(Glibc)
  import Glibc
#endif

/// An exclusive lock that one process holds for as long as it lives (flock on a file, released
/// by the kernel even after kill -9), with the holder's pid and role written in the file so a
/// second process can say who holds it.
public final class ProcessLock {
  public let path: String
  private let descriptor: FileDescriptor

  /// Takes the lock at `path` for `role` (e.g. "vpnstat record"), or throws
  /// `StoreError.lockHeld` naming the holder.
  public init(path: String, role: String) throws {
    self.path = path
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.open(path, O_RDWR | O_CREAT, mode: 0o644)
    } catch let error as Errno {
      throw error.meansNotPermitted
        ? StoreError.notPermitted(path: path, detail: error.description)
        : StoreError.unavailable(path: path, detail: error.description)
    }
    if flock(fd.rawValue, LOCK_EX | LOCK_NB) != 0 {
      let holder = SmallFile.trimmedText(SystemPath(path)).flatMap { $0.isEmpty ? nil : $0 } ?? "another process"
      fd.close()
      throw StoreError.lockHeld(path: path, holder: TerminalText.sanitize(holder))
    }
    ftruncate(fd.rawValue, 0)
    try? fd.writeAll("\(role) (pid \(getpid()))\n")
    descriptor = fd
  }

  deinit {
    ftruncate(descriptor.rawValue, 0)
    descriptor.close()
  }
}
