import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// Who may write the ledger of one database: one process at a time. A recorder claims it for
/// as long as it runs; enforcers share it only while they save their tunnel, so none of them
/// keeps a recorder out, and a recorder keeps them to reading (it books their tunnels too).
package protocol LedgerWriterLock {
  /// A recorder's claim, kept until the lock goes away: true when this process holds it (now or
  /// already), false while another holds it (an enforcer saving: moments). Throws when the lock
  /// cannot be used at all.
  mutating func claim() throws -> Bool
  /// Runs `save` while holding the lock shared with other enforcers; nil, without running it,
  /// while a recorder holds it. `holder` then names the recorder.
  func sharing<T>(_ save: () throws -> T) throws -> (result: T?, holder: String?)
}

/// The ledger lock beside the database (`DB.ledger.lock`, private to its owner like the other
/// locks): exclusive for a recorder, shared for an enforcer's save.
package struct LedgerLockFile: LedgerWriterLock {
  let path: String
  let role: String
  private var held: ProcessLock?

  package init(_ location: StoreLocation, role: String) {
    path = location.lockPath("ledger")
    self.role = role
  }

  package mutating func claim() throws -> Bool {
    if held != nil { return true }
    do {
      held = try ProcessLock(path: path, role: role)
      return true
    } catch ProcessLock.Failure.held {
      return false
    }
  }

  package func sharing<T>(_ save: () throws -> T) throws -> (result: T?, holder: String?) {
    let lock: ProcessLock
    do {
      lock = try ProcessLock(path: path, role: role, shared: true)
    } catch ProcessLock.Failure.held(_, let holder) {
      return (nil, holder)
    } catch {
      // A lock that cannot be used (another user's file) must not stop an enforcer from
      // keeping its tunnel's ledger: writers reconcile with what is stored (`absorb`), so two
      // at once still never count a byte twice.
      return (try save(), nil)
    }
    return try withExtendedLifetime(lock) { (try save(), nil) }
  }
}

/// A lock no one else takes: a process alone with its database (tests, a database of one's own).
package struct UncontendedLedgerLock: LedgerWriterLock {
  package init() {}
  package mutating func claim() throws -> Bool { true }
  package func sharing<T>(_ save: () throws -> T) throws -> (result: T?, holder: String?) { (try save(), nil) }
}

/// The ledger as a process that writes it keeps it (the recorder, an enforcer for its tunnel):
/// in memory, advanced with every sample and link notification, and saved as a checkpoint
/// (`CheckpointedLedger`) every `saveInterval` and at once when asked (a deleted instance, a
/// window change, a stop). Each save reads the stored ledger under the write lock and the
/// kernel after it (`Store.saveLedger`).
///
/// Only the holder of the `LedgerWriterLock` writes. Without it the process reads, as every
/// reader does (`LedgerView`: the stored ledger advanced in memory by its own samples, exact
/// between checkpoints), and tries again at its next save: it takes over when the writer is gone.
package struct LedgerKeeper {
  /// How the process holds the lock.
  package enum Role: Sendable {
    /// Claims it for good at its first save (`record`).
    case recorder
    /// Shares it while saving, and only while no recorder holds it (`enforce`).
    case enforcer
  }

  package let store: Store
  package let saveInterval: Duration
  package let role: Role
  var lock: any LedgerWriterLock
  /// The ledger in memory while this process writes it; nil while it reads.
  package private(set) var memory: CheckpointedLedger?
  private var view: LedgerView
  /// SQLite's count of other connections' commits when memory last took in the stored ledger.
  private var absorbedVersion: Int64?
  /// CLOCK_BOOTTIME of the last save (or attempt to become the writer), nanoseconds.
  private var lastSave: Int64?
  /// Who writes the ledger while this process reads it, as last seen.
  package private(set) var writer: String?
  /// Whether one-shot readers can have the last save without SQLite (`PublishedState`). While
  /// they can, a recorder's saves leave the database's snapshot stale: it is the same ledger a
  /// second time, a third of the pages a save wrote at a thousand interfaces. The save that
  /// cannot be published, and the last (a stopped recorder's database is read after a reboot,
  /// when nothing is published), store it.
  private var publishedLastSave = false
  /// The recorder's steady state (`TrafficSampler.SteadyBook`): what the reader's links are to
  /// memory's ledger, made after a save or a change and read at every sample until the next.
  private var steadyBook: TrafficSampler.SteadyBook?
  /// Whether the last step's caller went without its sample: a save then makes the next book,
  /// among the work whose pages it lets go of (made at the next sample, its code stayed resident).
  private var steadyWanted = false
  /// How many samples were read through it (tests check the steady state is the one taken).
  package private(set) var steadySamples = 0

  package init(store: Store, saveInterval: Duration, role: Role, lock: any LedgerWriterLock) {
    self.store = store
    self.saveInterval = saveInterval
    self.role = role
    self.lock = lock
    self.view = LedgerView(store: store)
  }

  /// The ledger as this process sees it now.
  package var ledger: Ledger { memory?.ledger ?? view.ledger }

  /// Whether this process writes the ledger now.
  package var isWriting: Bool { memory != nil }

  /// Whether a save is due at `reading`: the interval passed since the last, or one was asked for.
  package func isDue(at reading: ClockReading) -> Bool {
    if memory?.saveRequested == true { return true }
    // A recorder kept out by an enforcer's save (moments) claims the lock at its next sample.
    if memory == nil && role == .recorder { return true }
    guard let lastSave else { return true }
    return reading.boottime - lastSave >= saveInterval.nanoseconds || reading.boottime < lastSave
  }

  /// Asks for a save at once (the next `step` makes it).
  package mutating func requestSave() {
    if memory == nil {
      lastSave = nil
    } else {
      memory?.requestSave()
    }
  }

  /// What one step did.
  package struct Step {
    /// The sample taken, if the step took one.
    package var sample: CounterSample?
    /// What the ledger bridged (resets, wraps, discarded samples): one log line each.
    package var events: [LedgerEvent] = []
    /// Set when this step wrote a checkpoint.
    package var saved = false
    /// Why a due save could not be made (a busy or full database): everything stays in memory
    /// and the next step tries again.
    package var problem: StoreError?
  }

  /// Takes link notifications in: the final counters of a deleted instance ask for a save.
  package mutating func book(_ observations: [LedgerObservation], deleted: Bool) -> [LedgerEvent] {
    guard !observations.isEmpty else { return [] }
    steadyBook = nil
    // Changed through the optional, where it lies: a copy would make the ledger's tables copy.
    if memory != nil {
      let calendar = store.calendar
      let events = memory?.advance(observations, calendar: calendar) ?? []
      if deleted { memory?.requestSave() }
      return events
    }
    view.book(observations)
    // A reader keeps the deleted instance's counters for the save that may make it the writer
    // (the writer, if there is one, booked them itself).
    if deleted {
      unbooked += observations
      lastSave = nil
    }
    return []
  }
  /// Notifications a reader saw that the save making it the writer applies.
  private var unbooked: [LedgerObservation] = []

  /// One step: a sample, saved when due (the sample then read inside the save's transaction),
  /// else advancing the ledger in memory. A database that is busy or full leaves everything in
  /// memory and throws its `StoreError`; the next step tries again.
  /// `version`: the store's `dataVersion()` as the caller just read it, when it did (a recorder
  /// reads it once a sample, for the session too: the stamp is some ten system calls).
  /// `keepingSample`: false when the caller does not read the step's sample (a recorder with no
  /// textfile and no listener); a writer's sample between saves then goes straight from the
  /// kernel's counters into the ledger (`TrafficSampler.advanceSteadily`) and the step has none.
  package mutating func step(
    _ sampler: inout TrafficSampler, version: Int64? = nil, keepingSample: Bool = true
  ) throws -> Step {
    steadyWanted = !keepingSample
    // No optional problem made for the step that has none (every second's): its destroy went
    // through the standard library's shared code (`Optional`'s value witnesses).
    if isDue(at: sampler.clock.now()) {
      do {
        if let step = try save(&sampler) { return step }
      } catch let error as StoreError where error.isTransient {
        var step = try advance(&sampler, version: version, keepingSample: keepingSample)
        step.problem = error
        return step
      }
    }
    var step = try advance(&sampler, version: version, keepingSample: keepingSample)
    // A name seen for the first time: saved now, not a save interval later.
    if memory?.saveRequested == true {
      do {
        if var saved = try save(&sampler) {
          saved.events = step.events + saved.events
          return saved
        }
      } catch let error as StoreError where error.isTransient {
        step.problem = error
      }
    }
    return step
  }

  /// Saves now, whether due or not, with a fresh sample (a stop, a test). `last`: the process
  /// stops after it, so a recorder stores the ledger's snapshot for the readers that come after.
  @discardableResult
  package mutating func saveNow(_ sampler: inout TrafficSampler, last: Bool = false) throws -> Step? {
    if last { publishedLastSave = false }
    return try save(&sampler)
  }

  /// A sample outside any transaction, advancing memory (or the reader's view); `version` and
  /// `keepingSample` as `step` was given them.
  private mutating func advance(
    _ sampler: inout TrafficSampler, version known: Int64?, keepingSample: Bool
  ) throws -> Step {
    guard memory != nil else {
      let (sample, _) = try view.sample(&sampler)
      return Step(sample: sample)
    }
    // Another process committed: what it stored of names this one does not write shows (a
    // database that cannot be read now is read at a later step).
    if let version = known ?? (try? store.dataVersion()), version != absorbedVersion,
      let stored = try? store.loadLedger()
    {
      memory?.absorb(stored)
      absorbedVersion = version
      steadyBook = nil
    }
    let calendar = store.calendar
    if !keepingSample {
      if steadyBook == nil, let ledger = memory?.ledger { steadyBook = sampler.steadyBook(for: ledger) }
      if let book = steadyBook {
        // Read in place, through the optional: a copy held here would make every sample copy
        // the whole table.
        if let steady = try? sampler.advanceSteadily(&memory!, book: book, calendar: calendar) {
          steadySamples += 1
          return Step(events: steady.events)
        }
        // A link changed or could not be read through the book: a whole sample, and a new book.
        steadyBook = nil
      }
    }
    let sample = try sampler.sample()
    var events: [LedgerEvent] = []
    sampler.forEachObservationChunk(of: sample) { events += memory?.advance($0, calendar: calendar) ?? [] }
    return Step(sample: sample, events: events)
  }

  /// The checkpoint, if this process may write: nil when another holds the lock (the caller
  /// then samples as a reader).
  private mutating func save(_ sampler: inout TrafficSampler) throws -> Step? {
    let attempt = sampler.clock.now()
    switch role {
    case .recorder:
      guard try lock.claim() else {
        lastSave = attempt.boottime
        memory = nil
        steadyBook = nil
        writer = "another process saving"
        return nil
      }
      return try checkpoint(&sampler, at: attempt)
    case .enforcer:
      var step: Step?
      let (done, holder): (Void?, String?) = try lock.sharing { step = try checkpoint(&sampler, at: attempt) }
      guard done != nil else {
        // A recorder writes the ledger (and books this tunnel): read until it is gone.
        if memory != nil { view = LedgerView(store: store) }
        memory = nil
        steadyBook = nil
        unbooked = []
        writer = holder
        lastSave = attempt.boottime
        return nil
      }
      return step
    }
  }

  /// One save's transaction: the stored ledger taken in, the kernel read after it, what changed
  /// written; memory moves on only once it is committed.
  private mutating func checkpoint(_ sampler: inout TrafficSampler, at attempt: ClockReading) throws -> Step {
    let pending = unbooked
    let starting = memory
    let calendar = store.calendar
    let store = self.store
    var sample: CounterSample?
    // An enforcer keeps its tunnel's rows only, and saves only while no recorder runs: it leaves
    // the snapshot stale (readers read the rows) rather than encode and write every interface's
    // entry for its one. Its loop answers the deadline: nothing there grows with the host's links.
    let (updated, events, checkpoint) = try store.saveLedger(
      now: attempt.wall, storingSnapshot: role == .recorder && !publishedLastSave
    ) {
      stored -> ((CheckpointedLedger, [LedgerEvent], LedgerCheckpoint), LedgerCheckpoint) in
      var memory = starting ?? CheckpointedLedger(stored: stored)
      memory.absorb(stored)
      if !pending.isEmpty { memory.advance(pending, calendar: calendar) }
      let taken = try sampler.sample()
      sample = taken
      var events: [LedgerEvent] = []
      sampler.forEachObservationChunk(of: taken) { events += memory.advance($0, calendar: calendar) }
      // The trusted clock goes with the checkpoint rather than with every sample.
      _ = try store.trustedNow(taken.taken, writing: true)
      let checkpoint = memory.checkpoint
      return ((memory, events, checkpoint), checkpoint)
    }
    var memory = updated
    // The table the store wrote is the saved one: shared, not a second copy.
    memory.saved(checkpoint, stored: store.savedLedger)
    self.memory = memory
    steadyBook = steadyWanted ? sampler.steadyBook(for: memory.ledger) : nil
    // As this save left the file, read under its lock: a commit by another writer after it is
    // still to be absorbed.
    absorbedVersion = store.writtenVersion ?? (try? store.dataVersion())
    unbooked = []
    writer = nil
    lastSave = sample?.taken.boottime ?? attempt.boottime
    // The recorder's saves are what one-shot readers read without SQLite (`PublishedState`); one
    // it cannot publish leaves them reading the database.
    if role == .recorder { publishedLastSave = (try? store.publishForReaders()) ?? false }
    return Step(sample: sample, events: events, saved: true)
  }
}
