#if canImport(Glibc)
  import Glibc
#endif

/// Where a recorder's lines go: one per reset, wrap or discarded sample, and notes.
public protocol RecorderLog {
  func event(_ line: String)
}

/// `vpnstat record`: samples every interval, books link notifications as they come (so a tunnel
/// torn down between polls loses nothing), advances the ledger in one transaction per sample
/// (the sample read inside it), and optionally writes OpenMetrics for node_exporter. Runs until
/// `count` samples or a signal.
public struct Recorder {
  public var sampler: TrafficSampler
  public let store: Store
  public var interval: Duration
  public var count: Int?
  public var textfileDirectory: String?
  /// The lengths a next window would get, for the session gauges in the textfile.
  public var nextLengths: SessionLengths
  public let log: any RecorderLog
  /// The link notifications' receive buffer (`VPNSTAT_NOTIFICATION_BUFFER`).
  public var notificationBuffer = LinkNotifications.defaultReceiveBuffer
  /// Link notifications read while the database could not be written: booked with the next
  /// advance that can be (a deleted link's final counters exist nowhere else).
  private var pending: [LedgerObservation] = []
  /// The database problem last logged, so a long outage is one line, not one per tick.
  private var lastProblem: String?

  public init(
    sampler: TrafficSampler, store: Store, interval: Duration, count: Int?, textfileDirectory: String?,
    nextLengths: SessionLengths = .builtIn, log: any RecorderLog
  ) {
    self.sampler = sampler
    self.store = store
    self.interval = interval
    self.count = count
    self.textfileDirectory = textfileDirectory
    self.nextLengths = nextLengths
    self.log = log
  }

  /// Runs the loop. Returns normally on SIGINT/SIGTERM or after `count` samples; the last
  /// advance is committed before it returns.
  public mutating func run() throws {
    let signals = try SignalChannel([SIGINT, SIGTERM, SIGHUP])
    let notifications = try? LinkNotifications(receiveBuffer: notificationBuffer)
    if notifications == nil {
      log.event("link notifications unavailable: traffic of links deleted between polls is not booked")
    }
    let timer = try IntervalTimer(interval: interval)
    var samples = 0
    try poll()
    samples += 1
    while count.map({ samples < $0 }) ?? true {
      var watched = [signals.descriptor, timer.descriptor]
      if let notifications { watched.append(notifications.descriptor) }
      let ready = try waitForReadable(watched, timeout: nil)
      if ready.contains(signals.descriptor), !signals.received().isEmpty {
        // Book what happened since the last poll, then stop.
        try bookNotifications(notifications)
        try poll()
        break
      }
      if let notifications, ready.contains(notifications.descriptor) {
        try bookNotifications(notifications)
      }
      if ready.contains(timer.descriptor), timer.acknowledge() > 0 {
        try bookNotifications(notifications)
        try poll()
        samples += 1
      }
    }
    if lastProblem != nil {
      // Stopping with something unsaved: one last, patient try; then say so and fail.
      store.setBusyTimeout(milliseconds: finalBusyTimeoutMilliseconds)
      lastProblem = nil
      let pending = self.pending
      _ = try store.advanceLedger(now: sampler.clock.now().wall) { () -> (Void, [LedgerObservation]) in
        let sample = try sampler.sample()
        return ((), pending + sampler.observations(sample))
      }
    }
    store.checkpoint()
  }

  /// How long the last save before stopping may wait for a lock (the loop's saves wait only
  /// briefly, so notifications keep being read).
  let finalBusyTimeoutMilliseconds: Int32 = 5000

  private mutating func bookNotifications(_ notifications: LinkNotifications?) throws {
    guard let notifications else { return }
    let (changes, overflowed) = notifications.drain()
    for change in changes {
      if let observation = sampler.observation(change) { pending.append(observation) }
      sampler.apply(change)
    }
    if overflowed {
      log.event(
        "link notifications overflowed (the recorder fell behind): links deleted meanwhile are not booked; resynchronising"
      )
      try? store.noteNotificationOverflow(at: sampler.clock.now().wall)
      try poll()
    } else if !pending.isEmpty {
      try save { _ in ((), []) }
    }
  }

  /// One sample, read inside the ledger's write transaction (see `Store.advanceLedger`).
  private mutating func poll() throws {
    guard
      let (ledger, sample) = try save({ sampler -> (CounterSample, [LedgerObservation]) in
        let sample = try sampler.sample()
        return (sample, sampler.observations(sample))
      })
    else { return }
    for problem in sample.problems {
      log.event("\(problem.name.terminalText): \(TerminalText.sanitize(problem.message))")
    }
    if let textfileDirectory {
      // node_exporter's textfile collector reads the Prometheus text format, not OpenMetrics.
      let session = try SessionView.report(
        store, reading: sample.taken, sample: sample, catalog: &sampler.catalog, ledger: ledger,
        nextLengths: nextLengths)
      try AtomicFile.write(
        OpenMetrics.render(
          ledger: ledger, session: session, health: try store.health(), at: sample.taken.wall, format: .prometheus),
        named: "vpnstat.prom", in: textfileDirectory)
    }
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
      for event in result.advance.events {
        log.event("\(event.name.terminalText): \(event.detail)")
      }
      return (result.ledger, result.reading)
    } catch let error as StoreError {
      switch error {
      case .busy, .full:
        if lastProblem != error.message {
          log.event("\(error.message) Retrying every interval; nothing is lost while the interfaces exist.")
          lastProblem = error.message
        }
        return nil
      default:
        throw error
      }
    }
  }
}
