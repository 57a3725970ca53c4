import VPNStatCapture
import VPNStatDesktop
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// The exit statuses vpnstat documents (sysexits.h numbering), one meaning each.
package enum ExitStatus: Int32, Sendable, CaseIterable {
  case success = 0
  /// `alert`: the period's traffic has reached the limit (vnStat's `--alert`).
  case limitReached = 1
  /// Wrong arguments (also a bad configuration file or capture filter).
  case usage = 64
  /// Bad data: a corrupt or foreign database, a corrupt capture file.
  case dataError = 65
  /// The connect gate cannot tell: the session could not be read within its timeout (a
  /// database locked by another process). Hooks treat it as a refusal.
  case undecided = 66
  /// Something needed is not there: no such interface, no database where one is needed, no
  /// netlink socket, no libpcap, no session bus or notification server.
  case unavailable = 69
  /// An internal error: a bug, please report it.
  case software = 70
  /// An I/O error: writing the output, a capture file or the textfile failed.
  case ioError = 74
  /// Try later: the free plan's pause (`session check`), a database locked by another process,
  /// a recorder or enforcer lock held by another process.
  case tryLater = 75
  /// Not permitted: no write access to the database, no CAP_NET_ADMIN/CAP_NET_RAW (an enforcer
  /// checks at its start), NetworkManager's refusal to let this user control connections, or a
  /// file vpnstat would obey (a wg-quick configuration or its directory, the configuration file,
  /// the gate's database) that others could write.
  case noPermission = 77
}

/// A failure the command line itself describes (no database where one is needed, a missing
/// directory): its message and its exit status.
package struct GeneralFailure: Error, Sendable, CustomStringConvertible {
  package var exitStatus: ExitStatus
  package var message: String
  package init(_ exitStatus: ExitStatus, _ message: String) {
    self.exitStatus = exitStatus
    self.message = message
  }
  package var description: String { message }
}

extension ExitStatus {
  /// How a `connect` or `disconnect` ends, by its outcome: the other place, beside errors, that
  /// statuses are given.
  package static func of(_ outcome: TunnelControlReport.Outcome) -> ExitStatus {
    switch outcome {
    case .connected, .disconnected, .notConnected: .success
    case .timedOut, .refused, .gaveUp, .stillUp: .unavailable
    case .notPermitted: .noPermission
    case .notAllowed: .tryLater
    case .undecided: .undecided
    }
  }

  /// How an error ends the process, and what it says: the one place the library's domain
  /// errors become exit statuses. Nil message: nothing to say (a closed output pipe).
  package static func of(_ error: any Error) -> (status: ExitStatus, message: String?) {
    switch error {
    case let error as UsageError: return (.usage, error.message)
    case let failure as GeneralFailure: return (failure.exitStatus, failure.message)
    case let error as StoreError:
      let status: ExitStatus
      switch error {
      case .notADatabase, .foreign, .corrupt, .damagedValue, .newerSchema, .olderSchema: status = .dataError
      case .notPermitted, .untrustedDirectory: status = .noPermission
      case .busy: status = .tryLater
      case .full: status = .ioError
      case .unavailable: status = .unavailable
      }
      return (status, error.description)
    case let error as ProcessLock.Failure:
      switch error {
      case .held: return (.tryLater, error.description)
      case .unusable(_, _, let notPermitted): return (notPermitted ? .noPermission : .unavailable, error.description)
      }
    case let error as CounterSourceError:
      switch error {
      case .unavailable: return (.unavailable, error.description)
      case .notPermitted: return (.noPermission, error.description)
      }
    case let error as CaptureError:
      let status: ExitStatus
      switch error.kind {
      case .notPermitted: status = .noPermission
      case .unavailable: status = .unavailable
      case .badFilter: status = .usage
      case .badFile: status = .dataError
      case .cannotWrite: status = .ioError
      case .internalFailure: status = .software
      }
      return (status, error.message)
    case let error as ListeningSocket.Failure:
      // The port is taken or the address not this machine's: 69; a port below 1024: 77.
      return (error.error.meansNotPermitted ? .noPermission : .unavailable, error.description)
    case let error as EnforcerRequirements.Missing: return (.noPermission, error.description)
    case let error as TunnelNameError:
      switch error {
      case .ambiguous: return (.usage, error.description)
      case .notFound: return (.unavailable, error.description)
      case .untrusted: return (.noPermission, error.description)
      }
    case let error as UntrustedFile: return (.noPermission, error.description)
    case let error as NotificationFailure: return (.unavailable, error.description)
    case let error as AtomicFile.Failure:
      return (error.error.meansNotPermitted ? .noPermission : .ioError, error.description)
    case let error as Errno where error.rawValue == Errno.brokenPipe.rawValue:
      // A reader that went away (`| head`) is how a pipe ends, not an error.
      return (.success, nil)
    case let error as Errno:
      return (error.meansNotPermitted ? .noPermission : .ioError, "I/O error: \(error)")
    default:
      return (.software, "internal error: \(error) (please report it)")
    }
  }
}
