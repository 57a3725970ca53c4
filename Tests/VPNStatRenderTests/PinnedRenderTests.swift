import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// What `watch`, `status`, `history --svg` and the JSON documents print, pinned byte for byte
/// (`Tests/Pinned`) across every size, class mix, session state, option and hostile name the
/// other render tests use: the long renderers were split into pieces, and the JSON writers
/// given one field helper, without changing a byte.
struct PinnedRenderTests {
  static let now = Timestamp(seconds: 1_800_000_000)

  /// The watch fixture in each session state, with and without ledgers, with a WireGuard tunnel.
  static func snapshots() -> [(String, StatusSnapshot)] {
    var all: [(String, StatusSnapshot)] = []
    let mixes: [[InterfaceClass]] = [[.tunnel], [.wifi, .tunnel], InterfaceClass.allCases]
    for (m, classes) in mixes.enumerated() {
      for state in [nil] + SessionState.allCases.map(Optional.some) {
        var snapshot = WatchScreenTests.snapshot(classes: classes, state: state)
        all.append(("mix\(m) \(state.map { "\($0)" } ?? "no session") ledger", snapshot))
        for index in snapshot.interfaces.indices { snapshot.interfaces[index].ledger = nil }
        all.append(("mix\(m) \(state.map { "\($0)" } ?? "no session") no ledger", snapshot))
      }
    }
    let peers = [
      WireGuardRenderTests.peer(1, handshake: now - .seconds(30)),
      WireGuardRenderTests.peer(2, handshake: nil, rx: 0, tx: 0),
      WireGuardRenderTests.peer(3, handshake: now - .seconds(4000), rx: 1 << 40, tx: 7),
    ]
    all.append(("wireguard read", WireGuardRenderTests.snapshot(WireGuardRenderTests.read(peers))))
    all.append(
      ("wireguard many", WireGuardRenderTests.snapshot(WireGuardRenderTests.read((1...9).map { peer($0) }))))
    let denied = WireGuardRenderTests.snapshot(
      WireGuardStatus(evidence: .wireguardGo, reading: .failure(.notPermitted("runs as \u{1B}[2J another user"))))
    all.append(("wireguard denied", denied))
    let slow = WireGuardRenderTests.snapshot(
      WireGuardStatus(evidence: .kind, reading: .failure(.timedOut(.milliseconds(200)))))
    all.append(("wireguard timed out", slow))
    return all
  }

  static func peer(_ byte: UInt8) -> WireGuardPeer {
    WireGuardRenderTests.peer(byte, handshake: now - .seconds(Int64(byte) * 50))
  }

  @Test("watch: the screen of every fixture, size and view state is the pinned one")
  func watchScreen() {
    var cases: [(String, [UInt8])] = []
    let views: [(String, WatchViewState)] = [
      ("default", WatchViewState()),
      ("help bits filtered", WatchViewState(classFilter: .tunnel, bits: true, showHelp: true, interval: .seconds(2))),
      ("wifi 250ms", WatchViewState(classFilter: .wifi, interval: .milliseconds(250))),
    ]
    let options: [(String, DisplayOptions)] = [
      ("plain", DisplayOptions()), ("colour", DisplayOptions(color: true)), ("ascii", DisplayOptions(ascii: true)),
    ]
    for (label, snapshot) in Self.snapshots() {
      var history = RateHistory()
      history.record(snapshot)
      history.record(snapshot)
      for size in WatchScreenTests.sizes + [TerminalSize(columns: 1, rows: 1), TerminalSize(columns: 20, rows: 3)] {
        for (viewName, view) in views {
          for (optionName, display) in options {
            let lines = WatchScreen.render(snapshot, history: history, state: view, size: size, options: display)
            cases.append(
              (
                "\(label) \(size.columns)x\(size.rows) \(viewName) \(optionName)",
                Array(lines.joined(separator: "\n").utf8)
              ))
          }
        }
      }
      cases.append(
        (
          "\(label) plain lines",
          Array(WatchScreen.plainLines(snapshot, options: DisplayOptions()).joined(separator: "\n").utf8)
        ))
    }
    PinnedOutput.expect(cases, named: "watch-screen.txt")
  }

  @Test("status: the table of every fixture, in every option, is the pinned one")
  func statusTable() {
    var cases: [(String, [UInt8])] = []
    let options: [(String, DisplayOptions)] = [
      ("plain", DisplayOptions()), ("colour", DisplayOptions(color: true)), ("ascii", DisplayOptions(ascii: true)),
      ("bytes", DisplayOptions(rawBytes: true)), ("bits si", DisplayOptions(bits: true, units: .si)),
    ]
    for (label, snapshot) in Self.snapshots() + Self.managed() {
      for (optionName, display) in options {
        cases.append(("\(label) \(optionName)", Array(StatusTable.render(snapshot, options: display).utf8)))
      }
    }
    var empty = StatusSnapshot(generatedAt: Self.now, source: .sysfs, interfaces: [])
    empty.fallbackReason = "netlink refused"
    empty.warnings = ["a \u{1B}[31m warning"]
    cases.append(("empty", Array(StatusTable.render(empty, options: DisplayOptions()).utf8)))
    PinnedOutput.expect(cases, named: "status-table.txt")
  }

  /// Tunnels with managers, a data cap and the usage in the session.
  static func managed() -> [(String, StatusSnapshot)] {
    var snapshot = WatchScreenTests.snapshot(classes: [.tunnel, .ethernet], state: .active)
    snapshot.interfaces[0].manager = TunnelManager(
      kind: .wgQuick, id: "/etc/wireguard/wg0.conf", foundBy: .kind, evidence: "wg0 is a WireGuard device")
    snapshot.interfaces[1].manager = TunnelManager(
      kind: .none, id: nil, foundBy: .nothing, evidence: "no manager \u{1B}[2J found")
    let cap = DataCap(limitBytes: 4 << 30, period: UsagePeriod(.month, monthStartDay: 15))
    snapshot.session?.dataCap = cap.status(
      used: TrafficCounts(rxBytes: 3 << 30, txBytes: 12345), at: now, in: FixedOffsetCalendar.utc)
    snapshot.session?.usage = TrafficCounts(rxBytes: 123_456_789, txBytes: 42)
    snapshot.session?.manager = snapshot.interfaces[0].manager
    snapshot.problems = [SampleProblem(name: InterfaceName(bytes: [0x61, 0xFF]), message: "gone \u{1B}[2J")]
    snapshot.warnings = ["w\u{202E}"]
    snapshot.fallbackReason = "netlink: \u{1B}"
    var premium = snapshot
    premium.session?.plan = .premium
    return [("managed", snapshot), ("managed premium", premium)]
  }

  @Test("JSON: status, session, alert and connect documents are the pinned bytes")
  func jsonDocuments() throws {
    var cases: [(String, [UInt8])] = []
    for (label, snapshot) in Self.snapshots() + Self.managed() {
      cases.append(("status \(label)", StatusJSON.render(snapshot)))
      if let session = snapshot.session {
        cases.append(("session \(label)", SessionJSON.render(session, generatedAt: Self.now)))
      }
    }
    let cap = DataCap(limitBytes: 10_000_000_000, period: UsagePeriod(.week))
    for used in [TrafficCounts(), TrafficCounts(rxBytes: 9_999_999_999, txBytes: 1), TrafficCounts(rxBytes: 1 << 40)] {
      let status = cap.status(used: used, at: Self.now, in: FixedOffsetCalendar.utc)
      cases.append(
        (
          "alert \(used.bytes)",
          AlertJSON.render(
            status, names: [InterfaceName("wg0"), InterfaceName(bytes: [0x22, 0x5C, 0xFF])], classes: [.tunnel, .wifi],
            generatedAt: Self.now)
        ))
    }
    let manager = TunnelManager(kind: .networkManager, id: "d1e2", foundBy: .kind, evidence: "nm \"says\" so")
    let reports = [
      TunnelControlReport(command: .connect, name: "work", outcome: .notAllowed, detail: "paused"),
      TunnelControlReport(
        command: .connect, name: "wg\u{1B}0", manager: manager, device: InterfaceName("wg0"), startedAt: Self.now,
        acceptedAt: Self.now + .milliseconds(120), confirmedAt: Self.now + .milliseconds(1500),
        elapsed: .milliseconds(1500), waitedFor: [.linkRunning(InterfaceName("wg0")), .wireGuardHandshake(nil)],
        timeout: .seconds(30), outcome: .connected),
      TunnelControlReport(
        command: .disconnect, name: "wg0", device: InterfaceName(bytes: [0xFF]), startedAt: Self.now,
        elapsed: .nanoseconds(1), outcome: .disconnected, recorded: true),
      TunnelControlReport(command: .disconnect, name: "x", outcome: .stillUp, recorded: false),
    ]
    for report in reports {
      cases.append(
        ("connect \(report.name) \(report.outcome)", TunnelControlJSON.render(report, generatedAt: Self.now)))
    }
    PinnedOutput.expect(cases, named: "json-documents.txt")
  }
}

extension ChartTests {
  @Test("history: the SVG and the JSON of a simulated month, with a session and with a cap, are the pinned ones")
  func pinnedHistory() throws {
    var cases: [(String, [UInt8])] = []
    let session = SessionReport.make(
      SessionRecord(window: SessionWindow.open(at: now - .seconds(600), lengths: .release)), now: now, tunnelUp: true,
      nextLengths: .release, tunnelTotals: .zero, lastStop: nil)
    let panels = try simulatedMonth()
    for (label, session) in [("no session", nil), ("session", session)] {
      for display in [DisplayOptions(calendar: utc), DisplayOptions(rawBytes: true, bits: true, calendar: utc)] {
        let svg = HistorySVG.render(panels, session: session, options: display, generatedAt: now)
        cases.append(("svg \(label) bits=\(display.bits)", Array(svg.utf8)))
      }
    }
    for panel in panels { cases.append(("json \(panel.granularity)", HistoryJSON.render(panel))) }
    let capped = try simulatedMonth(monthStartDay: 15)
    for (used, period) in [(5 << 30, PeriodLength.month), (1 << 20, .month), (3 << 30, .day), (1 << 30, .week)] {
      let cap = DataCap(limitBytes: 4 << 30, period: UsagePeriod(period, monthStartDay: 15))
      let status = cap.status(used: TrafficCounts(rxBytes: UInt64(used)), at: now, in: utc)
      let session = SessionReport.make(
        SessionRecord(plan: .premium, dataCap: cap), now: now, tunnelUp: false, nextLengths: .release,
        tunnelTotals: .zero, lastStop: nil, dataCap: status)
      let svg = HistorySVG.render(capped, session: session, options: DisplayOptions(calendar: utc), generatedAt: now)
      cases.append(("svg cap \(used) \(period)", Array(svg.utf8)))
    }
    let empty = TrafficHistory.make(
      buckets: [], granularity: .day, count: 30, now: now, grouping: .class, selection: InterfaceSelection(),
      calendar: utc)
    cases.append(
      (
        "svg empty",
        Array(HistorySVG.render([empty], session: nil, options: DisplayOptions(calendar: utc), generatedAt: now).utf8)
      ))
    cases.append(("json empty", HistoryJSON.render(empty)))
    PinnedOutput.expect(cases, named: "history.txt")
  }
}
