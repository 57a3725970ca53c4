import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// The lock that one user's writers of a database take around each of their transactions, in
/// place of SQLite's: an exclusive `flock` on a private file beside it (mode 0600, this user's,
/// in a directory no one else may write — `ProcessLock`'s rules), which no other user can open,
/// so none can hold it. SQLite's own locks are byte ranges of files every reader may open, and
/// any reader can hold them against a writer; root's writers therefore leave them off and wait
/// on this one only.
package final class WriterLock {
  package let path: String
  private let descriptor: FileDescriptor
  /// How many nested `holding` calls are running: only the outermost takes and lets go.
  private var depth = 0

  /// Why the lock was not taken in time: another writer of this user holds it (its text, when
  /// it says who).
  package struct Busy: Error, CustomStringConvertible {
    package var path: String
    package var description: String { "another writer holds \(path)" }
  }

  /// Opens (creating) the private lock file at `path`; throws `ProcessLock.Failure.unusable`
  /// when it cannot be made or trusted.
  package init(path: String) throws {
    self.path = path
    descriptor = try ProcessLock.openOwned(path)
  }

  deinit { descriptor.close() }

  /// Whether `holding` is running now.
  package var isHeld: Bool { depth > 0 }

  /// Runs `body` holding the lock, waiting for another writer until `deadline` (CLOCK_MONOTONIC
  /// nanoseconds) at most, a few milliseconds at a time as SQLite's own busy handler does;
  /// throws `Busy` when it is still held then. Nested calls run under the outer one's hold.
  package func holding<T>(until deadline: Int64, _ body: () throws -> T) throws -> T {
    if depth > 0 {
      depth += 1
      defer { depth -= 1 }
      return try body()
    }
    while true {
      do throws(Errno) {
        _ = try Errno.retrying { flock(descriptor.rawValue, LOCK_EX | LOCK_NB) }
        break
      } catch {
        guard error == .wouldBlock else { throw error }
      }
      if SystemClock.monotonic >= deadline { throw Busy(path: path) }
      SystemClock.sleep(for: .milliseconds(1))
    }
    depth = 1
    defer {
      depth = 0
      // Unlocking fails only for a descriptor that is not open, and that holds no lock.
      _ = try? Errno.retrying { flock(descriptor.rawValue, LOCK_UN) }
    }
    return try body()
  }
}
