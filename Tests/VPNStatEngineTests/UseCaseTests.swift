import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The `status` and `session` use cases in the engine, each one call from a request to a
/// report, on the fake kernel, the manual clock and a database in a temporary directory.
struct UseCaseTests {
  let kernel = FakeKernel()
  let clock = ManualTimeSource()
  let detector = FixedDetector(manager: TunnelManager(kind: .wgQuick, id: "wg0", foundBy: .nothing, evidence: "test"))

  /// A database whose ledger has seen the kernel once, with a window open for `wg0`.
  func database(_ directory: TemporaryDirectory) throws -> StoreLocation {
    let location = StoreLocation(path: directory.file("v.db"))
    let writer = try #require(try Store.open(location, intent: .write))
    var sampler = fakeSampler(kernel, clock)
    _ = try writer.advanceLedger(now: clock.now().wall) { ((), sampler.observations(kernel.sample(at: clock))) }
    try writer.updateSession { record in
      record.window = SessionWindow.open(at: clock.now().wall, lengths: .release)
      record.tunnel = InterfaceName("wg0")
    }
    return location
  }

  @Test("status: the interfaces asked for, their ledger, rates, the session window and its tunnel's manager")
  func status() throws {
    let directory = try TemporaryDirectory("usecase-status")
    kernel.add("wg0", up: true)
    kernel.add("eth9", up: true)
    let index = try #require(kernel.index(of: "wg0"))
    let location = try database(directory)
    kernel.carry(index, rx: 3000, tx: 1000)
    var reader = StatusReader(
      sampler: fakeSampler(kernel, clock), source: LedgerSource(store: try Store.open(location, intent: .read)),
      managers: detector)
    let report = try reader.report(
      StatusRequest(
        selection: InterfaceSelection(names: [InterfaceName("wg0"), InterfaceName("nope")]),
        rateInterval: .seconds(2), nextLengths: .release))
    #expect(report.missing == [InterfaceName("nope")])
    #expect(report.snapshot.interfaces.map(\.name) == [InterfaceName("wg0")])
    let wg0 = try #require(report.snapshot.interfaces.first)
    #expect(wg0.ledger?.traffic.rxBytes == 3000)
    #expect(wg0.rate?.rxBytesPerSecond == 0, "sampled twice, 2 s apart, nothing moved between")
    #expect(wg0.manager?.kind == .wgQuick)
    let session = try #require(report.snapshot.session)
    #expect(session.state == .active)
    #expect(session.manager?.kind == .wgQuick)
    #expect(clock.now().wall.seconds >= 2, "the rate's interval passed on the request's clock")
  }

  @Test(
    "status reads the database as of one commit: one during its sample makes it read again, and it shows in both ledger and session"
  )
  func statusReadsOneCommit() throws {
    let directory = try TemporaryDirectory("usecase-one-read")
    kernel.add("wg0", up: true)
    let index = try #require(kernel.index(of: "wg0"))
    let location = try database(directory)
    let writer = try #require(try Store.open(location, intent: .write))
    var reader = StatusReader(
      sampler: fakeSampler(kernel, clock), source: LedgerSource(store: try Store.open(location, intent: .read)))
    // Another process ends the window and books traffic while the reader reads the kernel: after
    // the ledger was loaded, before the session would have been read outside one transaction.
    kernel.duringSample = {
      kernel.duringSample = nil
      kernel.carry(index, rx: 500, tx: 0)
      var sampler = fakeSampler(kernel, clock)
      let observations = sampler.observations(kernel.sample(at: clock))
      _ = try? writer.advanceLedger(now: clock.now().wall) { ((), observations) }
      _ = try? writer.updateSession { record in record.tunnel = InterfaceName("tun7") }
    }
    let report = try reader.report(StatusRequest(nextLengths: .release))
    #expect(kernel.duringSample == nil, "the writer committed during the report")
    #expect(try writer.sessionRecord().tunnel == InterfaceName("tun7"))
    #expect(report.snapshot.session?.tunnel == InterfaceName("tun7"), "the session of the commit the ledger came from")
    #expect(report.snapshot.interfaces.first?.ledger?.traffic.rxBytes == 500)
    // The ledger was read from the commit: the next report, with no commit between, agrees.
    let next = try reader.report(StatusRequest(nextLengths: .release))
    #expect(next.snapshot.session?.tunnel == InterfaceName("tun7"))
    #expect(next.snapshot.interfaces.first?.ledger?.traffic.rxBytes == 500)
  }

  @Test("a read inside a read joins it (both of one commit); a write inside a writer's read is refused, never joined")
  func readTransactionsNest() throws {
    let directory = try TemporaryDirectory("usecase-nesting")
    kernel.add("wg0", up: true)
    let location = try database(directory)
    let writer = try #require(try Store.open(location, intent: .write))
    let reader = try #require(try Store.open(location, intent: .read))
    let tunnels = try Store.inOneRead(reader) {
      let before = try reader.snapshot { try reader.sessionRecord().tunnel }
      _ = try writer.updateSession { record in record.tunnel = InterfaceName("tun7") }
      return (before, try reader.snapshot { try reader.sessionRecord().tunnel })
    }
    // The commit came during the outer read: it was read again, whole, and both saw the commit.
    #expect(tunnels.0 == InterfaceName("tun7") && tunnels.1 == InterfaceName("tun7"), "both reads of one commit")
    #expect(try reader.sessionRecord().tunnel == InterfaceName("tun7"), "outside it, the commit")
    #expect(throws: StoreError.self) {
      try writer.snapshot { try writer.updateSession { record in record.tunnel = nil } }
    }
    #expect(try writer.sessionRecord().tunnel == InterfaceName("tun7"), "the refused write changed nothing")
  }

  @Test("status without a database: the kernel's counters, no session, no ledger")
  func statusWithoutDatabase() throws {
    kernel.add("wg0", up: true)
    var reader = StatusReader(sampler: fakeSampler(kernel, clock), source: .none)
    let report = try reader.report(StatusRequest(nextLengths: .release))
    #expect(report.snapshot.interfaces.map(\.name) == [InterfaceName("wg0")])
    #expect(report.snapshot.session == nil && report.snapshot.interfaces[0].ledger == nil)
    #expect(report.missing.isEmpty)
  }

  @Test("session status: the window at the sample's time, with the manager; without a database, none opened")
  func sessionStatus() throws {
    let directory = try TemporaryDirectory("usecase-session")
    kernel.add("wg0", up: true)
    let location = try database(directory)
    clock.advance(.seconds(60))
    let (report, at, _) = try SessionView.status(
      nextLengths: .release, detector: detector, sampler: fakeSampler(kernel, clock),
      store: try Store.open(location, intent: .read))
    #expect(report.state == .active && report.manager?.kind == .wgQuick)
    #expect(at == clock.now().wall)
    let (none, _, _) = try SessionView.status(
      nextLengths: .release, detector: nil, sampler: fakeSampler(kernel, clock), store: nil)
    #expect(none.state == SessionState.none && none.canConnect)
  }

  @Test("the gate: the stored window at the reading; no database allows; the reading is the report's now")
  func gate() throws {
    let directory = try TemporaryDirectory("usecase-gate")
    kernel.add("wg0", up: true)
    let location = try database(directory)
    clock.advance(SessionLengths.release.session + .seconds(1))
    let paused = try SessionView.gate(
      location, timeout: .seconds(2), reading: clock.now(), nextLengths: .release, sampler: fakeSampler(kernel, clock),
      calendar: FixedOffsetCalendar.utc)
    #expect(!paused.canConnect)
    let absent = try SessionView.gate(
      StoreLocation(path: directory.file("absent.db")), timeout: .seconds(2), reading: clock.now(),
      nextLengths: .release, sampler: fakeSampler(kernel, clock), calendar: FixedOffsetCalendar.utc)
    #expect(absent.canConnect)
  }
}
