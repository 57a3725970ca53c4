#if canImport(Glibc)
  import Glibc
#endif

/// `vpnstat watch`: samples every interval (and books link changes as they happen), shows the
/// ledger when there is a database (advanced in memory; the recorder keeps the stored one), reads
/// the session from the store on every refresh (another process, the enforcer, changes it), and
/// shows the result as a full screen, plain lines or JSON lines.
public struct LiveView {
  public enum Mode: Sendable {
    /// A full-screen view on a terminal.
    case terminal(color: Bool)
    /// One plain line per interface per interval (pipes, files).
    case plain
    /// One JSON object per line, flushed as each is made.
    case json
  }

  public var sampler: TrafficSampler
  public let store: Store?
  var ledgerView: LedgerView?
  public let selection: InterfaceSelection
  public let interval: Duration
  public let count: Int?
  public let mode: Mode
  public let nextLengths: SessionLengths
  public var state: WatchViewState
  let output: FileDescriptor
  let input: FileDescriptor
  public private(set) var history = RateHistory()

  public init(
    sampler: TrafficSampler, store: Store?, selection: InterfaceSelection, interval: Duration, count: Int?,
    mode: Mode, nextLengths: SessionLengths, output: FileDescriptor = .standardOutput,
    input: FileDescriptor = .standardInput
  ) {
    self.sampler = sampler
    self.store = store
    self.selection = selection
    self.interval = interval
    self.count = count
    self.mode = mode
    self.nextLengths = nextLengths
    self.output = output
    self.input = input
    self.state = WatchViewState(interval: interval)
    self.ledgerView = store.map(LedgerView.init(store:))
  }

  public mutating func run() throws {
    var watchedSignals = [SIGINT, SIGTERM, SIGHUP]
    var terminal: TerminalMode?
    var color = false
    if case .terminal(let useColor) = mode {
      color = useColor
      watchedSignals.append(SIGWINCH)
    }
    let signals = try SignalChannel(watchedSignals)
    if case .terminal = mode { terminal = try TerminalMode(input: input, output: output) }
    defer { terminal?.restore() }
    let notifications = try? LinkNotifications()
    let timer = try IntervalTimer(interval: interval)

    var (previous, ledger) = try sample()
    var current = try frame(previous, previous: nil, ledger: ledger)
    if let terminal { try terminal.draw(screen(current, color: color)) }
    // A pipe or socket on stdout is watched too: a reader that went away (`| head -n 1`) ends
    // the view at once rather than at the next write.
    let watchOutput = terminal == nil && output.isPipeOrSocket
    var emitted = 0
    while count.map({ emitted < $0 }) ?? true {
      var watched = [signals.descriptor, timer.descriptor]
      if let notifications { watched.append(notifications.descriptor) }
      if terminal != nil { watched.append(input) }
      if watchOutput { watched.append(output) }
      let ready = try waitForReadable(watched, timeout: nil)
      if watchOutput, ready.contains(output) { return }
      var redraw = false
      if ready.contains(signals.descriptor) {
        let received = signals.received()
        if received.contains(where: { $0 != SIGWINCH }) { return }
        redraw = redraw || received.contains(SIGWINCH)
      }
      if let terminal, ready.contains(input) {
        for key in terminal.keys() {
          switch key {
          case UInt8(ascii: "q"), UInt8(ascii: "Q"): return
          case UInt8(ascii: "c"): state.cycleClass(present: Array(Set(current.interfaces.map(\.interfaceClass))))
          case UInt8(ascii: "b"): state.bits.toggle()
          case UInt8(ascii: "?"), UInt8(ascii: "h"): state.showHelp.toggle()
          default: continue
          }
          redraw = true
        }
      }
      if let notifications, ready.contains(notifications.descriptor) {
        try book(notifications)
      }
      if ready.contains(timer.descriptor), timer.acknowledge() > 0 {
        if let notifications { book(notifications) }
        let (sample, ledger) = try self.sample()
        current = try frame(sample, previous: previous, ledger: ledger)
        previous = sample
        history.record(current)
        emitted += 1
        switch mode {
        case .terminal: redraw = true
        case .plain:
          try output.writeAll(WatchScreen.plainLines(current, bits: state.bits).map { $0 + "\n" }.joined())
        case .json:
          try output.writeAll(StatusJSON.render(current) + [0x0A])
        }
      }
      if redraw, let terminal { try terminal.draw(screen(current, color: color)) }
    }
  }

  private func screen(_ snapshot: StatusSnapshot, color: Bool) -> [String] {
    let size = TerminalSize.of(output) ?? TerminalSize(columns: 80, rows: 24)
    return WatchScreen.render(snapshot, history: history, state: state, size: size, color: color)
  }

  /// One sample, and the ledger it advances when there is a database.
  private mutating func sample() throws -> (CounterSample, Ledger?) {
    guard var view = ledgerView else { return (try sampler.sample(), nil) }
    defer { ledgerView = view }
    let (sample, ledger) = try view.sample(&sampler)
    return (sample, ledger)
  }

  /// One refresh: the sample, the ledger, the session, as a snapshot.
  private mutating func frame(_ sample: CounterSample, previous: CounterSample?, ledger: Ledger?) throws
    -> StatusSnapshot
  {
    var snapshot = StatusSnapshot.make(
      sample: sample, catalog: &sampler.catalog, selection: selection, previous: previous, ledger: ledger)
    if let problem = sampler.clock.bootIDProblem { snapshot.warnings.append(problem) }
    if let store {
      snapshot.session = try SessionView.report(
        store, reading: sample.taken, sample: sample, catalog: &sampler.catalog, ledger: ledger,
        nextLengths: nextLengths)
    }
    return snapshot
  }

  /// Books link changes into the in-memory ledger (a tunnel torn down between ticks keeps its
  /// bytes) and keeps the reader's link table current.
  private mutating func book(_ notifications: LinkNotifications) {
    let (changes, _) = notifications.drain()
    var observations: [LedgerObservation] = []
    for change in changes {
      if ledgerView != nil, let observation = sampler.observation(change) { observations.append(observation) }
      sampler.apply(change)
    }
    if !observations.isEmpty { ledgerView?.book(observations) }
  }
}
