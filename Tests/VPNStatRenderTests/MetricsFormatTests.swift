import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// The data cap's metrics in both expositions, read back by the parsers Prometheus' own
/// client library ships and checked by promtool.
struct MetricsFormatTests {
  static let promtool = "/usr/bin/promtool"

  func exposition(_ format: OpenMetrics.Format) -> String {
    let now = Timestamp(rfc3339: "2026-11-25T12:00:00Z")!
    let cap = DataCap(limitBytes: 5_000_000, period: UsagePeriod(.day))
    let status = cap.status(
      used: TrafficCounts(rxBytes: 4_000_000, txBytes: 1_500_000), at: now, in: FixedOffsetCalendar.utc)
    let session = SessionReport.make(
      SessionRecord(plan: .premium, dataCap: cap), now: now, tunnelUp: true, nextLengths: .release,
      tunnelTotals: .zero, lastStop: nil, dataCap: status)
    return String(
      decoding: OpenMetrics.render(ledger: Ledger(), session: session, health: StoreHealth(), at: now, format: format),
      as: UTF8.self)
  }

  @Test("the data cap's gauges parse in OpenMetrics and in the text format, with their values")
  func parses() throws {
    try Tool.requirePythonModule("prometheus_client", package: "python3-prometheus-client")
    for (format, module) in [(OpenMetrics.Format.openmetrics, "openmetrics.parser"), (.prometheus, "parser")] {
      let script = """
        import sys
        from prometheus_client.\(module) import text_string_to_metric_families
        for family in text_string_to_metric_families(sys.stdin.read()):
            for s in family.samples:
                if s.name.startswith('vpnstat_data_cap'):
                    print(s.name, s.labels.get('period', '-'), int(s.value))
        """
      let parsed = try python(script, input: Data(exposition(format).utf8))
      #expect(parsed.status == 0, "\(module): \(parsed.errors)")
      #expect(
        parsed.output.split(separator: "\n").sorted() == [
          "vpnstat_data_cap_limit_bytes day 5000000", "vpnstat_data_cap_reached - 1",
          "vpnstat_data_cap_used_bytes day 5500000",
        ], "\(module): \(parsed.output)")
    }
  }

  @Test("promtool finds nothing wrong with the text format served to Prometheus")
  func promtool() throws {
    try Tool.require(Self.promtool)
    let checked = try run(Self.promtool, ["check", "metrics"], input: Data(exposition(.prometheus).utf8))
    #expect(checked.status == 0, "\(checked.output)\(checked.errors)")
  }
}
