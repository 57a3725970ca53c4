#if canImport(Glibc)
  import Glibc
#endif

/// Where a recorder's lines go: one per reset, wrap or discarded sample, and notes.
public protocol RecorderLog {
  func event(_ line: String)
}

/// `vpnstat record`: samples every interval, books link notifications as they come (so a tunnel
/// torn down between polls loses nothing), advances the ledger in one transaction per sample,
/// and optionally writes OpenMetrics for node_exporter. Runs until `count` samples or a signal.
public struct Recorder {
  public var sampler: TrafficSampler
  public let store: Store
  public var interval: Duration
  public var count: Int?
  public var textfileDirectory: String?
  /// The lengths a next window would get, for the session gauges in the textfile.
  public var nextLengths: SessionLengths
  public let log: any RecorderLog

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
    let notifications = try? LinkNotifications()
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
    store.checkpoint()
  }

  private mutating func bookNotifications(_ notifications: LinkNotifications?) throws {
    guard let notifications else { return }
    let (changes, overflowed) = notifications.drain()
    var observations: [LedgerObservation] = []
    for change in changes {
      if let observation = sampler.observation(change) { observations.append(observation) }
      sampler.apply(change)
    }
    if !observations.isEmpty {
      try advance(observations, now: sampler.clock.now().wall)
    }
    if overflowed {
      log.event("link notifications overflowed; resynchronising from a full sample")
      try poll()
    }
  }

  private mutating func poll() throws {
    let sample = try sampler.sample()
    for problem in sample.problems {
      log.event("\(problem.name.terminalText): \(TerminalText.sanitize(problem.message))")
    }
    let ledger = try advance(sampler.observations(sample), now: sample.taken.wall)
    if let textfileDirectory {
      // node_exporter's textfile collector reads the Prometheus text format, not OpenMetrics.
      let session = try SessionView.report(
        store, reading: sample.taken, sample: sample, catalog: &sampler.catalog, ledger: ledger,
        nextLengths: nextLengths)
      try OpenMetrics.writeTextfile(
        OpenMetrics.render(ledger: ledger, session: session, at: sample.taken.wall, format: .prometheus),
        directory: textfileDirectory)
    }
  }

  @discardableResult
  private mutating func advance(_ observations: [LedgerObservation], now: Timestamp) throws -> Ledger {
    let result = try store.advanceLedger(observations, now: now)
    for event in result.advance.events {
      log.event("\(event.name.terminalText): \(event.detail)")
    }
    return result.ledger
  }
}
