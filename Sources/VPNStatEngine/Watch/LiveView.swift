import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat watch`: what the live view shows and how it changes. Each `refresh()` samples (and
/// the link changes booked meanwhile), shows the ledger when there is a database (advanced in
/// memory; the recorder keeps the stored one), and reads the session from the store (another
/// process, the enforcer, changes it). The output is a full screen, plain lines or JSON lines,
/// each a pure rendering of the last snapshot. `LiveViewLoop` runs it on a terminal or a pipe.
package struct LiveView {
  package enum Mode: Sendable {
    /// A full-screen view on a terminal.
    case terminal
    /// One plain line per interface per interval (pipes, files).
    case plain
    /// One JSON object per line, flushed as each is made.
    case json
  }

  /// What a key press did.
  package enum KeyEffect: Equatable, Sendable {
    case none, redraw, quit
  }

  /// The use case each refresh runs (`status`'s, with rates against the previous refresh).
  package var reader: StatusReader
  package var store: Store? { reader.store }
  package let selection: InterfaceSelection
  package let nextLengths: SessionLengths
  package var state: WatchViewState
  /// Colour and the calendar clock times are shown in.
  package var options: DisplayOptions
  /// What shows WireGuard's own figures under a WireGuard tunnel; nil: nothing is shown.
  package var wireGuard: (any WireGuardSource)? {
    get { reader.wireGuard }
    set { reader.wireGuard = newValue }
  }
  package private(set) var history = RateHistory()
  /// The last snapshot shown.
  package private(set) var current: StatusSnapshot?

  package init(
    sampler: TrafficSampler, store: Store?, selection: InterfaceSelection, interval: Duration,
    nextLengths: SessionLengths, options: DisplayOptions
  ) {
    self.reader = StatusReader(sampler: sampler, source: LedgerSource(store: store), reportsStoreHealth: false)
    self.selection = selection
    self.nextLengths = nextLengths
    self.options = options
    self.state = WatchViewState(bits: options.bits, interval: interval)
  }

  /// One refresh: a sample, the ledger, the session, as the snapshot now shown.
  @discardableResult
  package mutating func refresh() throws -> StatusSnapshot {
    let hadPrevious = reader.previous != nil
    let snapshot = try reader.report(StatusRequest(selection: selection, nextLengths: nextLengths)).snapshot
    if hadPrevious { history.record(snapshot) }
    current = snapshot
    return snapshot
  }

  /// Books link changes into the in-memory ledger (a tunnel torn down between refreshes keeps
  /// its bytes) and keeps the reader's link table current.
  package mutating func book(_ changes: [LinkNotifications.Change]) { reader.book(changes) }

  /// The keys of the full screen: q quits, c cycles the class, b bytes/bits, ? and h help.
  package mutating func press(_ key: UInt8) -> KeyEffect {
    switch key {
    case UInt8(ascii: "q"), UInt8(ascii: "Q"): return .quit
    case UInt8(ascii: "c"):
      state.cycleClass(present: Array(Set((current?.interfaces ?? []).map(\.interfaceClass))))
    case UInt8(ascii: "b"): state.bits.toggle()
    case UInt8(ascii: "?"), UInt8(ascii: "h"): state.showHelp.toggle()
    default: return .none
    }
    return .redraw
  }

  /// The full screen for a terminal of `size`.
  package func screen(size: TerminalSize) -> [String] {
    guard let current else { return [] }
    return WatchScreen.render(current, history: history, state: state, size: size, options: options)
  }

  /// What a pipe gets for the last refresh: plain lines, or one JSON line.
  package func lines(_ mode: Mode) -> [UInt8] {
    guard let current else { return [] }
    switch mode {
    case .terminal: return []
    case .plain:
      var plain = options
      plain.bits = state.bits
      return Array(WatchScreen.plainLines(current, options: plain).map { $0 + "\n" }.joined().utf8)
    case .json:
      return StatusJSON.line(current)
    }
  }
}

/// The live view's life as a process: the first screen at once, then a refresh every interval
/// (and on link changes), keys and resizes on a terminal, until `count` refreshes, `q`, a stop
/// signal, or a reader that went away.
package enum LiveViewLoop {
  package static func run(
    _ view: inout LiveView, mode: LiveView.Mode, interval: Duration, count: Int?,
    output: FileDescriptor = .standardOutput, input: FileDescriptor = .standardInput
  ) throws {
    let onTerminal: Bool
    if case .terminal = mode { onTerminal = true } else { onTerminal = false }
    let signals = try SignalChannel.stopping(resizing: onTerminal)
    let terminal = onTerminal ? try TerminalMode(input: input, output: output) : nil
    defer { terminal?.restore() }
    let notifications = try? LinkNotifications()
    let timer = try IntervalTimer(interval: interval)
    func draw() throws {
      guard let terminal else { return }
      try terminal.draw(view.screen(size: TerminalSize.of(output) ?? TerminalSize(columns: 80, rows: 24)))
    }

    try view.refresh()
    try draw()
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
        if received.contains(where: SignalChannel.isStop) { return }
        redraw = redraw || received.contains(where: SignalChannel.isResize)
      }
      if let terminal, ready.contains(input) {
        for key in terminal.keys() {
          switch view.press(key) {
          case .quit: return
          case .redraw: redraw = true
          case .none: break
          }
        }
      }
      if let notifications, ready.contains(notifications.descriptor) { view.book(notifications.drain().changes) }
      if ready.contains(timer.descriptor), timer.acknowledge() > 0 {
        if let notifications { view.book(notifications.drain().changes) }
        try view.refresh()
        emitted += 1
        if terminal != nil {
          redraw = true
        } else {
          try output.writeAll(view.lines(mode))
        }
      }
      if redraw { try draw() }
    }
  }
}
