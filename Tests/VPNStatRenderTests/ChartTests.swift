import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatSimulation
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The pictures `history` draws: the SVG document (well-formed XML, bars where the traffic is,
/// the session and the cap marked, names escaped), the terminal's bar chart, the y axis' scale.
struct ChartTests {
  let utc = FixedOffsetCalendar.utc
  /// The end of the simulated month: 2027-01-15 08:00 UTC.
  let now = Timestamp(seconds: 1_800_000_000)

  /// A month of simulated traffic (the benchmark's generator, hourly steps, busier by day) as
  /// the hours, days and months panels.
  func simulatedMonth(monthStartDay: Int = 1) throws -> [TrafficHistory] {
    let directory = try TemporaryDirectory("chart")
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: utc))
    var simulation = SimulatedHistory()
    simulation.fineSpan = 0
    simulation.step = 3600
    simulation.rate = { time in (time / 3600 % 24) < 8 ? 2_000 : 50_000 }
    try simulation.record(into: store, from: now - .seconds(30 * 86_400), duration: 30 * 86_400)
    return try [(TrafficGranularity.hour, 24), (.day, 30), (.month, 12)].map { granularity, count in
      let rows = HistoryRows(granularity, monthStartDay: monthStartDay)
      let from = rows.start(ofLast: count, at: now, in: utc)
      return TrafficHistory.make(
        buckets: try store.buckets(rows.source, since: from), rows: rows, from: from, until: nil, now: now,
        grouping: .class, selection: InterfaceSelection(), calendar: utc)
    }
  }

  /// Parses `svg` with Python's XML parser; returns its element names, in document order.
  func elements(_ svg: String) throws -> [String] {
    let result = try python(
      "import sys, xml.etree.ElementTree as ET\nroot = ET.fromstring(sys.stdin.buffer.read())\n"
        + "print(root.tag.split('}')[1], root.get('width'), root.get('height'))\n"
        + "for e in root.iter(): print(e.tag.split('}')[1])", input: Data(svg.utf8))
    try #require(result.status == 0, "not well-formed XML: \(result.errors)")
    return result.output.split(separator: "\n").map(String.init)
  }

  @Test(
    "the SVG of a simulated month is well-formed, sized, with a bar per bucket of each class and axis labels in units")
  func simulatedMonthPicture() throws {
    let panels = try simulatedMonth()
    let session = SessionReport.make(
      SessionRecord(window: SessionWindow.open(at: now - .seconds(600), lengths: .release)), now: now, tunnelUp: true,
      nextLengths: .release, tunnelTotals: .zero, lastStop: nil)
    let svg = HistorySVG.render(panels, session: session, options: DisplayOptions(calendar: utc), generatedAt: now)
    let names = try elements(svg)
    // Three panels fit a laptop's browser window (1280 × 720): 952 px tall was cut off in 900.
    #expect(names.first == "svg 960 700")
    // Bars: 24 hours + 30 days (+ the current, partial ones) + 2 months, for two classes,
    // each with its tooltip.
    let bars = svg.components(separatedBy: "<title>tunnel ").count - 1
    #expect(bars >= 24 + 30 + 2, "\(bars) tunnel bars")
    #expect(svg.components(separatedBy: "<title>ethernet ").count - 1 == bars)
    // The y axes in IEC units; the x axes in hours, days and months.
    #expect(svg.contains(">0 B</text>"))
    #expect(svg.contains(" GiB</text>") || svg.contains(" MiB</text>"))
    #expect(svg.contains(">08:00</text>") || svg.contains(">07:00</text>"))
    #expect(svg.contains(">2027-01</text>") && svg.contains(">2026-12</text>"))
    // The session: its headline, and its window shaded on the hours.
    #expect(svg.contains("session: free plan · active"))
    #expect(svg.contains(">session</text>") && svg.contains(">pause</text>"))
    #expect(svg.contains("every figure is an estimate"))
  }

  @Test("a data cap is drawn on the panel of its period, with its state in the header")
  func capLine() throws {
    let panels = try simulatedMonth(monthStartDay: 15)
    let cap = DataCap(limitBytes: 4 << 30, period: UsagePeriod(.month, monthStartDay: 15))
    let status = cap.status(used: TrafficCounts(rxBytes: 5 << 30), at: now, in: utc)
    let session = SessionReport.make(
      SessionRecord(plan: .premium, dataCap: cap), now: now, tunnelUp: false, nextLengths: .release,
      tunnelTotals: .zero, lastStop: nil, dataCap: status)
    let svg = HistorySVG.render(panels, session: session, options: DisplayOptions(calendar: utc), generatedAt: now)
    _ = try elements(svg)
    #expect(svg.components(separatedBy: "stroke-dasharray").count - 1 == 1, "one cap line, on the months")
    #expect(svg.contains(">data cap 4.00 GiB</text>"))
    #expect(svg.contains("data cap reached: ≈ 5.00 GiB of 4.00 GiB this month from the 15th (125 %)"))
    #expect(svg.contains("months (from the 15th)"))
    // The cap is what refuses connecting, until its period ends: the headline says so.
    #expect(svg.contains("session: premium plan · data cap reached: connecting is refused until"))
  }

  @Test("interface names, whatever their bytes, are escaped: the document stays well-formed")
  func hostileNames() throws {
    let names: [[UInt8]] = [Array("<svg>&amp;".utf8), Array("e\u{1B}[2J\"'".utf8), [0x62, 0xFF, 0x00]]
    let series = names.enumerated().map { i, bytes in
      TrafficHistory.Series(
        interfaceClass: .tunnel, name: InterfaceName(bytes: bytes),
        rows: [
          TrafficHistory.Row(start: 3600 * Int64(i), end: 3600 * Int64(i + 1), traffic: TrafficCounts(rxBytes: 100))
        ],
        current: nil)
    }
    var history = TrafficHistory.make(
      buckets: [], granularity: .hour, count: 3, now: Timestamp(seconds: 3 * 3600 - 1), grouping: .interface,
      selection: InterfaceSelection(), calendar: utc)
    history.series = series
    let svg = HistorySVG.render([history], session: nil, options: DisplayOptions(calendar: utc), generatedAt: now)
    _ = try elements(svg)
    #expect(!svg.contains("<svg>&amp;"))
    #expect(svg.contains("&lt;svg&gt;&amp;amp;"))
    #expect(!svg.contains("\u{1B}"))
  }

  @Test("no traffic: the panel says so; an empty history still makes a valid document")
  func empty() throws {
    let history = TrafficHistory.make(
      buckets: [], granularity: .day, count: 30, now: now, grouping: .class, selection: InterfaceSelection(),
      calendar: utc)
    let svg = HistorySVG.render([history], session: nil, options: DisplayOptions(calendar: utc), generatedAt: now)
    _ = try elements(svg)
    #expect(svg.contains("no traffic recorded in this range"))
  }

  @Test(
    "the y axis: round steps in the unit of the labels, 3 to 6 of them, covering the peak",
    arguments: [
      (UInt64(3_435_973_837), false, UInt64(4 << 30), UInt64(1 << 30)),  // 3.2 GiB
      (734_003_200, false, 800 << 20, 200 << 20),  // 700 MiB
      (1, false, 1, 1), (0, false, 1, 1), (12_345, true, 15_000, 5000), (1023, false, 1500, 500),
      (UInt64.max, false, UInt64.max, 0),
    ])
  func scale(peak: UInt64, raw: Bool, top: UInt64, step: UInt64) {
    let (t, s) = HistorySVG.scale(peak, rawBytes: raw)
    #expect(t >= peak)
    if step > 0 {
      #expect(t == top, "top for \(peak)")
      #expect(s == step, "step for \(peak)")
    }
    #expect(t / max(s, 1) <= 6)
  }

  @Test("the terminal's bar chart: one column per bucket, received below sent, the peak on the axis, no line too wide")
  func terminalGraph() throws {
    let rows = (0..<30).map { i in
      TrafficHistory.Row(
        start: Int64(i) * 86_400, end: Int64(i + 1) * 86_400,
        traffic: TrafficCounts(rxBytes: UInt64(i) * 1000, txBytes: UInt64(i) * 1000))
    }
    var history = TrafficHistory.make(
      buckets: [], granularity: .day, count: 30, now: Timestamp(seconds: 30 * 86_400 - 1), grouping: .class,
      selection: InterfaceSelection(), calendar: utc)
    history.series = [TrafficHistory.Series(interfaceClass: .tunnel, name: nil, rows: rows, current: nil)]
    let text = HistoryGraph.render(
      history, options: DisplayOptions(rawBytes: true, calendar: utc), width: 60, height: 10)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    // (The estimate note under every history is as wide as the table view's.)
    #expect(
      lines.filter { !$0.contains("estimate") && !$0.contains("restart") }.allSatisfy { TerminalText.width($0) <= 60 },
      "\(text)")
    // The busiest column (the last) is full height: sent on top, received below, half each.
    let chart = lines.filter { $0.contains("┤") }
    #expect(chart.count == 10)
    #expect(chart.first?.hasPrefix("     ≈ 58000 ┤") == true, "\(chart.first ?? "")")
    #expect(chart.first?.last == "▒")
    #expect(chart.last?.last == "█")
    #expect(chart[4].last == "▒" && chart[5].last == "█")
    // The first bucket (no traffic) is empty; the axis labels start at the 1st.
    #expect(lines.contains { $0.hasPrefix("           0 └") })
    #expect(lines.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("01 ") })
    #expect(text.contains("█ received  ▒ sent  (per day, by day"))
  }
}
