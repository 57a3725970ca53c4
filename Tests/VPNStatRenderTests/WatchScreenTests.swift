import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// The live view's renderer: every size, class mix, session state and hostile name.
struct WatchScreenTests {
  static let names: [[UInt8]] = [
    Array("wg0".utf8), Array("e\u{1B}[2Jv".utf8), Array("\u{1B}]0;x\u{07}".utf8), [0x62, 0xFF, 0xFE, 0x61],
    Array("\u{202E}rtl\u{2066}".utf8), Array("abcdefghijklmno".utf8), Array("天気天気天".utf8),
    Array("\u{9B}2J".utf8), Array("tab\tnl\n".utf8), [0xF0, 0x9F, 0x98], Array("e\u{301}combo".utf8),
  ]

  static func snapshot(classes: [InterfaceClass], state: SessionState?) -> StatusSnapshot {
    let t0 = Timestamp(seconds: 1_800_000_000)
    var reports: [InterfaceReport] = []
    for (i, bytes) in names.enumerated() {
      let interfaceClass = classes[i % classes.count]
      reports.append(
        InterfaceReport(
          name: InterfaceName(bytes: bytes), index: Int32(i + 2), interfaceClass: interfaceClass, classBy: .kind,
          state: i % 3 == 0 ? .down : .up,
          counters: InterfaceCounters(
            TrafficCounts(rxBytes: UInt64(i) << 30, txBytes: UInt64(i * 77), rxPackets: 5, txPackets: 6)),
          width: .bits64, rate: TrafficRate(rxBytesPerSecond: Double(i) * 123_456.7, txBytesPerSecond: 99),
          ledger: LedgerTotals(TrafficCounts(rxBytes: UInt64(i) << 32, txBytes: 4), resets: UInt64(i), firstSeenAt: t0))
      )
    }
    var snapshot = StatusSnapshot(generatedAt: t0, source: .netlink, interfaces: reports)
    if let state {
      var record = SessionRecord(plan: state == .unlimited ? .premium : .free)
      let now: Timestamp
      switch state {
      case .none, .unlimited: now = t0
      case .active:
        record.window = SessionWindow.open(at: t0 - .seconds(100), lengths: .release)
        now = t0
      case .paused, .expired:
        record.window = SessionWindow.open(at: t0 - .seconds(1000), lengths: .release)
        now = t0
      }
      snapshot.session = SessionReport.make(
        record, now: now, tunnelUp: state == .expired, nextLengths: .release,
        tunnelTotals: TrafficCounts(rxBytes: 5000, txBytes: 600),
        lastStop: StopRecord(
          at: t0, interface: InterfaceName(bytes: names[1]), reason: .freeLimit, detail: "x\u{1B}[31m"))
      #expect(snapshot.session?.state == state)
    }
    return snapshot
  }

  static let sizes: [TerminalSize] = [
    TerminalSize(columns: 40, rows: 10), TerminalSize(columns: 60, rows: 15), TerminalSize(columns: 80, rows: 24),
    TerminalSize(columns: 120, rows: 40), TerminalSize(columns: 250, rows: 70), TerminalSize(columns: 41, rows: 70),
    TerminalSize(columns: 250, rows: 10),
  ]

  @Test(
    "no raw control byte reaches the screen and no line is wider than the terminal",
    arguments: [
      [InterfaceClass.tunnel], [.tunnel, .wifi, .cellular], InterfaceClass.allCases, [.other, .loopback],
    ])
  func fits(classes: [InterfaceClass]) throws {
    var history = RateHistory()
    for state in [nil] + SessionState.allCases.map(Optional.some) {
      let snapshot = Self.snapshot(classes: classes, state: state)
      history.record(snapshot)
      for size in Self.sizes {
        for viewState in [WatchViewState(), WatchViewState(classFilter: classes[0], bits: true, showHelp: true)] {
          let lines = WatchScreen.render(
            snapshot, history: history, state: viewState, size: size, options: DisplayOptions(color: false))
          #expect(lines.count <= size.rows, "\(size) \(String(describing: state)): \(lines.count) lines")
          for line in lines {
            #expect(TerminalText.width(line) <= size.columns, "\(size): '\(line)'")
            for scalar in line.unicodeScalars {
              #expect(
                !TerminalText.isUnsafe(scalar), "\(size): unsafe U+\(String(scalar.value, radix: 16)) in '\(line)'")
            }
          }
          // The estimate note survives every size.
          #expect(lines.last?.hasPrefix("≈") == true, "\(size)")
        }
      }
    }
  }

  @Test("with colour, the only escapes are SGR sequences, and stripping them gives the plain screen")
  func colourOnlyAddsSGR() {
    let snapshot = Self.snapshot(classes: InterfaceClass.allCases, state: .active)
    let size = TerminalSize(columns: 100, rows: 30)
    let plain = WatchScreen.render(
      snapshot, history: RateHistory(), state: WatchViewState(), size: size, options: DisplayOptions(color: false))
    let coloured = WatchScreen.render(
      snapshot, history: RateHistory(), state: WatchViewState(), size: size, options: DisplayOptions(color: true))
    #expect(coloured.map { $0.replacing(/\x1B\[[0-9;]*m/, with: "") } == plain)
    for line in coloured {
      #expect(line.replacing(/\x1B\[[0-9;]*m/, with: "").unicodeScalars.allSatisfy { !TerminalText.isUnsafe($0) })
    }
  }

  @Test("tunnel first, the session line, the countdown, and columns dropped in order when narrow")
  func layout() throws {
    let snapshot = Self.snapshot(classes: [.wifi, .tunnel], state: .active)
    let wide = WatchScreen.render(
      snapshot, history: RateHistory(), state: WatchViewState(), size: TerminalSize(columns: 160, rows: 40),
      options: DisplayOptions(color: false))
    #expect(wide[1].contains("active") && wide[1].contains("13:20 left"))
    let header = try #require(wide.first { $0.hasPrefix("INTERFACE") })
    for column in ["STATE", "RX/S", "TX/S", "TOTAL RX", "TOTAL TX", "RESETS", "RECENT"] {
      #expect(header.contains(column), "\(column) missing at 160 columns")
    }
    let tunnelLine = try #require(wide.firstIndex { $0.hasPrefix("tunnel") })
    let wifiLine = try #require(wide.firstIndex { $0.hasPrefix("wifi") })
    #expect(tunnelLine < wifiLine)
    let narrow = WatchScreen.render(
      snapshot, history: RateHistory(), state: WatchViewState(), size: TerminalSize(columns: 40, rows: 40),
      options: DisplayOptions(color: false)
    )
    let narrowHeader = try #require(narrow.first { $0.hasPrefix("INTERFACE") })
    #expect(narrowHeader.contains("RX/S"), "rates are the last to go: \(narrowHeader)")
    #expect(!narrowHeader.contains("RESETS"))
    let filtered = WatchScreen.render(
      snapshot, history: RateHistory(), state: WatchViewState(classFilter: .wifi),
      size: TerminalSize(columns: 120, rows: 40), options: DisplayOptions(color: false))
    #expect(!filtered.contains { $0.hasPrefix("tunnel") })
    #expect(filtered.contains { $0.hasPrefix("wifi") })
  }

  @Test("sparklines keep a recreated interface's history, scale to their peak, and forget what is gone")
  func sparklines() {
    var history = RateHistory(capacity: 5)
    func snap(_ rate: Double?, index: Int32) -> StatusSnapshot {
      let reports =
        rate.map {
          [
            InterfaceReport(
              name: InterfaceName("tun0"), index: index, interfaceClass: .tunnel, classBy: .kind, state: .up,
              counters: InterfaceCounters(.zero), width: .bits64,
              rate: TrafficRate(rxBytesPerSecond: $0, txBytesPerSecond: 0))
          ]
        } ?? []
      return StatusSnapshot(generatedAt: Timestamp(seconds: 0), source: .netlink, interfaces: reports)
    }
    history.record(snap(10, index: 4))
    history.record(snap(70, index: 4))
    history.record(snap(35, index: 9))  // recreated: a new ifindex, same name, same line
    #expect(history.sparkline(for: InterfaceName("tun0"), width: 4) == " ▂█▅")
    for _ in 0..<5 { history.record(snap(nil, index: 0)) }
    #expect(history.line(for: InterfaceName("tun0")).isEmpty)
  }

  @Test("plain lines for pipes: one per interface, no escape codes")
  func plain() {
    let snapshot = Self.snapshot(classes: [.tunnel], state: .paused)
    let lines = WatchScreen.plainLines(snapshot, options: DisplayOptions())
    #expect(lines.count == Self.names.count + 1)
    for line in lines {
      #expect(line.unicodeScalars.allSatisfy { !TerminalText.isUnsafe($0) })
      #expect(!line.contains("\u{1B}"))
    }
  }
}
