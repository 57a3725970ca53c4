import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// What a newcomer reads in the first minutes (issue 24): a limit in the units it was typed in,
/// no line under `status` for a tunnel that simply has no manager, and the report of today and
/// this month.
struct FirstMinutesRenderTests {
  let utc = FixedOffsetCalendar.utc
  func at(_ text: String) -> Timestamp { Timestamp(rfc3339: text)! }

  @Test(
    "a size reads in the prefixes it is exact in: 10 GB in SI, 2 GiB in IEC, neither for 11,550 B or 999 B",
    arguments: [
      (UInt64(10_000_000_000), UnitSystem?.some(.si)), (2_147_483_648, .iec), (50_000_000_000, .si),
      (1_610_612_736, .iec),  // 1.5 GiB
      (5_000, .si), (1_024, .iec), (1_048_576_000, .iec),  // 1000 MiB
      (12_345_678, nil), (999, nil), (11_550, nil), (23_100, .si), (1 << 62, .iec), (4_000_000_000_000_000_000, .si),
    ])
  func naturalUnits(bytes: UInt64, expected: UnitSystem?) {
    #expect(UnitSystem.natural(for: bytes) == expected, "\(bytes)")
  }

  @Test("alert --limit 10GB says 'of 10.0 GB', and the traffic beside it in MB; --units iec keeps GiB")
  func limitInItsOwnUnits() {
    let cap = DataCap(limitBytes: 10_000_000_000, period: UsagePeriod(.month))
    let status = cap.status(used: TrafficCounts(rxBytes: 14_088_512), at: at("2026-11-25T12:00:00Z"), in: utc)
    let line = DataCapText.line(
      status, options: DisplayOptions(calendar: utc), label: "tunnel class: limit", refuses: false)
    #expect(line.contains("≈ 14.1 MB of 10.0 GB this month"), "\(line)")
    #expect(line.contains("≈ 9.99 GB left"), "\(line)")
    let chosen = DataCapText.line(status, options: DisplayOptions(units: .iec, calendar: utc))
    #expect(chosen.contains("≈ 13.4 MiB of 9.31 GiB"), "\(chosen)")
    let binary = DataCap(limitBytes: 2 << 30, period: UsagePeriod(.month))
    let binaryLine = DataCapText.line(
      binary.status(used: TrafficCounts(rxBytes: 1 << 30), at: at("2026-11-25T12:00:00Z"), in: utc),
      options: DisplayOptions(calendar: utc))
    #expect(binaryLine.contains("≈ 1.00 GiB of 2.00 GiB"), "\(binaryLine)")
  }

  @Test(
    "status: a tunnel without a manager gets 'none' in its cell and no line under the table; a managed one its line")
  func noManagerIsNoNews() {
    func report(_ name: String, _ manager: TunnelManager) -> InterfaceReport {
      var report = InterfaceReport(
        name: InterfaceName(name), index: 7, interfaceClass: .tunnel, classBy: .kind, state: .up,
        counters: InterfaceCounters(TrafficCounts(rxBytes: 4_000_000, txBytes: 1_000)), width: .bits64,
        ledger: LedgerTotals(TrafficCounts(rxBytes: 4_000_000, txBytes: 1_000), firstSeenAt: at("2026-11-25T10:00:00Z"))
      )
      report.manager = manager
      return report
    }
    let none = TunnelManager(
      kind: .none, id: nil, foundBy: .nothing,
      evidence: "wgnu0 is a WireGuard device without a wg-quick configuration (/etc/wireguard/wgnu0.conf)")
    let wgQuick = TunnelManager(
      kind: .wgQuick, id: "/etc/wireguard/wg0.conf", foundBy: .kind, evidence: "wg0 is a WireGuard device")
    let snapshot = StatusSnapshot(
      generatedAt: at("2026-11-25T12:00:00Z"), source: .netlink,
      interfaces: [report("wgnu0", none), report("wg0", wgQuick)])
    let text = StatusTable.render(snapshot, options: DisplayOptions(calendar: utc))
    #expect(!text.contains("no manager"), "\(text)")
    #expect(text.contains("wg0: managed by wg-quick /etc/wireguard/wg0.conf"), "\(text)")
    // The columns are explained where they are shown.
    #expect(text.contains("RX, TX: since the interface was created; TOTAL RX, TX: since vpnstat first saw it"))
  }

  @Test("the report: a block per class with today, yesterday, this month and last month, projections, the session")
  func reportText() {
    let now = at("2026-11-25T12:00:00Z")
    func row(_ start: String, _ end: String, _ rx: UInt64) -> TrafficHistory.Row {
      TrafficHistory.Row(
        start: at(start).seconds, end: at(end).seconds, traffic: TrafficCounts(rxBytes: rx, txBytes: rx / 10))
    }
    let today = row("2026-11-25T00:00:00Z", "2026-11-26T00:00:00Z", 1_500)
    let month = row("2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z", 18_500)
    let summary = UsageSummary(
      series: [
        UsageSummary.Series(
          interfaceClass: .tunnel, name: nil, members: [InterfaceName("wg0"), InterfaceName("wg1")],
          lines: [
            .init(period: .today, row: today, estimate: PeriodEstimate.of(today, at: now)),
            .init(period: .yesterday, row: row("2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z", 0), estimate: nil),
            .init(period: .thisMonth, row: month, estimate: PeriodEstimate.of(month, at: now)),
            .init(period: .lastMonth, row: row("2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", 14_500), estimate: nil),
          ])
      ], generatedAt: now, monthStartDay: 1, calendar: utc)
    let session = SessionReport.make(
      SessionRecord(plan: .premium), now: now, tunnelUp: true, nextLengths: .release, tunnelTotals: nil, lastStop: nil)
    let text = UsageReportText.render(
      summary, session: session, notes: ["saved at 11:59:30."], options: DisplayOptions(rawBytes: true, calendar: utc))
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    #expect(lines.first?.contains("FROM") == true && lines.first?.contains("PROJECTED") == true, "\(text)")
    #expect(lines.contains("tunnel: wg0, wg1"), "\(text)")
    func line(_ label: String) -> [String] {
      (lines.first { $0.hasPrefix("  " + label + " ") } ?? "").split(separator: " ").map(String.init)
        .filter { $0 != "≈" }
    }
    #expect(line("today") == ["today", "2026-11-25", "1500", "150", "1650", "3300"], "\(text)")
    #expect(line("yesterday") == ["yesterday", "2026-11-24", "0", "0", "0"], "\(text)")
    // 20,350 B in 24.5 of November's 30 days.
    #expect(line("this month") == ["this", "month", "2026-11-01", "18500", "1850", "20350", "24918"], "\(text)")
    #expect(line("last month") == ["last", "month", "2026-10-01", "14500", "1450", "15950"], "\(text)")
    #expect(text.contains("session: premium plan · unlimited"))
    #expect(text.contains("saved at 11:59:30."))
    #expect(text.contains("≈ estimates"))
  }
}
