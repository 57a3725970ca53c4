import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The signal number of a pending SIGINT/SIGTERM, 0 when none. An atomic store is all a signal
/// handler may safely do; the outer run acts on it between steps.
private let pendingSignal = Atomic<Int32>(0)

/// SIGINT or SIGTERM arrived: thrown through the outer run so that its cleanup deletes the
/// namespaces it made before the process exits with 128 + signal.
struct Interruption: Error, CustomStringConvertible {
  let signal: Int32
  var description: String {
    signal == SIGINT ? "interrupted (SIGINT)" : "terminated (signal \(signal))"
  }

  /// Notes SIGINT/SIGTERM instead of dying of them. Without SA_RESTART, so a blocking
  /// waitpid or read returns EINTR and the waiting code sees the signal at once.
  static func install() {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { signal in
      pendingSignal.store(signal, ordering: .relaxed)
    }
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    sigaction(SIGINT, &action, nil)
    sigaction(SIGTERM, &action, nil)
  }

  static var pending: Int32? {
    let signal = pendingSignal.load(ordering: .relaxed)
    return signal == 0 ? nil : signal
  }

  /// Throws when a signal is pending; called between the steps of the outer run.
  static func check() throws {
    if let signal = pending { throw Interruption(signal: signal) }
  }
}
