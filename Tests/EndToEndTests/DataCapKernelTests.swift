import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// The data cap for real: a tun in a namespace carrying traffic, `vpnstat enforce` sampling it
/// every second, a cap of 5 MB a day.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct DataCapKernelTests {
  @Test(
    "a 5 MB cap with 1-second sampling: decided within one interval of crossing, down, recorded data-cap; the gate refuses with the usage; alert 0 then 1"
  )
  func fiveMegabytes() throws {
    let t = try EnforcedTunnel("cap")
    try t.ns.ip("addr", "add", "10.213.0.1", "peer", "10.213.0.2", "dev", t.tunnel)
    let plan = try t.ns.vpnstat("plan", "free", "--data-cap", "5MB", "--per", "day", "--db", t.db)
    try #require(plan.status == 0, "\(plan.errors)")
    try t.up()
    // Link-down: what is measured is the cap's rule, not how long finding a manager takes on a
    // loaded machine (a walk of /proc, systemctl, nmcli: the manager tests measure those).
    let enforcer = try t.startEnforcer(["--interval", "1s", "--action", "link-down"], session: "10m", pause: "10m")
    #expect(enforcer.errors.contains("data cap 5.00 MB per day"), "\(enforcer.errors)")
    func alert() throws -> Int32 {
      try t.ns.vpnstat("alert", "--limit", "5MB", "--per", "day", "-q", "--db", t.db).status
    }
    #expect(try alert() == 0)
    #expect(try t.ns.vpnstat("session", "check", "--db", t.db).status == 0)
    // The enforcer's first sample is the baseline: what the counters hold now is not usage.
    let base = try t.ns.kernelCounters(t.tunnel)
    // About 1,000 datagrams of 1,000 IP bytes a second, each echoed back: 2 MB/s both ways.
    let sender = try t.ns.peer("udp-send", "10.213.0.2", "9", "100000", "972", "--gap-us", "500")
    defer { sender.stop() }
    let crossed = waitUntil(timeout: 30) {
      guard let now = try? t.ns.kernelCounters(t.tunnel) else { return false }
      return (now.rxBytes + now.txBytes) - (base.rxBytes + base.txBytes) >= 5_000_000
    }
    let crossing = try #require(crossed, "the traffic never reached 5 MB")
    #expect(try waitUntil(timeout: 5) { try !t.isUp() } != nil, "never taken down")
    _ = try waitUntil(timeout: 30) { try t.lastStop()?["reason"] as? String == "data-cap" }
    let stop = try #require(try t.lastStop())
    #expect(stop["reason"] as? String == "data-cap")
    // The enforcer's own instant of the decision (the stop's time), not when this test got round
    // to seeing the link down: one sampling interval (1 s) after the crossing, with a margin for
    // the sample itself on a loaded machine.
    let decided = try #require(instant(stop["at"]), "\(stop)")
    let latency = decided.timeIntervalSince(crossing)
    #expect(latency < 1.75, "crossing → decision took \(latency) s")
    let cap = try #require(try t.session()["data_cap"] as? [String: Any])
    #expect(cap["reached"] as? Bool == true)
    #expect((uint(cap["used_bytes"]) ?? 0) >= 5_000_000)
    // The gate refuses, saying how much was used; alert says crossed.
    let gate = try t.ns.vpnstat("session", "check", "--db", t.db)
    #expect(gate.status == 75)
    #expect(gate.errors.contains("data cap reached: ≈ "), "\(gate.errors)")
    // In the units the cap was given in (5MB), not 4.77 MiB.
    #expect(gate.errors.contains("of 5.00 MB this day"), "\(gate.errors)")
    #expect(gate.errors.contains("you can reconnect when the day rolls over"), "\(gate.errors)")
    #expect(try alert() == 1)
    // Brought up again while the cap holds: down at once, recorded data-cap again.
    try t.up()
    #expect(try waitUntil(timeout: 2) { try !t.isUp() } != nil, "an up under the cap stayed up")
    #expect(enforcer.stop() == 0)
    #expect(enforcer.errors.contains("data cap reached: ≈ "), "\(enforcer.errors)")
    print("data cap: crossing → decision \(String(format: "%.3f", latency)) s")
  }

  /// The race that failed the test above in CI, made certain: the echo is read while the tun is
  /// up and written after it went down, which the kernel refuses with EIO.
  @Test("the echoing tun owner outlives its link taken down between reading a packet and echoing it")
  func echoAfterLinkDown() throws {
    let t = try EnforcedTunnel("eio")
    let owner = try #require(t.owner)
    try t.ns.ip("addr", "add", "10.213.0.1", "peer", "10.213.0.2", "dev", t.tunnel)
    try t.up()
    // Stopped, the owner reads nothing: the datagrams wait in the tun's queue.
    kill(owner.pid, SIGSTOP)
    defer { kill(owner.pid, SIGCONT) }
    try t.ns.peerRun("udp-send", "10.213.0.2", "9", "10", "100")
    try t.ns.ip("link", "set", t.tunnel, "down")
    kill(owner.pid, SIGCONT)
    // A tun counts a packet sent when its owner reads it: the owner read them all, link down.
    let read = waitUntil(timeout: 10) { ((try? t.ns.kernelCounters(t.tunnel).txPackets) ?? 0) >= 10 }
    #expect(read != nil, "the owner never read the queued datagrams")
    #expect(holdsThroughout(0.5) { owner.isRunning }, "the owner exited: \(owner.errors)")
    #expect(t.exists(), "the tun went with its owner")
    #expect(try !t.isUp())
  }
}
