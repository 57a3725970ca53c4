/// The exit statuses vpnstat documents (sysexits.h numbering), one meaning each.
public enum ExitStatus: Int32, Sendable, CaseIterable {
  case success = 0
  /// Wrong arguments (also a bad configuration file or capture filter).
  case usage = 64
  /// Bad data: a corrupt or foreign database, a corrupt capture file.
  case dataError = 65
  /// The connect gate cannot tell: the session could not be read within its timeout (a
  /// database locked by another process). Hooks treat it as a refusal.
  case undecided = 66
  /// Something needed is not there: no such interface, no database where one is needed, no
  /// netlink socket, no libpcap.
  case unavailable = 69
  /// An internal error: a bug, please report it.
  case software = 70
  /// An I/O error: writing the output, a capture file or the textfile failed.
  case ioError = 74
  /// Try later: the free plan's pause (`session check`), a database locked by another process,
  /// a recorder or enforcer lock held by another process.
  case tryLater = 75
  /// Not permitted: no write access to the database, no CAP_NET_ADMIN/CAP_NET_RAW.
  case noPermission = 77
}

/// An error that knows how it should end the process: its message and its exit status.
public protocol CommandFailure: Error {
  var exitStatus: ExitStatus { get }
  /// One or more lines for people, without the `vpnstat:` prefix.
  var message: String { get }
}

extension UsageError: CommandFailure {
  public var exitStatus: ExitStatus { .usage }
}

extension CounterSourceError: CommandFailure {
  public var exitStatus: ExitStatus {
    switch self {
    case .unavailable: .unavailable
    case .notPermitted: .noPermission
    }
  }
  public var message: String { description }
}

/// A failure described on the spot.
public struct GeneralFailure: CommandFailure, Sendable, CustomStringConvertible {
  public var exitStatus: ExitStatus
  public var message: String
  public init(_ exitStatus: ExitStatus, _ message: String) {
    self.exitStatus = exitStatus
    self.message = message
  }
  public var description: String { message }
}
