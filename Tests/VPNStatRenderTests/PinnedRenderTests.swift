import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// What `watch`, `status`, `history --svg` and the JSON documents print, pinned byte for byte,
/// one file per case (`Tests/Pinned/FOLDER/CASE.txt`, see `PinnedCases`): the long renderers were
/// split into pieces, and the JSON writers given one field helper, without changing a byte.
///
/// Each test still enumerates the whole matrix the other render tests use (every fixture, size,
/// view, option), but pins a few cases a person can review, chosen so that each kind of input is
/// in at least one of them:
/// - fixtures: the three class mixes, each session state (no database, none, active, paused,
///   expired, unlimited), with and without ledgers; every fixture carries the eleven hostile
///   names (escapes, C1, bidi, invalid UTF-8, wide, combining, tab and newline), counts past
///   32 bits and the estimate notes; the WireGuard tunnel read (a handshake an hour old, one never,
///   a TiB of transfer), with nine peers, refused with a hostile reason, and timed out; the managed
///   tunnels with a data cap, a vanished interface and hostile warnings; no interfaces at all;
/// - watch: each view (default; help, bits, class filter and 2 s; Wi-Fi filter at 250 ms), each
///   option (plain, colour, ASCII), every terminal size (40×10, 60×15, 80×24, 120×40, 250×70,
///   41×70 narrow and tall, 250×10 wide and short, 20×3, 1×1), and the plain lines (no terminal);
/// - status: every option (plain, colour, ASCII, raw bytes, bits with SI units) on the fixture
///   with every class, the other fixtures once each;
/// - JSON: status with and without session and ledgers, the session document in each state, the
///   WireGuard tunnel read, refused and timed out, the managed tunnels, every alert and connect
///   document;
/// - history: the SVG without and with a session (bytes; raw bits), over a monthly cap and under a
///   weekly one, empty; the JSON of a day and a month panel, and of no buckets.
///
/// The rest of the matrix runs the same code at other sizes, options and mixes. A deliberate
/// change: `VPNSTAT_PIN=record swift test --filter PinnedRenderTests` rewrites these pins (every
/// pin: `--filter '[Pp]inned'`), and `git diff Tests/Pinned` shows it case by case.
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

  static let watchCases = [
    "mix2 active ledger 120x40 default plain",  // every class and hostile name, wide
    "mix2 active ledger 250x70 default ascii",
    "mix2 active ledger 80x24 help bits filtered colour",
    "mix2 active ledger 60x15 wifi 250ms ascii",
    "mix2 active ledger 41x70 default plain",  // names cut, columns dropped
    "mix2 active ledger 40x10 default colour",
    "mix2 active ledger 250x10 default plain",  // rows left out
    "mix2 active ledger 20x3 default plain",
    "mix2 active ledger 1x1 default plain",
    "mix0 no session ledger 80x24 default plain",
    "mix1 no session no ledger 120x40 default plain",
    "mix0 none ledger 80x24 default plain",
    "mix0 paused no ledger 80x24 default plain",
    "mix0 expired ledger 80x24 default colour",
    "mix1 unlimited ledger 120x40 help bits filtered plain",
    "wireguard read 120x40 default plain",
    "wireguard many 80x24 default plain",
    "wireguard denied 80x24 default colour",
    "wireguard timed out 60x15 default ascii",
    "mix2 active ledger plain lines",
    "mix0 no session no ledger plain lines",
    "wireguard read plain lines",
  ]

  @Test("watch: the screens of the pinned fixtures, sizes and view states are the pinned ones")
  func watchScreen() {
    var pins = PinnedCases("watch-screen", Self.watchCases)
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
            let name = "\(label) \(size.columns)x\(size.rows) \(viewName) \(optionName)"
            guard pins.wants(name) else { continue }
            let lines = WatchScreen.render(snapshot, history: history, state: view, size: size, options: display)
            pins.add(name, lines.joined(separator: "\n"))
          }
        }
      }
      pins.add(
        "\(label) plain lines", WatchScreen.plainLines(snapshot, options: DisplayOptions()).joined(separator: "\n"))
    }
    pins.expect()
  }

  static let statusCases = [
    "mix2 active ledger plain", "mix2 active ledger colour", "mix2 active ledger ascii", "mix2 active ledger bytes",
    "mix2 active ledger bits si", "mix0 no session no ledger plain", "mix1 none ledger plain",
    "mix1 paused no ledger plain", "mix0 expired ledger plain", "mix0 unlimited no ledger plain",
    "wireguard read plain", "wireguard many bytes", "wireguard denied colour", "wireguard timed out bits si",
    "managed plain", "managed premium ascii", "empty",
  ]

  @Test("status: the tables of the pinned fixtures and options are the pinned ones")
  func statusTable() {
    var pins = PinnedCases("status-table", Self.statusCases)
    let options: [(String, DisplayOptions)] = [
      ("plain", DisplayOptions()), ("colour", DisplayOptions(color: true)), ("ascii", DisplayOptions(ascii: true)),
      ("bytes", DisplayOptions(rawBytes: true)), ("bits si", DisplayOptions(bits: true, units: .si)),
    ]
    for (label, snapshot) in Self.snapshots() + Self.managed() {
      for (optionName, display) in options {
        pins.add("\(label) \(optionName)", StatusTable.render(snapshot, options: display))
      }
    }
    var empty = StatusSnapshot(generatedAt: Self.now, source: .sysfs, interfaces: [])
    empty.fallbackReason = "netlink refused"
    empty.warnings = ["a \u{1B}[31m warning"]
    pins.add("empty", StatusTable.render(empty, options: DisplayOptions()))
    pins.expect()
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

  static let jsonCases = [
    "status mix2 active ledger", "status mix0 no session no ledger", "session mix0 none ledger",
    "session mix0 active ledger", "session mix0 paused ledger", "session mix0 expired ledger",
    "session mix0 unlimited ledger", "status wireguard read", "status wireguard denied", "status wireguard timed out",
    "status managed", "session managed", "session managed premium", "alert 0", "alert 10000000000",
    "alert 1099511627776", "connect work notAllowed", "connect wg\u{1B}0 connected", "connect wg0 disconnected",
    "connect x stillUp",
  ]

  @Test("JSON: the pinned status, session, alert and connect documents are the pinned bytes")
  func jsonDocuments() throws {
    var pins = PinnedCases("json-documents", Self.jsonCases)
    for (label, snapshot) in Self.snapshots() + Self.managed() {
      pins.add("status \(label)", StatusJSON.render(snapshot))
      if let session = snapshot.session {
        pins.add("session \(label)", SessionJSON.render(session, generatedAt: Self.now))
      }
    }
    let cap = DataCap(limitBytes: 10_000_000_000, period: UsagePeriod(.week))
    for used in [TrafficCounts(), TrafficCounts(rxBytes: 9_999_999_999, txBytes: 1), TrafficCounts(rxBytes: 1 << 40)] {
      let status = cap.status(used: used, at: Self.now, in: FixedOffsetCalendar.utc)
      pins.add(
        "alert \(used.bytes)",
        AlertJSON.render(
          status, names: [InterfaceName("wg0"), InterfaceName(bytes: [0x22, 0x5C, 0xFF])], classes: [.tunnel, .wifi],
          generatedAt: Self.now))
    }
    let manager = TunnelManager(kind: .networkManager, id: "d1e2", foundBy: .kind, evidence: "nm \"says\" so")
    let reports = [
      TunnelControlReport(
        command: .connect(waitedFor: [], missing: nil), name: "work", outcome: .notAllowed, detail: "paused"),
      TunnelControlReport(
        command: .connect(waitedFor: [.linkRunning(InterfaceName("wg0")), .wireGuardHandshake(nil)], missing: nil),
        name: "wg\u{1B}0", manager: manager, device: InterfaceName("wg0"), startedAt: Self.now,
        acceptedAt: Self.now + .milliseconds(120), confirmedAt: Self.now + .milliseconds(1500),
        elapsed: .milliseconds(1500), timeout: .seconds(30), outcome: .connected),
      TunnelControlReport(
        command: .disconnect(recorded: true), name: "wg0", device: InterfaceName(bytes: [0xFF]), startedAt: Self.now,
        elapsed: .nanoseconds(1), outcome: .disconnected),
      TunnelControlReport(command: .disconnect(recorded: false), name: "x", outcome: .stillUp),
    ]
    for report in reports {
      pins.add("connect \(report.name) \(report.outcome)", TunnelControlJSON.render(report, generatedAt: Self.now))
    }
    pins.expect()
  }

  static let historyCases = [
    "svg no session bits=false", "svg session bits=true", "svg cap 5368709120 month", "svg cap 1073741824 week",
    "svg empty", "json day", "json month", "json empty",
  ]

  @Test("history: the pinned SVGs and JSON of a simulated month, with a session and with a cap, are the pinned ones")
  func history() throws {
    var pins = PinnedCases("history", Self.historyCases)
    let chart = ChartTests()
    let (now, utc) = (chart.now, chart.utc)
    let session = SessionReport.make(
      SessionRecord(window: SessionWindow.open(at: now - .seconds(600), lengths: .release)), now: now, tunnelUp: true,
      nextLengths: .release, tunnelTotals: .zero, lastStop: nil)
    let panels = try chart.simulatedMonth()
    for (label, session) in [("no session", nil), ("session", session)] {
      for display in [DisplayOptions(calendar: utc), DisplayOptions(rawBytes: true, bits: true, calendar: utc)] {
        let svg = HistorySVG.render(panels, session: session, options: display, generatedAt: now)
        pins.add("svg \(label) bits=\(display.bits)", svg)
      }
    }
    for panel in panels { pins.add("json \(panel.granularity)", HistoryJSON.render(panel)) }
    let capped = try chart.simulatedMonth(monthStartDay: 15)
    for (used, period) in [(5 << 30, PeriodLength.month), (1 << 20, .month), (3 << 30, .day), (1 << 30, .week)] {
      let cap = DataCap(limitBytes: 4 << 30, period: UsagePeriod(period, monthStartDay: 15))
      let status = cap.status(used: TrafficCounts(rxBytes: UInt64(used)), at: now, in: utc)
      let session = SessionReport.make(
        SessionRecord(plan: .premium, dataCap: cap), now: now, tunnelUp: false, nextLengths: .release,
        tunnelTotals: .zero, lastStop: nil, dataCap: status)
      let svg = HistorySVG.render(capped, session: session, options: DisplayOptions(calendar: utc), generatedAt: now)
      pins.add("svg cap \(used) \(period)", svg)
    }
    let empty = TrafficHistory.make(
      buckets: [], granularity: .day, count: 30, now: now, grouping: .class, selection: InterfaceSelection(),
      calendar: utc)
    pins.add(
      "svg empty", HistorySVG.render([empty], session: nil, options: DisplayOptions(calendar: utc), generatedAt: now))
    pins.add("json empty", HistoryJSON.render(empty))
    pins.expect()
  }
}

/// What a pinned test says when output differs: a short diff a person can read, not the file.
struct PinnedOutputTests {
  static func text(_ lines: [String]) -> [UInt8] { Array(lines.joined(separator: "\n").utf8) + [0x0A] }

  @Test("a difference is shown as one diff hunk: three lines of context, the lines, the column; escapes visible")
  func excerpt() {
    let pinned = (1...20).map { "line \($0)" }
    var now = pinned
    now[9] = "line 10 \u{1B}[31mchanged"
    let expected = """
      --- pinned
      +++ now
      @@ -7,7 +7,7 @@ (first at column 8)
       line 7
       line 8
       line 9
      -line 10
      +line 10 \\u{1B}[31mchanged
       line 11
       line 12
       line 13
      """
    #expect(PinnedOutput.excerpt(pinned: Self.text(pinned), now: Self.text(now)) == expected)
  }

  @Test("lines added at the end, a long line cut around its difference, and only the last newline differing")
  func excerptEdges() {
    let added = PinnedOutput.excerpt(pinned: Self.text(["a", "b"]), now: Self.text(["a", "b", "c", "d"]))
    #expect(added == "--- pinned\n+++ now\n@@ -1,2 +1,4 @@\n a\n b\n+c\n+d")
    let long = String(repeating: "x", count: 500)
    let cut = PinnedOutput.excerpt(pinned: Self.text([long + "1" + long]), now: Self.text([long + "2" + long]))
    #expect(cut.contains("(first at column 501)"))
    #expect(cut.contains("-…" + String(repeating: "x", count: 60) + "1" + String(repeating: "x", count: 99) + "…"))
    #expect(cut.split(separator: "\n").allSatisfy { $0.count < 170 })
    #expect(
      PinnedOutput.excerpt(pinned: Array("a\nb".utf8), now: Array("a\nb\n".utf8))
        == "the same lines; only the newline at the end differs")
    // Canonically equivalent text is still a difference: é (U+00E9) and e with U+0301.
    #expect(PinnedOutput.excerpt(pinned: Self.text(["\u{E9}"]), now: Self.text(["e\u{301}"])).contains("-\u{E9}"))
  }

  @Test("the pins stay reviewable: every file under 200 lines, all of Tests/Pinned under 300 KB")
  func reviewable() throws {
    let root = PinnedOutput.directory
    let files = try FileManager.default.subpathsOfDirectory(atPath: root.path).filter { $0.hasSuffix(".txt") }
    #expect(!files.isEmpty, "no pins under \(root.path)")
    var total = 0
    for file in files {
      let bytes = try #require(FileManager.default.contents(atPath: root.appendingPathComponent(file).path))
      total += bytes.count
      let lines = bytes.filter { $0 == 0x0A }.count
      #expect(lines < 200, "\(file): \(lines) lines")
    }
    #expect(total < 300_000, "Tests/Pinned: \(total) bytes")
  }

  @Test("a case's file name: lower case, every run of other characters one dash")
  func fileNames() {
    #expect(PinnedOutput.fileName("connect wg\u{1B}0 connected") == "connect-wg-0-connected.txt")
    #expect(PinnedOutput.fileName("interval 6, nothing new") == "interval-6-nothing-new.txt")
    #expect(PinnedOutput.fileName("svg no session bits=false") == "svg-no-session-bits-false.txt")
    #expect(PinnedOutput.fileName("connect work notAllowed") == "connect-work-notallowed.txt")
    #expect(PinnedOutput.fileName(" 天気 ") == "case.txt")
  }
}
