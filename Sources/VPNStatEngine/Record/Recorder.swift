import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat record`: samples every interval, books link notifications as they come (so a tunnel
/// torn down between polls loses nothing), keeps the ledger in memory and saves it as a
/// checkpoint (`LedgerKeeper`) every save interval — at once for a deleted instance's final
/// counters, a name seen for the first time, a change of the session window, and on stopping —
/// and optionally writes OpenMetrics for node_exporter after every sample.
///
/// `sample()` and `book(_:overflowed:)` are its steps; `RecorderLoop` runs them against the
/// kernel's timers and notifications, tests call them directly.
package struct Recorder {
  package var sampler: TrafficSampler
  package var keeper: LedgerKeeper
  package var store: Store { keeper.store }
  package var textfileDirectory: String?
  /// Where the figures of every sample are published for `record --listen` to serve.
  package var exposition: MetricsExposition?
  /// The lengths a next window would get, for the session gauges in the textfile.
  package var nextLengths: SessionLengths
  package let log: any EventLog
  /// Writes the textfile (atomically, in production).
  let writeTextfile: ([UInt8], String) throws -> Void
  /// The database problem last logged, so a long outage is one line, not one per tick.
  package private(set) var lastProblem: String?
  /// The session window as last seen, the file's version then and the store's writer epoch: a
  /// window opened or ended by an enforcer is saved with the ledger at once.
  private var sessionSeen: (version: Int64, epoch: Int, record: SessionRecord)?
  /// For the status page: the totals of the last published sample (rates are the difference),
  /// and the last day's history, read again once a minute, not every sample.
  private var publishedTotals: (monotonic: Int64, traffic: [InterfaceName: TrafficCounts])?
  private var pageHistory: (monotonic: Int64, history: TrafficHistory?)?
  /// The last status line and what it was made of (`statusLine()`).
  private var statusSaid: (count: Int, problem: String?, writer: String?, line: String)?
  static let pageHistoryInterval: Int64 = 60_000_000_000

  package init(
    sampler: TrafficSampler, store: Store, textfileDirectory: String?, nextLengths: SessionLengths = .builtIn,
    saveInterval: Duration = Recorder.defaultSaveInterval, lock: any LedgerWriterLock = UncontendedLedgerLock(),
    log: any EventLog,
    writeTextfile: @escaping ([UInt8], String) throws -> Void = {
      try AtomicFile.write($0, named: "vpnstat.prom", in: $1)
    }
  ) {
    self.sampler = sampler
    self.keeper = LedgerKeeper(store: store, saveInterval: saveInterval, role: .recorder, lock: lock)
    // Every sample asks for the file's version; between writes it is known without a look.
    store.watchStamp()
    self.textfileDirectory = textfileDirectory
    self.nextLengths = nextLengths
    self.log = log
    self.writeTextfile = writeTextfile
  }

  /// How often the ledger is saved when nothing asks for a save sooner.
  package static let defaultSaveInterval: Duration = .seconds(60)

  /// Books link notifications: the final counters of deleted links (saved at once), kept current
  /// link tables. `overflowed`: the kernel dropped some, which is counted, said, and followed by
  /// a sample.
  package mutating func book(_ changes: [LinkNotifications.Change], overflowed: Bool) throws {
    var observations: [LedgerObservation] = []
    var deleted = false
    for change in changes {
      if let observation = sampler.observation(change) {
        observations.append(observation)
        deleted = deleted || change.deleted
      }
      sampler.apply(change)
    }
    for event in keeper.book(observations, deleted: deleted) { log.event(LedgerEventText.line(event)) }
    if overflowed {
      log.event(
        "link notifications overflowed (the recorder fell behind): links deleted meanwhile are not booked; resynchronising"
      )
      try? store.noteNotificationOverflow(at: sampler.clock.now().wall)
      keeper.requestSave()
      try sample()
    } else if deleted {
      try sample()
    }
  }

  /// One sample: advances the ledger in memory, or saves a checkpoint with the sample read inside
  /// its transaction when one is due (see `LedgerKeeper`); then the textfile.
  package mutating func sample() throws {
    // The stamp once, for both: whether another process wrote the session, and the ledger.
    let version = try? store.dataVersion()
    noteSessionChange(version)
    // Without a textfile or a listener nothing reads the sample: the keeper then reads the
    // counters straight into the ledger between saves.
    let step = try keeper.step(
      &sampler, version: version, keepingSample: textfileDirectory != nil || exposition != nil)
    if let problem = step.problem {
      if lastProblem != problem.description {
        log.event("\(problem.description) Retrying every interval; nothing is lost while the interfaces exist.")
        lastProblem = problem.description
      }
    } else if step.saved, lastProblem != nil {
      log.event("\(store.location.path) is writable again: saved")
      lastProblem = nil
    }
    for event in step.events { log.event(LedgerEventText.line(event)) }
    // What the save built (rows, statements, the stored ledger's new copy, the published state)
    // is freed by now, and neither the pages it read nor the code it ran are needed before the
    // next save.
    if step.saved {
      store.releaseCache()
      ProcessMemory.releaseProgramPages()
    }
    // The sample is not kept past this call: a thousand interfaces' counters and attributes would
    // stay resident between samples for nothing (the ledger holds what the next one needs).
    guard let sample = step.sample else { return }
    for problem in sample.problems {
      log.event("\(problem.name.terminalText): \(TerminalText.sanitize(problem.message))")
    }
    guard textfileDirectory != nil || exposition != nil else { return }
    // The in-memory ledger, ahead of the last checkpoint: what every sample publishes.
    let ledger = keeper.ledger
    let session = try SessionView.report(
      SessionRequest(reading: sample.taken, sample: sample, ledger: ledger, keeper: keeper, nextLengths: nextLengths),
      store: store, catalog: &sampler.catalog)
    let health = try store.health()
    if let textfileDirectory {
      // node_exporter's textfile collector reads the Prometheus text format, not OpenMetrics.
      try writeTextfile(
        OpenMetrics.render(
          ledger: ledger, session: session, health: health, at: sample.taken.wall, format: .prometheus),
        textfileDirectory)
    }
    // The in-memory figures of this sample: a scrape never reads the database.
    guard let exposition else { return }
    let (rates, history) = pageFigures(sample.taken, ledger: ledger)
    exposition.publish(
      MetricsSnapshot(
        ledger: ledger, session: session, health: health, takenAt: sample.taken.wall, rates: rates, history: history))
  }

  /// The status page's rates (each interface's totals against the last published sample's:
  /// bridged totals only grow, so a reset between them is no negative rate) and its history of
  /// the last 24 hours by class, read through the keeper so unsaved traffic is in it. A history
  /// that cannot be read leaves the chart out; it never stops recording.
  private mutating func pageFigures(_ taken: ClockReading, ledger: Ledger) -> (
    [InterfaceName: StatusPageModel.Rates], TrafficHistory?
  ) {
    let traffic = ledger.entries.mapValues(\.totals.traffic)
    var rates: [InterfaceName: StatusPageModel.Rates] = [:]
    if let last = publishedTotals, taken.monotonic > last.monotonic {
      let seconds = Double(taken.monotonic - last.monotonic) / 1e9
      for (name, now) in traffic {
        guard let before = last.traffic[name], now.rxBytes >= before.rxBytes, now.txBytes >= before.txBytes else {
          continue
        }
        rates[name] = StatusPageModel.Rates(
          rx: Double(now.rxBytes - before.rxBytes) / seconds, tx: Double(now.txBytes - before.txBytes) / seconds)
      }
    }
    publishedTotals = (taken.monotonic, traffic)
    if let seen = pageHistory, taken.monotonic - seen.monotonic < Self.pageHistoryInterval {
      return (rates, seen.history)
    }
    let calendar = store.calendar
    let history = try? RecordedTraffic.reading(keeper) { recorded in
      TrafficHistory.make(
        buckets: try recorded.buckets(
          .hour, since: HistoryRows(.hour).start(ofLast: 24, at: taken.wall, in: calendar)),
        granularity: .hour, count: 24, now: taken.wall, grouping: .class, selection: InterfaceSelection(),
        calendar: calendar)
    }
    pageHistory = (taken.monotonic, history)
    return (rates, history)
  }

  /// Where the recorder stands, in the line the service manager shows (`STATUS=`). Made again
  /// only when what it says changed: the loop asks at every turn, and a string built every second
  /// is work, and standard-library code kept resident, for a line that rarely changes.
  package mutating func statusLine() -> String {
    let count = keeper.ledger.entries.count
    let writer = keeper.isWriting ? nil : keeper.writer
    if let said = statusSaid, said.count == count, said.problem == lastProblem, said.writer == writer {
      return said.line
    }
    var line = "recording \(count) interface\(count == 1 ? "" : "s") into \(store.location.path)"
    if let lastProblem {
      line += " · not saved: " + lastProblem
    } else if let writer {
      line += " · \(TerminalText.sanitize(writer)) keeps the ledger"
    }
    statusSaid = (count, lastProblem, writer, line)
    return line
  }

  /// Before stopping: the last checkpoint, patiently; it throws when that fails, so the process
  /// says so in its exit status.
  package mutating func finish(patience milliseconds: Int32) throws {
    store.setBusyTimeout(milliseconds: milliseconds)
    keeper.requestSave()
    try keeper.saveNow(&sampler, last: true)
    store.checkpoint()
    // The checkpoint changed the stamp (the file's header is the log's now): published again,
    // on the database's disk, where a stopped unit's readers (and the next boot's) find it.
    if keeper.isWriting { _ = try? store.publishForReaders(lasting: true) }
  }

  /// A window opened, ended or reset by another process is saved with the ledger at once, so the
  /// stored totals and the window's usage base agree for every reader.
  ///
  /// The recorder's own saves change the file, never the session: when only they came since the
  /// session was read (the same writer epoch, and the file as its last write left it), it is not
  /// read again. Read after each save, it opened a connection at the new stamp and parsed the
  /// schema once a minute, and SQLite's parser and the standard library's string code then stayed
  /// resident until the next save.
  private mutating func noteSessionChange(_ version: Int64?) {
    guard let version, version != sessionSeen?.version else { return }
    let epoch = store.writerEpoch
    if let seen = sessionSeen, seen.epoch == epoch, version == store.writtenVersion {
      // Still the session read then, at the file's new version: every sample until the next
      // save asked the same question (the stamp hashed again) otherwise.
      sessionSeen?.version = version
      return
    }
    guard let record = try? store.sessionRecord() else { return }
    if let seen = sessionSeen?.record, seen.window != record.window || seen.plan != record.plan {
      keeper.requestSave()
    }
    sessionSeen = (version, epoch, record)
  }
}

/// The recorder's life as a process: a sample every interval, link notifications as they come,
/// until `count` samples or a stop signal; the last advance saved before it returns.
package enum RecorderLoop {
  /// How long the last save before stopping may wait for a lock (the loop's saves wait only
  /// briefly, so notifications keep being read).
  package static let finalPatienceMilliseconds: Int32 = 5000

  /// The supervisor hears "ready" once the database is held and the first sample taken, "alive"
  /// from this loop, and the status line when it changes.
  package static func run(
    _ recorder: inout Recorder, interval: Duration, count: Int?,
    notificationBuffer: Int32 = LinkNotifications.defaultReceiveBuffer,
    supervisor: any ServiceSupervisor = Unsupervised(), reload: (() -> Void)? = nil
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
    var said = recorder.statusLine()
    supervisor.ready(status: said)
    var beat = WatchdogBeat(supervisor)
    // Started, opened, checked and saved once: what only that needed need not stay resident.
    ProcessMemory.releaseStartUp()
    while count.map({ samples < $0 }) ?? true {
      beat.turn(supervisor, monotonic: recorder.sampler.clock.now().monotonic)
      let line = recorder.statusLine()
      if line != said {
        said = line
        supervisor.status(line)
      }
      var watched = [signals.descriptor, timer.descriptor]
      if let notifications { watched.append(notifications.descriptor) }
      let ready = try waitForReadable(watched, timeout: beat.timeout(monotonic: recorder.sampler.clock.now().monotonic))
      let received = ready.contains(signals.descriptor) ? signals.received() : []
      // SIGHUP reloads what can be reloaded (the web configuration), and stops a recorder
      // that has nothing to reload.
      if let reload, !received.isEmpty, received.allSatisfy(SignalChannel.isHangUp) {
        supervisor.status("reloading")
        reload()
        said = ""
      } else if !received.isEmpty {
        supervisor.stopping()
        // Book what happened since the last poll, then stop (the last save samples once more).
        try book()
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
