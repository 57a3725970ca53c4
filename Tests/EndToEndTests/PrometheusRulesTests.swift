import Foundation
import Testing

@testable import VPNStatTestSupport

/// contrib/prometheus/vpnstat-rules.yml as a fleet loads it: promtool accepts it, its unit tests
/// (vpnstat-rules.test.yml) hold each rule to its meaning, and every vpnstat metric it names is
/// one the exporter really writes, so a renamed metric cannot leave an alert that never fires.
struct PrometheusRulesTests {
  static let promtool = "/usr/bin/promtool"
  static var directory: String { Built.packageRoot.appendingPathComponent("contrib/prometheus").path }

  @Test("promtool check rules accepts the rules, and promtool test rules passes their unit tests")
  func promtoolAccepts() throws {
    try Tool.require(Self.promtool)
    let checked = try run(Self.promtool, ["check", "rules", Self.directory + "/vpnstat-rules.yml"])
    #expect(checked.status == 0, "\(checked.output) \(checked.errors)")
    #expect(checked.output.contains("SUCCESS: 8 rules found"), "\(checked.output)")
    // promtool reads rule_files relative to the test file.
    let tested = try run(Self.promtool, ["test", "rules", Self.directory + "/vpnstat-rules.test.yml"])
    #expect(tested.status == 0, "\(tested.output) \(tested.errors)")
  }

  @Test("every vpnstat metric the rules name is in what vpnstat export writes for Prometheus")
  func rulesNameRealMetrics() throws {
    let rules = try String(contentsOfFile: Self.directory + "/vpnstat-rules.yml", encoding: .utf8)
    let named = Set(rules.matches(of: /\bvpnstat_[a-z_]+/).map { String($0.output) })
    try #require(named.count >= 8, "\(named)")
    let directory = try TemporaryDirectory("rules")
    let db = directory.file("v.db")
    let plan = try run(Built.vpnstat, ["plan", "free", "--data-cap", "1GiB", "--db", db])
    try #require(plan.status == 0, "\(plan.errors)")
    let exported = try run(Built.vpnstat, ["export", "--format", "prometheus", "--db", db])
    try #require(exported.status == 0, "\(exported.errors)")
    let written = Set(
      exported.output.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
        $0.split(whereSeparator: { $0 == "{" || $0 == " " }).first.map(String.init)
      })
    #expect(named.subtracting(written).isEmpty, "named by the rules, never exported: \(named.subtracting(written))")
  }
}
