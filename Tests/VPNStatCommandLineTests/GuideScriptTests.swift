import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatTestSupport

/// The guide's jq one-liners ("Scripts: `--json` and jq"), run as written on the report fixture
/// (`ReportFixture`, at its "now"): each must print the figure worked out by hand there.
struct GuideScriptTests {
  /// The one-liners of the guide's Scripts section, in order: `vpnstat ARGS | jq [-r] 'FILTER'`.
  static func oneLiners() throws -> [(arguments: [String], raw: Bool, filter: String)] {
    let guide = try String(
      contentsOfFile: Built.packageRoot.appendingPathComponent("docs/guide.md").path, encoding: .utf8)
    let section = try #require(guide.components(separatedBy: "### Scripts: `--json` and jq").dropFirst().first)
    let block = try #require(
      section.components(separatedBy: "```sh\n").dropFirst().first?.components(separatedBy: "```").first)
    return try block.split(separator: "\n").filter { $0.hasPrefix("vpnstat ") }.map { line in
      let parts = line.components(separatedBy: " | jq ")
      try #require(parts.count == 2, "not 'vpnstat … | jq …': \(line)")
      var jq = parts[1]
      let raw = jq.hasPrefix("-r ")
      if raw { jq.removeFirst(3) }
      try #require(jq.hasPrefix("'") && jq.hasSuffix("'") && jq.count > 2, "the filter is not one quoted word: \(line)")
      return (
        Array(parts[0].split(separator: " ").dropFirst().map(String.init)), raw, String(jq.dropFirst().dropLast())
      )
    }
  }

  @Test(
    "the guide's jq one-liners print the fixture's figures: today's tunnel bytes, the month's projection, the busiest day, whether connecting is allowed"
  )
  func oneLinersPrintTheFigures() throws {
    try Tool.require("/usr/bin/jq")
    let directory = try TemporaryDirectory("guidejq")
    let db = directory.file("v.db")
    try ReportFixture.make(at: db)
    let sysfs = try SysfsFixture()
    let clock = ManualTimeSource(wall: ReportFixture.now.seconds)
    let expected = ["1650", "30000", "wg0 8800", "yes"]
    let lines = try Self.oneLiners()
    try #require(
      lines.count == expected.count, "the guide has \(lines.count) one-liners; this test knows \(expected.count)")
    for (line, figure) in zip(lines, expected) {
      // No interface of this machine's, where the command samples (session does not).
      let sampling = line.arguments.first == "session" ? [] : ["--sysfs-root", sysfs.directory.path]
      let result = try runInProcess(line.arguments + ["--db", db] + sampling, clock: clock)
      try #require(result.status == 0, "vpnstat \(line.arguments): \(result.status) \(result.errors)")
      let printed = try run("/usr/bin/jq", (line.raw ? ["-r"] : []) + [line.filter], input: result.stdout)
      #expect(printed.status == 0, "jq \(line.filter): \(printed.errors)")
      #expect(
        printed.output.trimmingCharacters(in: .whitespacesAndNewlines) == figure,
        "vpnstat \(line.arguments) | jq \(line.filter)")
    }
  }
}
