import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// Issue 20, item 1: `connect`, `disconnect` and `enforce` act on tunnel-class interfaces only.
/// The loopback, a veth (Ethernet framing, class other) or any other class is refused at once
/// with 64 and left exactly as it was; `--class NAME=tunnel` (or `class = NAME=tunnel` in the
/// configuration file) says a link is a tunnel. In a namespace of the test's own, with real links.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct TunnelsOnlyKernelTests {
  static let environment = ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"]

  /// The link's flags as `ip -j link` gives them.
  static func flags(_ ns: TestNamespace, _ name: String) throws -> [String] {
    let result = try ns.ip("-j", "link", "show", "dev", name)
    let links = try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]]
    return links?.first?["flags"] as? [String] ?? []
  }

  @Test(
    "disconnect lo, disconnect and connect a veth, enforce lo: 64 at once naming the class and --class NAME=tunnel; every link as it was (lo was taken down)"
  )
  func refusedAtOnce() throws {
    let ns = try TestNamespace("tonly")
    let directory = try TemporaryDirectory("tonly")
    let db = directory.file("v.db")
    try ns.ip("link", "add", "vt0", "type", "veth", "peer", "name", "vt1")
    try ns.ip("link", "set", "vt0", "up")
    let before = try ["lo", "vt0", "vt1"].map { try Self.flags(ns, $0) }
    #expect(before[0].contains("UP") && before[1].contains("UP") && !before[2].contains("UP"), "\(before)")
    for (arguments, name, described) in [
      (["disconnect", "lo"], "lo", "lo is of class loopback (by its link type)"),
      (["disconnect", "--json", "--", "lo"], "lo", "lo is of class loopback (by its link type)"),
      (["disconnect", "vt0"], "vt0", "vt0 is of class other (by its link kind)"),
      (["connect", "vt1", "--manager", "none"], "vt1", "vt1 is of class other (by its link kind)"),
      (["enforce", "lo"], "lo", "lo is of class loopback (by its link type)"),
      (["enforce", "vt0", "--action", "link-down"], "vt0", "vt0 is of class other (by its link kind)"),
      (
        ["disconnect", "vt0", "--class", "vt0=ethernet"], "vt0", "vt0 is of class ethernet (as configured with --class)"
      ),
    ] {
      let asked = Date()
      let result = try ns.vpnstat([arguments[0], "--db", db] + arguments.dropFirst(), environment: Self.environment)
      #expect(result.status == 64, "\(arguments): \(result.status) \(result.output) \(result.errors)")
      #expect(Date().timeIntervalSince(asked) < 5, "\(arguments) was not refused at once")
      #expect(result.errors.contains("\(described), not a tunnel"), "\(arguments): \(result.errors)")
      #expect(
        result.errors.contains("--class \(name)=tunnel") && result.errors.contains("`class = \(name)=tunnel`"),
        "\(arguments): \(result.errors)")
      #expect(result.output.isEmpty, "\(arguments): \(result.output)")
      let after = try ["lo", "vt0", "vt1"].map { try Self.flags(ns, $0) }
      #expect(after == before, "\(arguments) changed the links: \(before) → \(after)")
    }
    #expect(!FileManager.default.fileExists(atPath: db), "a refused command created the database")
  }

  @Test(
    "--class NAME=tunnel (on the command line or in the configuration file) says a veth is a tunnel: disconnect takes it down, connect brings it up"
  )
  func classSaysTunnel() throws {
    let ns = try TestNamespace("tclass")
    let directory = try TemporaryDirectory("tclass")
    let db = directory.file("v.db")
    try ns.ip("link", "add", "vc0", "type", "veth", "peer", "name", "vc1")
    try ns.ip("link", "set", "vc0", "up")
    let down = try ns.vpnstat(
      ["disconnect", "vc0", "--class", "vc0=tunnel", "--db", db, "--timeout", "3s"], environment: Self.environment)
    #expect(down.status == 0, "\(down.status): \(down.output) \(down.errors)")
    #expect(down.output.hasPrefix("disconnected: stopped through link-down, confirmed"), "\(down.output)")
    #expect(!(try Self.flags(ns, "vc0")).contains("UP"))
    // Its peer up, so that once up it also runs: what connect waits for.
    try ns.ip("link", "set", "vc1", "up")
    let config = directory.file("config")
    try "class = vc0=tunnel\n".write(toFile: config, atomically: true, encoding: .utf8)
    let up = try ns.vpnstat(
      ["connect", "vc0", "--manager", "none", "--db", db, "--timeout", "3s"], environment: ["VPNSTAT_CONFIG": config])
    #expect(up.status == 0, "\(up.status): \(up.output) \(up.errors)")
    #expect(!up.errors.contains("not a tunnel"), "\(up.errors)")
    #expect(try Self.flags(ns, "vc0").contains("UP"))
  }
}
