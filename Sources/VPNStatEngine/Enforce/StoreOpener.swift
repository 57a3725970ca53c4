import Synchronization
import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// The database of a process that must never wait for it: the enforcer. SQLite can hold a caller
/// far past its busy timeout — a connection that must rebuild the WAL index while another user's
/// reader holds a lock on the `-shm` (any user who may read the database can) retries for about
/// ten seconds and then fails with SQLITE_PROTOCOL, at every attempt, for as long as the lock is
/// held. So the database is opened on a thread of its own, again and again until it opens, and
/// the enforcer takes it from there when it is ready; meanwhile it enforces from memory.
package final class StoreOpener: Sendable {
  /// What the opener has to hand over.
  package enum Outcome {
    /// Open (taken by this call: later calls get `.taken`).
    case opened(Store)
    /// The last attempt failed; another follows after `retryInterval` unless the error is a
    /// lasting one (`StoreError.isLasting`), which ends the attempts.
    case failed(any Error)
    /// The first attempt has not finished.
    case pending
    /// The store was handed over already.
    case taken
  }

  /// A Store crossing from the opener's thread to the caller's, once: nothing else touches it.
  private final class Handover: @unchecked Sendable {
    let store: Store
    init(_ store: Store) { self.store = store }
  }
  private final class Failure: @unchecked Sendable {
    let error: any Error
    init(_ error: any Error) { self.error = error }
  }
  private struct State {
    var opened: Handover?
    var failure: Failure?
    var taken = false
  }

  private let state = Mutex(State())
  /// Readable once an attempt finished (opened or failed).
  private let finished: WakeUp

  /// Starts opening with `open` on a thread of its own, every `retryInterval` after a failure.
  package init(retryInterval: Duration = .seconds(1), open: @escaping @Sendable () throws -> Store?) throws {
    finished = try WakeUp()
    // The thread holds the opener until it is done: it hands over into it.
    try BackgroundThread.start { [self] in
      while true {
        do {
          if let store = try open() {
            state.withLock { $0.opened = Handover(store) }
            finished.signal()
            return
          }
          throw StoreError.unavailable(path: "", detail: "no database")
        } catch {
          state.withLock { $0.failure = Failure(error) }
          finished.signal()
          if let error = error as? StoreError, error.isLasting { return }
          SystemClock.sleep(for: retryInterval)
        }
      }
    }
  }

  /// Waits at most `limit` for the first attempt to finish, then says how it went.
  package func outcome(waitingAtMost limit: Duration) -> Outcome {
    let deadline = SystemClock.monotonic + limit.nanoseconds
    while true {
      let current = outcome()
      guard case .pending = current else { return current }
      let left = deadline - SystemClock.monotonic
      guard left > 0, (try? waitForReadable([finished.descriptor], timeout: .nanoseconds(left))) != nil else {
        return outcome()
      }
      _ = finished.consume()
    }
  }

  /// How it went so far, without waiting.
  package func outcome() -> Outcome {
    let (store, failure, taken): (Handover?, Failure?, Bool) = state.withLock { state in
      let store = state.opened
      if store != nil {
        state.opened = nil
        state.taken = true
      }
      return (store, state.failure, state.taken)
    }
    if let store { return .opened(store.store) }
    if taken { return .taken }
    if let failure { return .failed(failure.error) }
    return .pending
  }
}
