import Foundation
import Testing

@testable import VPNStatTestSupport

/// The sysfs reader against the real kernel's sysfs, kept open across samples by `watch`.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct SysfsKernelTests {
  func ifindex(_ ns: TestNamespace, _ name: String) throws -> Int? {
    let shown = try ns.ip("-j", "link", "show", name)
    let links = try JSONSerialization.jsonObject(with: shown.stdout) as? [[String: Any]]
    return links?.first?["ifindex"] as? Int
  }

  /// The interface `name` in the last complete JSON line `watch` printed.
  func lastShown(_ watch: BackgroundProcess, _ name: String) throws -> [String: Any]? {
    guard let line = watch.output.split(separator: "\n").last,
      let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else { return nil }
    return interface(object, named: name)
  }

  @Test(
    "watch --source sysfs: a tun deleted and created again under its name is read through the new device's files (its ifindex, its counters)"
  )
  func recreatedDevice() throws {
    let ns = try TestNamespace("sysk")
    var owner = try ns.echoTunnel("tun45", local: "169.254.45.1", peer: "169.254.45.2")
    defer { owner.stop() }
    try ns.peerRun("udp-send", "169.254.45.2", "9704", "200", "900", "--gap-us", "200")
    let before = try #require(try ifindex(ns, "tun45"))
    let watch = try ns.start(Built.vpnstat, ["watch", "--json", "--source", "sysfs", "--interval", "200ms"])
    defer { watch.stop() }
    var shown: [String: Any]?
    _ = try waitUntil(timeout: 30, every: 0.05) {
      shown = try lastShown(watch, "tun45")
      return (uint(shown?["tx_bytes"]) ?? 0) >= 200 * 900
    }
    #expect(shown?["index"] as? Int == before, "\(String(describing: shown)) \(watch.errors)")
    owner.stop()
    while (try? ns.ip("link", "show", "tun45")) != nil { usleep(5_000) }
    owner = try ns.echoTunnel("tun45", local: "169.254.45.1", peer: "169.254.45.2")
    try ns.peerRun("udp-send", "169.254.45.2", "9704", "3", "100")
    let after = try #require(try ifindex(ns, "tun45"))
    #expect(after != before)
    // Until watch shows what the kernel says now: a sleep then one read of the kernel raced the
    // echoes still on their way, and a 5 s budget a loaded machine's stalls.
    var kernelTx: UInt64 = 0
    let matched = try waitUntil(timeout: 30, every: 0.25) {
      shown = try lastShown(watch, "tun45")
      kernelTx = try ns.kernelCounters("tun45").txBytes
      return shown?["index"] as? Int == after && uint(shown?["tx_bytes"]) == kernelTx
    }
    #expect(matched != nil, "shown \(String(describing: shown)); kernel: index \(after), tx \(kernelTx)")
    #expect(watch.isRunning, "\(watch.errors)")
  }
}
