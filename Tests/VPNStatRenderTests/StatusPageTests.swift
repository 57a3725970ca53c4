import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// The status page of `record --listen` as a pure function of its model: the figures a person
/// looks for, hostile names shown as harmless text, nothing loaded from outside.
struct StatusPageTests {
  static let utc = FixedOffsetCalendar.utc
  static let now = Timestamp(rfc3339: "2026-11-25T12:00:00Z")!
  static let hostile: [InterfaceName] = [
    InterfaceName("<script>alert(1)</script>"), InterfaceName("q\"'&<b>"), InterfaceName("\u{202E}0gw"),
    InterfaceName("e\u{1B}[2J\u{9B}31m"), InterfaceName(String(repeating: "long", count: 300)),
    InterfaceName(bytes: [0x62, 0xFF, 0x3C, 0x61]),
  ]

  /// A free session opened 150 s ago (12 min 30 s left), a 1 GiB daily cap half used, the
  /// hostile names on the tunnel class beside one Wi-Fi interface.
  static func model(interfaces: [StatusPageModel.Interface]? = nil) -> StatusPageModel {
    let cap = DataCap(limitBytes: 1 << 30, period: UsagePeriod(.day))
    let session = SessionReport.make(
      SessionRecord(window: SessionWindow.open(at: now - .seconds(150), lengths: .release)), now: now, tunnelUp: true,
      nextLengths: .release, tunnelTotals: .zero, lastStop: nil,
      dataCap: cap.status(used: TrafficCounts(rxBytes: 1 << 29), at: now, in: utc))
    let named =
      hostile.map {
        StatusPageModel.Interface(
          name: $0, interfaceClass: .tunnel, traffic: TrafficCounts(rxBytes: 1000, txBytes: 10),
          rates: StatusPageModel.Rates(rx: 512, tx: 0))
      } + [
        StatusPageModel.Interface(
          name: InterfaceName("wlan0"), interfaceClass: .wifi, traffic: TrafficCounts(rxBytes: 3 << 20, txBytes: 2048),
          rates: nil)
      ]
    let history = TrafficHistory.make(
      buckets: [], granularity: .hour, count: 24, now: now, grouping: .class, selection: InterfaceSelection(),
      calendar: utc)
    return StatusPageModel(
      takenAt: now, session: session, interfaces: interfaces ?? named, history: history, refreshSeconds: 10)
  }

  @Test("the page shows the window with its countdowns, the data cap, per-class rates and totals, and the chart")
  func figures() {
    let page = StatusPage.render(Self.model(), options: DisplayOptions(calendar: Self.utc))
    #expect(page.contains("<meta http-equiv=\"refresh\" content=\"10\">"))
    #expect(page.contains("session: free plan · active · 12:30 left (until 12:12:30), then a 45 min pause"))
    #expect(
      page.contains("<td>session ends</td><td>12:12:30</td><td><span data-until=\"1795608750\">in 12 min 30 s</span>"))
    #expect(page.contains("<td>pause ends</td><td>12:57:30</td>"))
    #expect(page.contains("data cap: ≈ 512 MiB of 1.00 GiB this day (50 %), ≈ 512 MiB left, until 2026-11-26 00:00"))
    #expect(page.contains("style=\"width:50%\""))
    // Six tunnels at 512 B/s each: the class row sums them; Wi-Fi has no rate yet.
    #expect(
      page.contains(
        "<tr class=\"class\"><td>tunnel</td><td>≈ 3.00 KiB/s</td><td>≈ 0 B/s</td><td>≈ 5.86 KiB</td><td>≈ 60 B</td></tr>"
      ))
    #expect(
      page.contains("<tr class=\"class\"><td>wifi</td><td>–</td><td>–</td><td>≈ 3.00 MiB</td><td>≈ 2.00 KiB</td></tr>"))
    #expect(page.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""))
    #expect(!page.contains("<?xml"))
    #expect(page.contains("<a href=\"/metrics\">"))
  }

  @Test(
    "hostile names reach the page as their terminal escapes, HTML-escaped: no markup, control or BiDi character from a name"
  )
  func hostileNames() {
    let page = StatusPage.render(Self.model(), options: DisplayOptions(calendar: Self.utc))
    // The one script is the page's own; no tag a name spelled.
    #expect(page.components(separatedBy: "<script").count == 2)
    #expect(!page.contains("<b>") && !page.contains("alert(1)</script>"))
    #expect(page.contains("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"))
    #expect(page.contains("<td>q&quot;&apos;&amp;&lt;b&gt;</td>"))
    // BiDi and controls as `\xHH`, as in the terminal; an invalid byte too.
    #expect(page.contains("<td>\\xe2\\x80\\xae0gw</td>"))
    #expect(page.contains("<td>e\\x1b[2J\\xc2\\x9b31m</td>"))
    #expect(page.contains("<td>b\\xff&lt;a</td>"))
    #expect(page.contains(String(repeating: "long", count: 300)))
    for scalar in page.unicodeScalars {
      #expect(
        !TerminalText.isUnsafe(scalar) || scalar == "\n", "U+\(String(scalar.value, radix: 16)) reached the page raw")
    }
  }

  @Test("the page references nothing outside itself, and the policy's hash is its script's")
  func selfContained() throws {
    let page = StatusPage.render(Self.model(), options: DisplayOptions(calendar: Self.utc))
    #expect(!page.contains("src="))
    #expect(!page.contains("url("))
    #expect(!page.contains("@import"))
    #expect(!page.contains("<link"))
    // Every link is a path on this server; the only absolute URL is the SVG namespace's name.
    let hrefs = page.components(separatedBy: "href=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
    #expect(!hrefs.isEmpty && hrefs.allSatisfy { $0.hasPrefix("/") && !$0.hasPrefix("//") }, "\(hrefs)")
    #expect(page.replacingOccurrences(of: "xmlns=\"http://www.w3.org/2000/svg\"", with: "").contains("://") == false)
    #expect(page.contains("<script>\(StatusPage.script)</script>"))
    let digest = try run(
      "/bin/sh", ["-c", "openssl dgst -sha256 -binary | base64"], input: Data(StatusPage.script.utf8))
    let hash = digest.output.trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(StatusPage.contentSecurityPolicy.contains("script-src 'sha256-\(hash)'"), "\(hash)")
    #expect(StatusPage.contentSecurityPolicy.hasPrefix("default-src 'none'"))
  }

  @Test("no session, no interfaces: the page says so and still reloads")
  func empty() {
    var model = Self.model(interfaces: [])
    model.session = nil
    model.history = nil
    let page = StatusPage.render(model, options: DisplayOptions(calendar: Self.utc))
    #expect(page.contains("no interfaces recorded yet"))
    #expect(!page.contains("<svg") && !page.contains("Session</h2>"))
    #expect(page.contains("http-equiv=\"refresh\""))
  }
}
