import VPNStatModel

/// `vpnstat history --svg`: bar charts of the history as an SVG document — one panel per view
/// (hours, days, months), bars stacked by class (or interface), axes in the chosen units, the
/// session window and pause shaded where they fall, and the data cap drawn as a line on the panel
/// of its period. Written here, with no plotting dependency: bars, lines and text are all an SVG
/// needs, and every browser and image viewer reads it.
package enum HistorySVG {
  /// The document's geometry, in pixels: three panels fit in 960 × 700, so the whole picture
  /// shows in a laptop's browser window (1280 × 720 and up) without scrolling.
  static let width = 960
  static let headerHeight = 100
  static let panelHeight = 196
  static let bottomMargin = 12
  static let plotLeft = 96
  static let plotRight = 930
  /// Within a panel: its title, the plot, the tick labels under it.
  static let plotTop = 28
  static let plotBottom = 166

  /// The document's height for `panels` panels.
  static func height(panels: Int) -> Int { headerHeight + panels * panelHeight + bottomMargin }

  /// The colour of each class, and a palette for series grouped by interface.
  static func colour(_ interfaceClass: InterfaceClass) -> String {
    switch interfaceClass {
    case .tunnel: "#1f77b4"
    case .wifi: "#2ca02c"
    case .cellular: "#ff7f0e"
    case .ethernet: "#9467bd"
    case .loopback: "#7f7f7f"
    case .other: "#8c564b"
    }
  }
  static let palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

  /// The document for `panels` (each a history of one granularity), with the session window and
  /// the data cap from `session` when there is one.
  package static func render(
    _ panels: [TrafficHistory], session: SessionReport?, options: DisplayOptions, generatedAt: Timestamp
  ) -> String {
    let height = Self.height(panels: panels.count)
    var svg = """
      <?xml version="1.0" encoding="UTF-8"?>
      <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" \
      font-family="DejaVu Sans, Verdana, Arial, sans-serif" font-size="12" fill="#222222">
      <title>vpnstat history</title>
      <rect x="0" y="0" width="\(width)" height="\(height)" fill="#ffffff"/>
      <text x="24" y="30" font-size="20" font-weight="bold">vpnstat · traffic per \(panels.first?.grouping == .interface ? "interface" : "class")</text>
      <text x="24" y="48" fill="#555555">generated \(escape(generatedAt.localDateTime(in: options.calendar))) · ≈ every figure is an estimate from interface counters</text>

      """
    var line = 68
    if let session {
      let (text, colour) = sessionLine(session, options: options)
      svg += "<text x=\"24\" y=\"\(line)\" fill=\"\(colour)\">\(escape(text))</text>\n"
      line += 18
      if let cap = session.dataCap {
        svg +=
          "<text x=\"24\" y=\"\(line)\" fill=\"\(cap.reached ? "#c62828" : "#222222")\">"
          + escape(DataCapText.line(cap, options: options)) + "</text>\n"
      }
    }
    svg += legend(panels, window: session?.window != nil)
    for (i, panel) in panels.enumerated() {
      svg += "<g transform=\"translate(0,\(headerHeight + i * panelHeight))\">\n"
      svg += self.panel(panel, session: session, options: options)
      svg += "</g>\n"
    }
    svg += "</svg>\n"
    return svg
  }

  /// The session's headline and its colour: green while connecting is allowed, red when not.
  static func sessionLine(_ session: SessionReport, options: DisplayOptions) -> (String, String) {
    let text = SessionText.headline(session, calendar: options.calendar)
    return (text, session.canConnect ? "#2e7d32" : "#c62828")
  }

  /// A key of the series' colours in the top right corner, and of the session's shading under
  /// it when there is a window.
  static func legend(_ panels: [TrafficHistory], window: Bool) -> String {
    var out = ""
    if window {
      out += "<rect x=\"\(width - 190)\" y=\"42\" width=\"12\" height=\"12\" fill=\"#2e7d32\" fill-opacity=\"0.3\"/>"
      out += "<text x=\"\(width - 172)\" y=\"53\">session</text>"
      out += "<rect x=\"\(width - 100)\" y=\"42\" width=\"12\" height=\"12\" fill=\"#c62828\" fill-opacity=\"0.3\"/>"
      out += "<text x=\"\(width - 82)\" y=\"53\">pause</text>\n"
    }
    var keys: [(String, String)] = []
    for panel in panels {
      for (index, series) in panel.series.enumerated() {
        let key = (seriesName(series), seriesColour(series, index: index, panel: panel))
        if !keys.contains(where: { $0.0 == key.0 }) { keys.append(key) }
      }
    }
    var x = width - 24
    for (name, colour) in keys.reversed() {
      let label = escape(name)
      x -= 18 + 7 * name.count + 14
      out += "<rect x=\"\(x)\" y=\"22\" width=\"12\" height=\"12\" fill=\"\(colour)\"/>"
      out += "<text x=\"\(x + 18)\" y=\"33\">\(label)</text>\n"
    }
    return out
  }

  static func seriesName(_ series: TrafficHistory.Series) -> String {
    series.name.map { $0.terminalText } ?? series.interfaceClass.rawValue
  }

  static func seriesColour(_ series: TrafficHistory.Series, index: Int, panel: TrafficHistory) -> String {
    panel.grouping == .interface ? palette[index % palette.count] : colour(series.interfaceClass)
  }

  /// One chart: title, grid and y-axis labels, stacked bars, the session's shading, the cap line,
  /// the x-axis labels.
  static func panel(_ history: TrafficHistory, session: SessionReport?, options: DisplayOptions) -> String {
    var out =
      "<text x=\"\(plotLeft)\" y=\"20\" font-size=\"15\" font-weight=\"bold\">\(escape(title(history)))</text>\n"
    let capLimit = capLine(for: history, session: session)
    guard let plot = Plot(history, capLimit: capLimit, rawBytes: options.rawBytes) else {
      out +=
        "<rect x=\"\(plotLeft)\" y=\"\(plotTop)\" width=\"\(plotRight - plotLeft)\" height=\"\(plotBottom - plotTop)\" fill=\"none\" stroke=\"#cccccc\"/>\n"
      out +=
        "<text x=\"\((plotLeft + plotRight) / 2)\" y=\"\((plotTop + plotBottom) / 2)\" text-anchor=\"middle\" fill=\"#777777\">no traffic recorded in this range</text>\n"
      return out
    }
    out += grid(plot, options: options)
    if let window = session?.window { out += shading(window, plot) }
    out += bars(history, plot, options: options)
    if let capLimit { out += capLine(capLimit, plot, options: options) }
    out += axes(history, plot)
    return out
  }

  /// Where a panel's values and times fall: the time slots (every row of the range asked for,
  /// and any a series has besides), the y axis' top and step, and the mappings to x and y.
  struct Plot {
    /// Each slot's start and end.
    let bounds: [Int64: Int64]
    let slots: [Int64]
    /// A slot's position, by its start.
    let index: [Int64: Int]
    let top: UInt64
    let step: UInt64
    let slotWidth: Double

    /// nil when there is nothing to draw.
    init?(_ history: TrafficHistory, capLimit: UInt64?, rawBytes: Bool) {
      var bounds = HistorySVG.span(history)
      for series in history.series {
        for row in series.rows { bounds[row.start] = row.end }
      }
      let slots = bounds.keys.sorted()
      guard history.series.contains(where: { !$0.rows.isEmpty }), !slots.isEmpty else { return nil }
      var totals = [UInt64](repeating: 0, count: slots.count)
      let index = Dictionary(uniqueKeysWithValues: slots.enumerated().map { ($1, $0) })
      for series in history.series {
        for row in series.rows { totals[index[row.start]!] &+= row.traffic.bytes }
      }
      (top, step) = HistorySVG.scale(max(totals.max() ?? 0, capLimit ?? 0), rawBytes: rawBytes)
      self.bounds = bounds
      self.slots = slots
      self.index = index
      slotWidth = Double(plotRight - plotLeft) / Double(slots.count)
    }

    func y(_ value: UInt64) -> Double {
      Double(plotBottom) - Double(value) / Double(top) * Double(plotBottom - plotTop)
    }

    /// Time to x: each slot a fixed width, time linear within it (days and months vary in length).
    func x(_ time: Int64) -> Double {
      if time <= slots[0] { return Double(plotLeft) }
      guard let i = slots.lastIndex(where: { $0 <= time }) else { return Double(plotLeft) }
      let end = bounds[slots[i]]!
      let within = min(1, Double(time - slots[i]) / Double(max(end - slots[i], 1)))
      return Double(plotLeft) + (Double(i) + within) * slotWidth
    }
  }

  /// The grid and the y-axis labels.
  static func grid(_ plot: Plot, options: DisplayOptions) -> String {
    var out = ""
    for multiple in 0...(plot.top / plot.step) {
      let tick = multiple * plot.step
      let ty = format(plot.y(tick))
      out += "<line x1=\"\(plotLeft)\" y1=\"\(ty)\" x2=\"\(plotRight)\" y2=\"\(ty)\" stroke=\"#e0e0e0\"/>"
      out +=
        "<text x=\"\(plotLeft - 8)\" y=\"\(format(plot.y(tick) + 4))\" text-anchor=\"end\" font-size=\"11\">"
        + escape(options.rawBytes ? String(tick) : options.size(tick)) + "</text>\n"
    }
    return out
  }

  /// The session window and its pause, where they fall in this range.
  static func shading(_ window: SessionWindow, _ plot: Plot) -> String {
    var out = ""
    let slots = plot.slots
    let rangeEnd = plot.bounds[slots[slots.count - 1]]!
    for (from, to, colour, label) in [
      (window.openedAt, window.sessionEndsAt, "#2e7d32", "session"),
      (window.sessionEndsAt, window.pauseEndsAt, "#c62828", "pause"),
    ] where to.seconds > slots[0] && from.seconds < rangeEnd {
      let x0 = plot.x(from.seconds)
      let x1 = max(plot.x(to.seconds), x0 + 2)
      out +=
        "<rect x=\"\(format(x0))\" y=\"\(plotTop)\" width=\"\(format(x1 - x0))\" height=\"\(plotBottom - plotTop)\" fill=\"\(colour)\" fill-opacity=\"0.15\"><title>\(label)</title></rect>"
      // Named inside the shading where it is wide enough; the key in the corner names it anyway.
      if x1 - x0 >= 48 {
        out +=
          "<text x=\"\(format(x0 + 3))\" y=\"\(plotTop + 12)\" font-size=\"10\" fill=\"\(colour)\">\(label)</text>"
      }
      out += "\n"
    }
    return out
  }

  /// The bars, stacked in series order from the bottom, each with its tooltip.
  static func bars(_ history: TrafficHistory, _ plot: Plot, options: DisplayOptions) -> String {
    var out = ""
    var stacked = [UInt64](repeating: 0, count: plot.slots.count)
    let slotWidth = plot.slotWidth
    let barWidth = max(1, slotWidth * 0.8)
    for (seriesIndex, series) in history.series.enumerated() {
      let fill = seriesColour(series, index: seriesIndex, panel: history)
      for row in series.rows where row.traffic.bytes > 0 {
        let i = plot.index[row.start]!
        let base = stacked[i]
        stacked[i] &+= row.traffic.bytes
        let top = plot.y(stacked[i])
        let height = max(0.5, plot.y(base) - top)
        out +=
          "<rect x=\"\(format(Double(plotLeft) + Double(i) * slotWidth + (slotWidth - barWidth) / 2))\" y=\"\(format(top))\" width=\"\(format(barWidth))\" height=\"\(format(height))\" fill=\"\(fill)\">"
        out +=
          "<title>\(escape(seriesName(series))) \(escape(HistoryTable.label(row.start, history))): \(escape(options.estimate(row.traffic.bytes)))</title></rect>\n"
      }
    }
    return out
  }

  /// The data cap of this panel's period: a dashed line at its limit, labelled.
  static func capLine(_ capLimit: UInt64, _ plot: Plot, options: DisplayOptions) -> String {
    let cy = format(plot.y(capLimit))
    return
      "<line x1=\"\(plotLeft)\" y1=\"\(cy)\" x2=\"\(plotRight)\" y2=\"\(cy)\" stroke=\"#c62828\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>"
      + "<text x=\"\(plotRight)\" y=\"\(format(plot.y(capLimit) - 4))\" text-anchor=\"end\" font-size=\"11\" fill=\"#c62828\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">"
      + escape("data cap \(options.matching(limit: capLimit).size(capLimit))") + "</text>\n"
  }

  /// The axes and the x-axis labels: at most 12, evenly spaced.
  static func axes(_ history: TrafficHistory, _ plot: Plot) -> String {
    var out = "<line x1=\"\(plotLeft)\" y1=\"\(plotTop)\" x2=\"\(plotLeft)\" y2=\"\(plotBottom)\" stroke=\"#444444\"/>"
    out +=
      "<line x1=\"\(plotLeft)\" y1=\"\(plotBottom)\" x2=\"\(plotRight)\" y2=\"\(plotBottom)\" stroke=\"#444444\"/>\n"
    let labelStep = max(1, (plot.slots.count + 11) / 12)
    for (i, start) in plot.slots.enumerated() where i % labelStep == 0 {
      let lx = format(Double(plotLeft) + (Double(i) + 0.5) * plot.slotWidth)
      out +=
        "<text x=\"\(lx)\" y=\"\(plotBottom + 16)\" text-anchor=\"middle\" font-size=\"11\">"
        + escape(tickLabel(start, history)) + "</text>"
    }
    out += "\n"
    return out
  }

  /// The cap's limit when this panel shows its period: a day cap on days, a month cap on months
  /// that start on the same day.
  static func capLine(for history: TrafficHistory, session: SessionReport?) -> UInt64? {
    guard let cap = session?.dataCap?.cap, history.order == .time else { return nil }
    switch (cap.period.length, history.granularity) {
    case (.day, .day): return cap.limitBytes
    case (.month, .month) where cap.period.monthStartDay == history.monthStartDay: return cap.limitBytes
    default: return nil
    }
  }

  /// Every row of the range asked for, start to end (at most what the database keeps).
  static func span(_ history: TrafficHistory) -> [Int64: Int64] {
    var bounds: [Int64: Int64] = [:]
    var slot = history.firstRow
    while slot <= history.lastRow, bounds.count < 2000 {
      let end = history.rows.next(after: slot, in: history.calendar)
      bounds[slot] = end
      guard end > slot else { break }
      slot = end
    }
    return bounds
  }

  static func title(_ history: TrafficHistory) -> String {
    let count = span(history).count
    let unit: String
    switch history.granularity {
    case .fiveMinutes: unit = "5-minute buckets"
    case .hour: unit = "hours"
    case .day: unit = "days"
    case .month: unit = "months"
    }
    let from = history.monthStartDay == 1 ? "" : " (from the \(UsagePeriod.ordinal(history.monthStartDay)))"
    return
      "last \(count) \(count == 1 ? String(unit.dropLast()) : unit)\(from) · bytes per \(HistoryTable.periodName(history)), received and sent"
  }

  /// Under a bar: `13:00`, `11-29`, `2026-11`, `11-15` (a month from the 15th).
  static func tickLabel(_ start: Int64, _ history: TrafficHistory) -> String {
    let parts = history.calendar.civil(start)
    func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
    switch history.granularity {
    case .fiveMinutes, .hour: return "\(two(parts.hour)):\(two(parts.minute))"
    case .day: return "\(two(parts.month))-\(two(parts.day))"
    case .month:
      return history.monthStartDay == 1 ? "\(parts.year)-\(two(parts.month))" : "\(two(parts.month))-\(two(parts.day))"
    }
  }

  /// The y axis' top and tick step for values up to `peak`: 4 or 5 ticks of 1, 2 or 5 times a
  /// power of ten of the unit the labels are in (KiB, MiB, GiB… or bytes), so labels are round.
  static func scale(_ peak: UInt64, rawBytes: Bool) -> (top: UInt64, step: UInt64) {
    let value = max(peak, 1)
    var unit: UInt64 = 1
    if !rawBytes {
      while unit <= UInt64.max / 1024, value / unit >= 1024 { unit *= 1024 }
    }
    let inUnits = Double(value) / Double(unit)
    var magnitude = 1.0
    while magnitude * 10 <= inUnits / 4 { magnitude *= 10 }
    var step = magnitude
    for multiple in [1.0, 2.0, 5.0, 10.0, 20.0] where inUnits / (multiple * magnitude) <= 5 {
      step = multiple * magnitude
      break
    }
    let stepBytes = max(1, UInt64(min(step * Double(unit), 1.8e19)))
    let ticks = value / stepBytes + (value % stepBytes == 0 ? 0 : 1)
    let (top, overflow) = stepBytes.multipliedReportingOverflow(by: max(ticks, 1))
    return (overflow ? .max : top, stepBytes)
  }

  static func format(_ value: Double) -> String {
    let rounded = (value * 10).rounded() / 10
    return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
  }

  /// Text as XML character data or an attribute value.
  static func escape(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "&": out += "&amp;"
      case "<": out += "&lt;"
      case ">": out += "&gt;"
      case "\"": out += "&quot;"
      case "'": out += "&apos;"
      default:
        // XML 1.0 allows no C0 controls but tab and line feed: names are shown escaped already.
        if scalar.value < 0x20 && scalar != "\t" && scalar != "\n" {
          out += "?"
        } else {
          out.unicodeScalars.append(scalar)
        }
      }
    }
    return out
  }
}
