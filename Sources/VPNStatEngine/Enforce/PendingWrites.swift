import VPNStatModel
import VPNStatStore

/// What the enforcer must write and the database has not taken yet — its stops, in order, and a
/// window it opened — kept in memory and, from the first refusal on, in the spool beside the
/// database (`EnforcerSpool`, one synced line a record), so neither a database held by another
/// user nor a `kill -9` loses them. Written whenever the database answers: by this enforcer, or by
/// the next one to start, which takes in the spool first.
struct PendingWrites {
  /// A window opened here that the database has not taken yet.
  struct Window: Equatable {
    var window: SessionWindow
    var tunnel: InterfaceName
    var usageBase: TrafficCounts
  }

  /// What a write changed of what the enforcer knows.
  struct Written {
    /// The session the database holds now that a window was written.
    var adopted: SessionRecord?
    /// The deadline to arm: another process changed the window meanwhile.
    var rearm: Timestamp?

    mutating func merge(_ later: Written) {
      adopted = later.adopted ?? adopted
      rearm = later.rearm ?? rearm
    }
  }

  /// Where what the database refuses is kept until it takes it (nil: only in memory).
  let spool: EnforcerSpool?
  let log: any EventLog
  private(set) var stops: [StopRecord] = []
  private(set) var window: Window?
  /// The pending stops, and whether the pending window, already in the spool.
  private var spooledStops: Set<StopRecord> = []
  private var windowSpooled = false
  /// Set while the spool may hold records this enforcer put there or read from it.
  private var spoolUsed = false
  /// The last spool problem logged, said once.
  private(set) var spoolProblem: String?

  init(spool: EnforcerSpool?, log: any EventLog) {
    self.spool = spool
    self.log = log
  }

  var isEmpty: Bool { stops.isEmpty && window == nil }

  mutating func add(_ stop: StopRecord) {
    stops.append(stop)
  }

  mutating func open(_ window: Window) {
    self.window = window
  }

  /// Writes what is pending into `store` (none: into the spool); what the database refuses goes
  /// to the spool too. Once everything this enforcer spooled is written, the spool is taken in
  /// and emptied.
  mutating func flush(to store: Store?, trusted: TrustedClock?, outage: inout DatabaseOutage) -> Written {
    var written = write(to: store, trusted: trusted, outage: &outage)
    if spoolUsed, let store, isEmpty { written.merge(takeSpool(into: store, trusted: trusted, outage: &outage)) }
    return written
  }

  /// Takes in what the spool holds — before what is pending here, which is newer — writes it
  /// when there is a database, and takes out of the spool what was read once all of it is
  /// written. Without one it stays pending, and in the spool.
  mutating func takeSpool(into store: Store?, trusted: TrustedClock?, outage: inout DatabaseOutage) -> Written {
    guard let spool else { return Written() }
    let read: (records: [SpooledRecord], bytes: [UInt8], unreadable: Int)
    do {
      read = try spool.read()
    } catch {
      spoolFailed(error)
      return Written()
    }
    if read.unreadable > 0 {
      log.event("\(spool.path): \(read.unreadable) line\(read.unreadable == 1 ? "" : "s") that are no record, skipped")
    }
    var taken: [StopRecord] = []
    for record in read.records {
      switch record {
      case .stop(let stop):
        if !taken.contains(stop) && !stops.contains(stop) { taken.append(stop) }
      case .window(let window, let tunnel, let usageBase):
        if self.window == nil {
          self.window = Window(window: window, tunnel: tunnel, usageBase: usageBase)
          windowSpooled = true
        }
      }
    }
    stops.insert(contentsOf: taken, at: 0)
    spooledStops.formUnion(taken)
    spoolUsed = true
    let written = write(to: store, trusted: trusted, outage: &outage)
    guard isEmpty else { return written }
    do {
      try spool.remove(read.bytes)
      spoolUsed = false
      if !read.records.isEmpty {
        log.event("wrote what \(spool.path) kept (\(read.records.count) record\(read.records.count == 1 ? "" : "s"))")
      }
    } catch {
      spoolFailed(error)
    }
    return written
  }

  /// What to say when the enforcer stops with records the database would not take (`problem`:
  /// why): where they are kept, or that they are lost. Nil when nothing is pending.
  func leftAtStop(problem: String?) -> String? {
    let kept = stops.count + (window == nil ? 0 : 1)
    guard kept > 0 else { return nil }
    let problem = problem ?? "unknown"
    if let spool, spooledStops.count == stops.count, windowSpooled || window == nil {
      return
        "stopping with \(kept) record\(kept == 1 ? "" : "s") the database would not take (\(problem)), kept in \(spool.path): the next enforcer to start writes \(kept == 1 ? "it" : "them")"
    }
    return
      "stopping with records the database would not take (\(problem)) and that could not be kept (\(spoolProblem ?? "no spool")): they are lost"
  }

  /// Writes the pending window and stops. A window is written only if the stored record would
  /// open one too at its opening instant (another process may have reset or opened one since).
  private mutating func write(to store: Store?, trusted: TrustedClock?, outage: inout DatabaseOutage) -> Written {
    var written = Written()
    guard !isEmpty else { return written }
    guard let store else {
      keepInSpool()
      return written
    }
    do {
      if let pending = window {
        let adopted = try store.updateSession { stored -> SessionRecord in
          if let adopted = stored.adopting(pending.window, tunnel: pending.tunnel, usageBase: pending.usageBase) {
            stored = adopted
          }
          return stored
        }
        window = nil
        windowSpooled = false
        written.adopted = adopted
        if adopted.window != nil, adopted.window != pending.window, adopted.plan == .free {
          log.event("another process changed the session meanwhile; following the stored window")
          written.rearm = adopted.window?.sessionEndsAt
        }
      }
      while let stop = stops.first {
        try store.recordStop(stop)
        stops.removeFirst()
        spooledStops.remove(stop)
      }
      if let trusted { try? store.storeTrusted(trusted) }
      outage.recovered(nothingPending: isEmpty)
    } catch {
      outage.failed(error)
      keepInSpool()
    }
    return written
  }

  /// Puts what is pending and not in the spool yet into it, one synced line each: a stop the
  /// database refused outlives this process.
  private mutating func keepInSpool() {
    guard let spool else { return }
    do {
      if let pending = window, !windowSpooled {
        try spool.keep(.window(pending.window, tunnel: pending.tunnel, usageBase: pending.usageBase))
        windowSpooled = true
        spoolUsed = true
      }
      for stop in stops where !spooledStops.contains(stop) {
        try spool.keep(.stop(stop))
        spooledStops.insert(stop)
        spoolUsed = true
      }
    } catch {
      spoolFailed(error)
    }
  }

  private mutating func spoolFailed(_ error: any Error) {
    let text = "\(error)"
    guard text != spoolProblem else { return }
    spoolProblem = text
    log.event("\(text): what the database refuses is kept in memory only")
  }
}
