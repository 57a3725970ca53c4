import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The ledger entry of `name` as stored in `db` (what survives the writer's death).
func storedEntry(_ db: String, _ name: String) throws -> LedgerEntry? {
  try Store.open(StoreLocation(path: db), intent: .read)?.loadLedger().entries[InterfaceName(name)]
}

/// The database is a checkpoint of the kernel's counters: the recorder saves every save interval,
/// at once what the kernel does not keep, and the kernel keeps the rest — for real, in network
/// namespaces, with SIGKILL and SIGTERM.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct CheckpointKernelTests {
  @Test(
    "SIGKILL between checkpoints (--save-interval 1h): nothing lost of an instance that still exists; the next start books the difference"
  )
  func killedBetweenCheckpoints() throws {
    let ns = try TestNamespace("ckk")
    let directory = try TemporaryDirectory("ckk")
    let db = directory.file("v.db")
    let owner = try ns.echoTunnel("tun40", local: "169.254.40.1", peer: "169.254.40.2")
    defer { owner.stop() }
    let recorder = try ns.startRecorder(db, ["--interval", "100ms", "--save-interval", "1h", "-i", "tun40"])
    defer { recorder.stop(SIGKILL) }
    let first = try #require(try storedEntry(db, "tun40"))
    try ns.peerRun("udp-send", "169.254.40.2", "9700", "300", "900", "--gap-us", "200")
    // Several samples since, none saved: the database is still at the recorder's first sight.
    #expect(try holdsThroughout(0.5) { try storedEntry(db, "tun40") == first }, "saved before the save interval")
    #expect(recorder.stop(SIGKILL) == 128 + SIGKILL)
    try ns.peerRun("udp-send", "169.254.40.2", "9700", "200", "900", "--gap-us", "200")
    let kernel = try ns.settledCounters("tun40")
    let next = try ns.vpnstat("record", "--count", "1", "-i", "tun40", "--db", db)
    #expect(next.status == 0, "\(next.errors)")
    let entry = try #require(try storedEntry(db, "tun40"))
    #expect(kernel.txBytes - first.baseline.counters.txBytes > 400_000)
    #expect(entry.totals.traffic.txBytes == kernel.txBytes - first.baseline.counters.txBytes)
    #expect(entry.totals.traffic.rxBytes == kernel.rxBytes - first.baseline.counters.rxBytes)
    #expect(entry.totals.resets == 0 && entry.totals.discarded == 0)
  }

  @Test("a tunnel deleted between checkpoints is saved at once: its final counters survive a SIGKILL right after")
  func deletionSavedAtOnce() throws {
    let ns = try TestNamespace("ckd")
    let directory = try TemporaryDirectory("ckd")
    let db = directory.file("v.db")
    let owner = try ns.echoTunnel("tun41", local: "169.254.41.1", peer: "169.254.41.2")
    let recorder = try ns.startRecorder(db, ["--interval", "60s", "--save-interval", "1h", "-i", "tun41"])
    defer { recorder.stop(SIGKILL) }
    let first = try #require(try storedEntry(db, "tun41"))
    try ns.peerRun("udp-send", "169.254.41.2", "9701", "300", "900", "--gap-us", "200")
    let final = try ns.settledCounters("tun41")
    owner.stop()  // the tun goes with its owner
    let expectedTx = final.txBytes - first.baseline.counters.txBytes
    #expect(expectedTx > 250_000)
    let saved = try waitUntil(timeout: 5) { (try storedEntry(db, "tun41")?.totals.traffic.txBytes ?? 0) >= expectedTx }
    #expect(saved != nil, "the deletion was not saved within 5 s (sample interval 60 s, save interval 1 h)")
    #expect(recorder.stop(SIGKILL) == 128 + SIGKILL)
    let entry = try #require(try storedEntry(db, "tun41"))
    #expect(entry.totals.traffic.txBytes == expectedTx)
    #expect(entry.totals.traffic.rxBytes == final.rxBytes - first.baseline.counters.rxBytes)
  }

  @Test("SIGTERM saves: what the recorder held in memory is in the database when it exits")
  func termSaves() throws {
    let ns = try TestNamespace("ckt")
    let directory = try TemporaryDirectory("ckt")
    let db = directory.file("v.db")
    let owner = try ns.echoTunnel("tun42", local: "169.254.42.1", peer: "169.254.42.2")
    defer { owner.stop() }
    let recorder = try ns.startRecorder(db, ["--interval", "100ms", "--save-interval", "1h", "-i", "tun42"])
    defer { recorder.stop(SIGKILL) }
    let first = try #require(try storedEntry(db, "tun42"))
    try ns.peerRun("udp-send", "169.254.42.2", "9702", "300", "900", "--gap-us", "200")
    #expect(try holdsThroughout(0.3) { try storedEntry(db, "tun42") == first })
    let kernel = try ns.settledCounters("tun42")
    #expect(recorder.stop(SIGTERM) == 0, "\(recorder.errors)")
    let entry = try #require(try storedEntry(db, "tun42"))
    #expect(entry.totals.traffic.txBytes == kernel.txBytes - first.baseline.counters.txBytes)
    #expect(entry.totals.traffic.txBytes > 250_000)
  }

  @Test(
    "a recorder and an enforcer on one database: the recorder writes, the enforcer reads (exact totals), then takes over when the recorder stops"
  )
  func oneWriterAtATime() throws {
    let t = try EnforcedTunnel("ckw")
    try t.ns.ip("addr", "add", "169.254.43.1", "peer", "169.254.43.2", "dev", t.tunnel)
    try t.up()
    let recorder = try t.ns.startRecorder(t.db, ["--interval", "200ms", "--save-interval", "1h", "-i", t.tunnel])
    defer { recorder.stop(SIGKILL) }
    let first = try #require(try storedEntry(t.db, t.tunnel))
    let enforcer = try t.startEnforcer(["--save-interval", "1s"], session: "120s", pause: "60s")
    try enforcer.waitForError("vpnstat record (pid \(recorder.pid)) keeps the ledger")
    // The window the enforcer opened is saved with the ledger by the recorder (at its next sample).
    #expect(try t.openedWindow()["state"] as? String == "active")
    // Three of the recorder's samples (200 ms apart): the save it makes at the next one shows
    // in nothing a test can read (the ledger has not moved), so this is time passing, not a state.
    usleep(600_000)
    let afterStart = try #require(try storedEntry(t.db, t.tunnel))
    try t.ns.peerRun("udp-send", "169.254.43.2", "9703", "300", "900", "--gap-us", "200")
    // Past the enforcer's save interval and its 5-second tick: it read, it did not write.
    #expect(
      try holdsThroughout(6.5) { try storedEntry(t.db, t.tunnel) == afterStart },
      "the enforcer wrote while the recorder held the ledger")
    var kernel = try t.ns.settledCounters(t.tunnel)
    let status = try parseStatus(t.ns.vpnstat("status", "--json", "--db", t.db, "-i", t.tunnel))
    #expect(
      uint(interface(status, named: t.tunnel)?["total_tx_bytes"]) == kernel.txBytes - first.baseline.counters.txBytes)
    // The recorder stops (and saves); the enforcer keeps the tunnel's ledger from its next save.
    #expect(recorder.stop() == 0, "\(recorder.errors)")
    try t.ns.peerRun("udp-send", "169.254.43.2", "9703", "200", "900", "--gap-us", "200")
    try enforcer.waitForError("no recorder keeps the ledger any more", timeout: 12)
    kernel = try t.ns.kernelCounters(t.tunnel)
    let saved = try waitUntil(timeout: 8) {
      try storedEntry(t.db, t.tunnel)?.totals.traffic.txBytes == kernel.txBytes - first.baseline.counters.txBytes
    }
    let shown = try storedEntry(t.db, t.tunnel)?.totals.traffic.txBytes
    #expect(
      saved != nil, "stored \(String(describing: shown)), kernel \(kernel.txBytes - first.baseline.counters.txBytes)")
    // Deleted: the enforcer saves the final counters at once; they survive its SIGKILL.
    try t.ns.peerRun("udp-send", "169.254.43.2", "9703", "100", "900", "--gap-us", "200")
    let final = try t.ns.settledCounters(t.tunnel)
    t.owner?.stop()
    let expected = final.txBytes - first.baseline.counters.txBytes
    #expect(try waitUntil(timeout: 5) { try storedEntry(t.db, t.tunnel)?.totals.traffic.txBytes == expected } != nil)
    #expect(enforcer.stop(SIGKILL) == 128 + SIGKILL)
    let entry = try #require(try storedEntry(t.db, t.tunnel))
    #expect(entry.totals.traffic.txBytes == expected)
    #expect(entry.totals.traffic.rxBytes == final.rxBytes - first.baseline.counters.rxBytes)
    #expect(entry.totals.resets == 0)
  }
}
