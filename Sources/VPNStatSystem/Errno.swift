import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A C error number, typed, so callers can match on the cases they handle
/// (an interface that vanished is `ENODEV`/`ENOENT`, not a failure).
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
  package let rawValue: Int32
  package init(rawValue: Int32) { self.rawValue = rawValue }

  /// The calling thread's current `errno`.
  package static var current: Errno { Errno(rawValue: errno) }

  package static let interrupted = Errno(rawValue: EINTR)
  package static let noSuchFile = Errno(rawValue: ENOENT)
  package static let noSuchDevice = Errno(rawValue: ENODEV)
  package static let permissionDenied = Errno(rawValue: EACCES)
  package static let notPermitted = Errno(rawValue: EPERM)
  package static let wouldBlock = Errno(rawValue: EAGAIN)
  package static let invalidArgument = Errno(rawValue: EINVAL)
  package static let canceled = Errno(rawValue: ECANCELED)
  package static let protocolNotSupported = Errno(rawValue: EPROTONOSUPPORT)
  package static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
  package static let timedOut = Errno(rawValue: ETIMEDOUT)
  package static let readOnlyFileSystem = Errno(rawValue: EROFS)
  package static let exists = Errno(rawValue: EEXIST)
  package static let busy = Errno(rawValue: EBUSY)
  package static let brokenPipe = Errno(rawValue: EPIPE)
  package static let noBufferSpace = Errno(rawValue: ENOBUFS)
  package static let connectionRefused = Errno(rawValue: ECONNREFUSED)
  package static let operationNotSupported = Errno(rawValue: EOPNOTSUPP)

  /// True for an interrupted call: EINTR, and the kernel's own restart codes (512 ERESTARTSYS,
  /// 513 ERESTARTNOINTR, 514 ERESTARTNOHAND, 516 ERESTART_RESTARTBLOCK), which should never
  /// reach user space but do when a debugger attaches mid-call (`record` once exited
  /// "Unknown error 516" under gdb). Either way the call was cut short, not refused.
  package var meansInterrupted: Bool {
    self == .interrupted || (512...514).contains(rawValue) || rawValue == 516
  }

  /// True for the errors that mean "the thing is gone", which for interfaces is normal.
  package var meansVanished: Bool {
    self == .noSuchFile || self == .noSuchDevice || rawValue == ENXIO || rawValue == ENOTDIR
  }

  /// True for the errors that mean "you may not": EACCES, EPERM, EROFS.
  package var meansNotPermitted: Bool {
    self == .permissionDenied || self == .notPermitted || self == .readOnlyFileSystem
  }

  package var description: String {
    guard let text = strerror(rawValue) else { return "error \(rawValue)" }
    return String(cString: text)
  }
}

/// Runs a C call that returns -1 and sets `errno` on failure, retrying on EINTR:
/// the one place where interrupted system calls are handled.
@inline(__always)
func retryingInterrupts<T: FixedWidthInteger>(_ call: () -> T) throws -> T {
  try Errno.retrying(call)
}

extension Errno {
  /// `retryingInterrupts` for wrappers that declare they throw `Errno` alone.
  @inline(__always)
  static func retrying<T: FixedWidthInteger>(_ call: () -> T) throws(Errno) -> T {
    while true {
      let result = call()
      if result != -1 { return result }
      let error = Errno.current
      if !error.meansInterrupted { throw error }
    }
  }

  /// `retrying` for C calls that return a pointer: NULL with `errno` set on failure (`realpath`,
  /// `fdopendir`), or NULL with `errno` untouched for "no more" (`readdir`), which is nil here.
  @inline(__always)
  static func retryingPointer<P>(_ call: () -> P?) throws(Errno) -> P? {
    while true {
      // readdir tells its end from its failure by errno alone.
      errno = 0
      if let result = call() { return result }
      let error = Errno.current
      if error.rawValue == 0 { return nil }
      if !error.meansInterrupted { throw error }
    }
  }
}
