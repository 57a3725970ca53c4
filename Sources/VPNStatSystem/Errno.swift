import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A C error number, typed, so callers can match on the cases they handle
/// (an interface that vanished is `ENODEV`/`ENOENT`, not a failure).
public struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }

  /// The calling thread's current `errno`.
  public static var current: Errno { Errno(rawValue: errno) }

  public static let interrupted = Errno(rawValue: EINTR)
  public static let noSuchFile = Errno(rawValue: ENOENT)
  public static let noSuchDevice = Errno(rawValue: ENODEV)
  public static let permissionDenied = Errno(rawValue: EACCES)
  public static let notPermitted = Errno(rawValue: EPERM)
  public static let wouldBlock = Errno(rawValue: EAGAIN)
  public static let invalidArgument = Errno(rawValue: EINVAL)
  public static let canceled = Errno(rawValue: ECANCELED)
  public static let protocolNotSupported = Errno(rawValue: EPROTONOSUPPORT)
  public static let addressFamilyNotSupported = Errno(rawValue: EAFNOSUPPORT)
  public static let timedOut = Errno(rawValue: ETIMEDOUT)
  public static let readOnlyFileSystem = Errno(rawValue: EROFS)
  public static let exists = Errno(rawValue: EEXIST)
  public static let busy = Errno(rawValue: EBUSY)
  public static let brokenPipe = Errno(rawValue: EPIPE)
  public static let noBufferSpace = Errno(rawValue: ENOBUFS)
  public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
  package static let operationNotSupported = Errno(rawValue: EOPNOTSUPP)

  /// True for the errors that mean "the thing is gone", which for interfaces is normal.
  public var meansVanished: Bool {
    self == .noSuchFile || self == .noSuchDevice || rawValue == ENXIO || rawValue == ENOTDIR
  }

  /// True for the errors that mean "you may not": EACCES, EPERM, EROFS.
  public var meansNotPermitted: Bool {
    self == .permissionDenied || self == .notPermitted || self == .readOnlyFileSystem
  }

  public var description: String {
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
      if error != .interrupted { throw error }
    }
  }
}
