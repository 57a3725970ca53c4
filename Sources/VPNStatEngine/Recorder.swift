import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat record`: samples every interval, books link notifications as they come (so a tunnel
/// torn down between polls loses nothing), advances the ledger in one transaction per sample
/// (the sample read inside it), and optionally writes OpenMetrics for node_exporter.
///
/// `sample()` and `book(_:overflowed:)` are its steps; `RecorderLoop` runs them against the
/// kernel's timers and notifications, tests call them directly.
public struct Recorder {
  public var sampler: TrafficSampler
  public let store: Store
  public var textfileDirectory: String?
  /// Where the figures of every sample are published for `record --listen` to serve.
  public var exposition: MetricsExposition?
  /// The lengths a next window would get, for the session gauges in the textfile.
  public var nextLengths: SessionLengths
  public let log: any EventLog
  /// Writes the textfile (atomically, in production).
  let writeTextfile: (String, String) throws -> Void
  /// Link notifications read while the database could not be written: booked with the next
  /// advance that can be (a deleted link's final counters exist nowhere else).
  public private(set) var pending: [LedgerObservation] = []
  /// The database problem last logged, so a long outage is one line, not one per tick.
  public private(set) var lastProblem: String?

  public init(
    sampler: TrafficSampler, store: Store, textfileDirectory: String?, nextLengths: SessionLengths = .builtIn,
    log: any EventLog,
    writeTextfile: @escaping (String, String) throws -> Void = {
      try AtomicFile.write($0, named: "vpnstat.prom", in: $1)
    }
  ) {
    self.sampler = sampler
    self.store = store
    self.textfileDirectory = textfileDirectory
    self.nextLengths = nextLengths
    self.log = log
    self.writeTextfile = writeTextfile
  }

  /// Books link notifications: the final counters of deleted links, kept current link tables.
  /// `overflowed`: the kernel dropped some, which is counted, said, and followed by a sample.
  public mutating func book(_ changes: [LinkNotifications.Change], overflowed: Bool) throws {
    for change in changes {
      if let observation = sampler.observation(change) { pending.append(observation) }
      sampler.apply(change)
    }
    if overflowed {
      log.event(
        "link notifications overflowed (the recorder fell behind): links deleted meanwhile are not booked; resynchronising"
      )
      try? store.noteNotificationOverflow(at: sampler.clock.now().wall)
      try sample()
    } else if !pending.isEmpty {
      _ = try save { _ in ((), []) }
    }
  }

  /// One sample, read inside the ledger's write transaction (see `Store.advanceLedger`), and the
  /// textfile after it.
  public mutating func sample() throws {
    guard
      let (ledger, sample) = try save({ sampler -> (CounterSample, [LedgerObservation]) in
        let sample = try sampler.sample()
        return (sample, sampler.observations(sample))
      })
    else { return }
    for problem in sample.problems {
      log.event("\(problem.name.terminalText): \(TerminalText.sanitize(problem.message))")
    }
    guard textfileDirectory != nil || exposition != nil else { return }
    let session = try SessionView.report(
      store, reading: sample.taken, sample: sample, catalog: &sampler.catalog, ledger: ledger,
      nextLengths: nextLengths)
    let health = try store.health()
    if let textfileDirectory {
      // node_exporter's textfile collector reads the Prometheus text format, not OpenMetrics.
      try writeTextfile(
        OpenMetrics.render(
          ledger: ledger, session: session, health: health, at: sample.taken.wall, format: .prometheus),
        textfileDirectory)
    }
    // The in-memory figures of this sample: a scrape never reads the database.
    exposition?.publish(MetricsSnapshot(ledger: ledger, session: session, health: health, takenAt: sample.taken.wall))
  }

  /// Before stopping: if anything is unsaved, one last, patient try; it throws when that fails
  /// too, so the process says so in its exit status.
  public mutating func finish(patience milliseconds: Int32) throws {
    if lastProblem != nil {
      store.setBusyTimeout(milliseconds: milliseconds)
      lastProblem = nil
      let pending = self.pending
      _ = try store.advanceLedger(now: sampler.clock.now().wall) { () -> (Void, [LedgerObservation]) in
        let sample = try sampler.sample()
        return ((), pending + sampler.observations(sample))
      }
      self.pending = []
    }
    store.checkpoint()
  }

  /// Advances the ledger with the pending notifications and what `observe` reads. A busy or full
  /// database is logged once and retried at the next tick: the kernel's counters keep the
  /// traffic meanwhile, and the pending notifications stay in memory. Returns nil then.
  private mutating func save<Reading>(
    _ observe: (inout TrafficSampler) throws -> (Reading, [LedgerObservation])
  ) throws -> (Ledger, Reading)? {
    let pending = self.pending
    do {
      let result = try store.advanceLedger(now: sampler.clock.now().wall) { () -> (Reading, [LedgerObservation]) in
        let (reading, observations) = try observe(&sampler)
        return (reading, pending + observations)
      }
      self.pending.removeFirst(pending.count)
      if lastProblem != nil {
        log.event("\(store.location.path) is writable again: saved")
        lastProblem = nil
      }
      for event in result.advance.events { log.event(LedgerEventText.line(event)) }
      return (result.ledger, result.reading)
    } catch let error as StoreError {
      switch error {
      case .busy, .full:
        if lastProblem != error.description {
          log.event("\(error.description) Retrying every interval; nothing is lost while the interfaces exist.")
          lastProblem = error.description
        }
        return nil
      default:
        throw error
      }
    }
  }
}

/// The recorder's life as a process: a sample every interval, link notifications as they come,
/// until `count` samples or a stop signal; the last advance saved before it returns.
public enum RecorderLoop {
  /// How long the last save before stopping may wait for a lock (the loop's saves wait only
  /// briefly, so notifications keep being read).
  public static let finalPatienceMilliseconds: Int32 = 5000

  public static func run(
    _ recorder: inout Recorder, interval: Duration, count: Int?,
    notificationBuffer: Int32 = LinkNotifications.defaultReceiveBuffer
  ) throws {
    let signals = try SignalChannel.stopping()
    let notifications = try? LinkNotifications(receiveBuffer: notificationBuffer)
    if notifications == nil {
      recorder.log.event("link notifications unavailable: traffic of links deleted between polls is not booked")
    }
    let timer = try IntervalTimer(interval: interval)
    func book() throws {
      guard let notifications else { return }
      let (changes, overflowed) = notifications.drain()
      if !changes.isEmpty || overflowed { try recorder.book(changes, overflowed: overflowed) }
    }
    var samples = 1
    try recorder.sample()
    while count.map({ samples < $0 }) ?? true {
      var watched = [signals.descriptor, timer.descriptor]
      if let notifications { watched.append(notifications.descriptor) }
      let ready = try waitForReadable(watched, timeout: nil)
      if ready.contains(signals.descriptor), !signals.received().isEmpty {
        // Book what happened since the last poll, then stop.
        try book()
        try recorder.sample()
        break
      }
      if let notifications, ready.contains(notifications.descriptor) { try book() }
      if ready.contains(timer.descriptor), timer.acknowledge() > 0 {
        try book()
        try recorder.sample()
        samples += 1
      }
    }
    try recorder.finish(patience: finalPatienceMilliseconds)
  }
}
