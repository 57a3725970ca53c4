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
  public let log: any RecorderLog

  public init(
    sampler: TrafficSampler, store: Store, interval: Duration, count: Int?, textfileDirectory: String?,
    log: any RecorderLog
  ) {
    self.sampler = sampler
    self.store = store
    self.interval = interval
    self.count = count
    self.textfileDirectory = textfileDirectory
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
    try advance(sampler.observations(sample), now: sample.taken.wall)
  }

  private mutating func advance(_ observations: [LedgerObservation], now: Timestamp) throws {
    let result = try store.advanceLedger(observations, now: now)
    for event in result.advance.events {
      log.event("\(event.name.terminalText): \(event.detail)")
    }
    if let textfileDirectory {
      try OpenMetrics.writeTextfile(
        OpenMetrics.render(ledger: result.ledger, session: nil, at: now), directory: textfileDirectory)
    }
  }
}
