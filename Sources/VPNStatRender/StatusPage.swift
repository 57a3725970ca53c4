import VPNStatModel

/// What `/` of `record --listen` shows a person: the figures of one sample of the recorder, as
/// the engine hands them over. A value, so the page is a pure function of it.
package struct StatusPageModel: Sendable {
  /// Bytes per second each way, from the recorder's last two samples.
  package struct Rates: Sendable, Equatable {
    package var rx: Double
    package var tx: Double
    package init(rx: Double, tx: Double) {
      self.rx = rx
      self.tx = tx
    }
  }

  /// One interface's totals (bridged across resets, as the ledger holds them) and its rates.
  package struct Interface: Sendable {
    package var name: InterfaceName
    package var interfaceClass: InterfaceClass
    package var traffic: TrafficCounts
    /// Nil until the recorder has two samples of it.
    package var rates: Rates?
    package init(name: InterfaceName, interfaceClass: InterfaceClass, traffic: TrafficCounts, rates: Rates?) {
      self.name = name
      self.interfaceClass = interfaceClass
      self.traffic = traffic
      self.rates = rates
    }
  }

  /// When the sample was taken.
  package var takenAt: Timestamp
  package var session: SessionReport?
  package var interfaces: [Interface]
  /// The hours of the last day by class, as `history --svg --hours 24` draws them; nil when the
  /// database could not be read for it.
  package var history: TrafficHistory?
  /// How often the page reloads itself, in seconds.
  package var refreshSeconds: Int

  package init(
    takenAt: Timestamp, session: SessionReport?, interfaces: [Interface], history: TrafficHistory?,
    refreshSeconds: Int
  ) {
    self.takenAt = takenAt
    self.session = session
    self.interfaces = interfaces
    self.history = history
    self.refreshSeconds = refreshSeconds
  }
}

/// The status page: one self-contained HTML document (styles, the chart as inline SVG, a few
/// lines of inline script for the countdowns), readable without the script and loading nothing
/// from anywhere. Every text is made by the formatters the terminal uses (units, estimate marks,
/// `terminalText` for names, with their BiDi and control characters shown escaped), then
/// escaped for HTML.
package enum StatusPage {
  /// Counts `[data-until]` elements down between reloads ("in 12 min 30 s", as
  /// `Units.duration(seconds:)` writes it). Its hash is in `contentSecurityPolicy`: change both.
  static let script =
    "function d(s){var h=Math.floor(s/3600),m=Math.floor(s/60)%60,x=s%60;return h>0?h+\" h \"+(m<10?\"0\":\"\")+m+\" min\":m>0?(x==0?m+\" min\":m+\" min \"+x+\" s\"):x+\" s\"}"
    + "function t(){var n=Date.now()/1000;document.querySelectorAll(\"[data-until]\").forEach(function(e){e.textContent=\"in \"+d(Math.max(0,Math.ceil(e.getAttribute(\"data-until\")-n)))})}"
    + "t();setInterval(t,1000);"

  /// Nothing loads from anywhere, this server included: the inline styles, and the one inline
  /// script by its hash.
  package static let contentSecurityPolicy =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-i91bxIQ3PCiLSc/wSp3vrnEaqzycPA1nAVo8JAxVCTs='; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

  static let style = """
    body{font-family:system-ui,DejaVu Sans,sans-serif;margin:1.5em;color:#222;max-width:62em}
    h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.2em 0 .4em}
    .ok{color:#2e7d32}.no{color:#c62828}.dim{color:#666;font-size:.9em}
    table{border-collapse:collapse}td,th{padding:.15em .7em;text-align:right;white-space:nowrap}
    td:first-child,th:first-child{text-align:left;max-width:24em;overflow-wrap:anywhere;white-space:normal}
    tr.class td{font-weight:bold;border-top:1px solid #ccc}
    .bar{background:#eee;width:20em;height:.8em;display:inline-block;vertical-align:middle}
    .bar span{display:block;height:100%;background:#1f77b4}.bar .full{background:#c62828}
    svg{max-width:100%;height:auto}
    """

  package static func render(_ model: StatusPageModel, options: DisplayOptions) -> String {
    var html = """
      <!DOCTYPE html>
      <html lang="en"><head><meta charset="utf-8">
      <meta http-equiv="refresh" content="\(max(1, model.refreshSeconds))">
      <meta name="viewport" content="width=device-width, initial-scale=1">
      <title>\(title(model, options: options))</title>
      <style>\(style)</style></head>
      <body><h1>vpnstat</h1>
      <p class="dim">as of \(e(model.takenAt.localDateTime(in: options.calendar))); this page reloads every \(e(Units.duration(seconds: Int64(max(1, model.refreshSeconds))))).</p>

      """
    if let session = model.session {
      html += sessionSection(session, options: options)
    }
    html += trafficSection(model, options: options)
    if let history = model.history {
      html += "<h2>Last 24 hours</h2>\n" + inlineSVG(history, session: model.session, options: options)
    }
    html += """
      <p class="dim">≈ every figure is an estimate from interface counters (protocol overhead included). \
      Machine-readable: <a href="/metrics">/metrics</a> (OpenMetrics or the Prometheus text format).</p>
      <script>\(script)</script>
      </body></html>

      """
    return html
  }

  /// The tab's title: the state at a glance.
  static func title(_ model: StatusPageModel, options: DisplayOptions) -> String {
    guard let session = model.session else { return "vpnstat" }
    return "vpnstat · " + e(session.state.rawValue)
  }

  /// The window: its state in words (`SessionText.headline`), when the session and the pause
  /// end, as local times and as countdowns; the data cap with a bar.
  static func sessionSection(_ session: SessionReport, options: DisplayOptions) -> String {
    var html = "<h2>Session</h2>\n"
    html +=
      "<p class=\"\(session.canConnect ? "ok" : "no")\"><strong>\(e(SessionText.headline(session, calendar: options.calendar)))</strong></p>\n"
    if let window = session.window, session.plan == .free {
      html += "<table>\n"
      if session.state == .active {
        html += countdownRow("session ends", window.sessionEndsAt, now: session.now, options: options)
      }
      if session.state == .active || session.state == .paused || session.state == .expired {
        html += countdownRow("pause ends", window.pauseEndsAt, now: session.now, options: options)
      }
      html += "</table>\n"
    }
    if let refusal = SessionText.refusal(session, calendar: options.calendar) {
      html += "<p class=\"no\">\(e(refusal))</p>\n"
    }
    for line in SessionText.details(session, options: options) where !line.hasPrefix("data cap") {
      html += "<p>\(e(line))</p>\n"
    }
    if let cap = session.dataCap {
      let share = min(100, max(0, cap.percent))
      html +=
        "<h2>Data cap</h2>\n<p class=\"\(cap.reached ? "no" : "ok")\">\(e(DataCapText.line(cap, options: options)))</p>\n"
      html +=
        "<p><span class=\"bar\" role=\"img\" aria-label=\"\(e(DataCapText.percent(cap.percent)))\"><span class=\"\(cap.reached ? "full" : "")\" style=\"width:\(HistorySVG.format(share))%\"></span></span> "
        + "resets \(e(cap.periodEnd.localDateTime(in: options.calendar))) "
        + "<span data-until=\"\(cap.periodEnd.nanoseconds / 1_000_000_000)\">\(e(inWords(cap.periodEnd, now: session.now)))</span></p>\n"
    }
    return html
  }

  /// `session ends | 12:45:03 | in 12 min 30 s`.
  static func countdownRow(_ label: String, _ time: Timestamp, now: Timestamp, options: DisplayOptions) -> String {
    "<tr><td>\(label)</td><td>\(e(time.localTime(near: now, in: options.calendar)))</td>"
      + "<td><span data-until=\"\(time.nanoseconds / 1_000_000_000)\">\(e(inWords(time, now: now)))</span></td></tr>\n"
  }

  /// `in 12 min 30 s`: whole seconds rounded up, as every countdown here.
  static func inWords(_ time: Timestamp, now: Timestamp) -> String {
    "in " + Units.duration(seconds: SessionText.seconds(.nanoseconds(time.nanoseconds - now.nanoseconds)))
  }

  /// Per class (tunnel first), its rates and totals, then each of its interfaces.
  static func trafficSection(_ model: StatusPageModel, options: DisplayOptions) -> String {
    var html = "<h2>Traffic</h2>\n<table>\n"
    html += "<tr><th>class / interface</th><th>↓ rate</th><th>↑ rate</th><th>received</th><th>sent</th></tr>\n"
    let byClass = Dictionary(grouping: model.interfaces, by: \.interfaceClass)
    for interfaceClass in byClass.keys.sorted() {
      let members = byClass[interfaceClass]!.sorted { $0.name < $1.name }
      var traffic = TrafficCounts.zero
      var rx: Double?
      var tx: Double?
      for member in members {
        traffic += member.traffic
        if let rates = member.rates {
          rx = (rx ?? 0) + rates.rx
          tx = (tx ?? 0) + rates.tx
        }
      }
      html += row(interfaceClass.rawValue, rx: rx, tx: tx, traffic: traffic, options: options, css: "class")
      for member in members {
        html += row(
          options.name(member.name), rx: member.rates?.rx, tx: member.rates?.tx, traffic: member.traffic,
          options: options, css: nil)
      }
    }
    if model.interfaces.isEmpty { html += "<tr><td>no interfaces recorded yet</td></tr>\n" }
    return html + "</table>\n"
  }

  static func row(
    _ label: String, rx: Double?, tx: Double?, traffic: TrafficCounts, options: DisplayOptions, css: String?
  ) -> String {
    "<tr\(css.map { " class=\"\($0)\"" } ?? "")><td>\(e(label))</td><td>\(e(options.rate(rx)))</td><td>\(e(options.rate(tx)))</td>"
      + "<td>\(e(options.estimate(traffic.rxBytes)))</td><td>\(e(options.estimate(traffic.txBytes)))</td></tr>\n"
  }

  /// `history --svg`'s picture without its XML declaration, which HTML does not take.
  static func inlineSVG(_ history: TrafficHistory, session: SessionReport?, options: DisplayOptions) -> String {
    let svg = HistorySVG.render([history], session: session, options: options, generatedAt: history.generatedAt)
    guard let start = svg.firstRange(of: "<svg") else { return svg }
    return String(svg[start.lowerBound...])
  }

  /// Text as HTML: the SVG's XML escaping serves HTML as it is (`&`, `<`, `>`, both quotes).
  static func e(_ text: String) -> String { HistorySVG.escape(text) }
}
