import Testing

@testable import VPNStatEngine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The enforcer's hold on its database alone (`EnforcerDatabase`, `DatabaseOutage`), and the data
/// cap it checks from the ledger it keeps (`DataCapCheck`).
struct EnforcerDatabaseTests {
  struct Broken: Error, CustomStringConvertible {
    var description: String
  }

  @Test(
    "an outage is said once when it begins, again only for another problem, and once when everything kept was written")
  func outage() {
    let log = CapturedLog()
    var outage = DatabaseOutage(log: log)
    outage.failed(Broken(description: "locked"))
    outage.failed(Broken(description: "locked"))
    #expect(log.lines == ["database: locked — enforcing from memory; what is not written is kept and retried"])
    outage.failed(Broken(description: "disk full"))
    #expect(log.lines.count == 2 && outage.problem == "disk full")
    outage.recovered(nothingPending: false)
    #expect(log.lines.count == 2 && outage.problem != nil)
    outage.recovered(nothingPending: true)
    outage.recovered(nothingPending: true)
    #expect(log.lines.count == 3 && outage.problem == nil)
    #expect(log.lines.last == "database: readable and writable again; everything kept was written")
  }

  @Test("a database handed over later: asked again until it opens, a failure said, then the ledger kept in it")
  func reopen() throws {
    let directory = try TemporaryDirectory("edb-open")
    let location = StoreLocation(path: directory.file("v.db"))
    final class Script { var answer = 0 }
    let script = Script()
    let log = CapturedLog()
    var database = EnforcerDatabase(
      EnforcerStorage(
        store: nil,
        open: {
          switch script.answer {
          case 0: return nil
          case 1: throw Broken(description: "locked")
          default: return try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc)
          }
        }), tunnel: InterfaceName("wg0"), calendar: FixedOffsetCalendar.utc, log: log)
    #expect(!database.reopen() && database.store == nil && database.keeper == nil)
    script.answer = 1
    #expect(!database.reopen() && database.problem == "locked")
    script.answer = 2
    let opened = database.reopen()
    #expect(opened)
    #expect(database.store != nil && database.keeper != nil)
  }

  @Test("the ledger: kept while no recorder writes it; a recorder's claim said once, its end said once")
  func ledgerWriter() throws {
    let directory = try TemporaryDirectory("edb-ledger")
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: FixedOffsetCalendar.utc))
    let kernel = FakeKernel()
    let clock = ManualTimeSource()
    var sampler = fakeSampler(kernel, clock)
    let locks = LedgerLockState()
    let log = CapturedLog()
    var database = EnforcerDatabase(
      EnforcerStorage(store: store, ledgerLock: FakeLedgerLock(locks, role: "vpnstat enforce wg0")),
      tunnel: InterfaceName("wg0"), calendar: FixedOffsetCalendar.utc, log: log)
    let index = kernel.add("wg0", up: true).record.index
    database.advanceLedger(&sampler, notified: [], deleted: false, saveNow: true)
    kernel.carry(index, rx: 5000, tx: 7000)
    clock.advance(.seconds(5))
    database.advanceLedger(&sampler, notified: [], deleted: false, saveNow: false)
    #expect(database.tunnelTotals.rxBytes == 5000 && database.tunnelTotals.txBytes == 7000)
    locks.locked { locks.exclusive = "vpnstat record (pid 42)" }
    for _ in 0..<2 {
      clock.advance(.seconds(5))
      database.advanceLedger(&sampler, notified: [], deleted: false, saveNow: true)
    }
    #expect(log.lines == ["vpnstat record (pid 42) keeps the ledger: reading it meanwhile"])
    locks.release()
    clock.advance(.seconds(5))
    database.advanceLedger(&sampler, notified: [], deleted: false, saveNow: true)
    #expect(log.lines.last == "no recorder keeps the ledger any more: saving wg0's again")
    #expect(try store.tunnelTotals().rxBytes == 5000)
  }

  @Test(
    "the data cap: reached from the ledger this enforcer keeps; with the database gone, from the usage last read, while its period lasts"
  )
  func dataCap() throws {
    let directory = try TemporaryDirectory("edb-cap")
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: FixedOffsetCalendar.utc))
    let kernel = FakeKernel()
    let clock = ManualTimeSource(wall: Timestamp(rfc3339: "2027-01-15T08:00:00Z")!.seconds)
    var sampler = fakeSampler(kernel, clock)
    let log = CapturedLog()
    var database = EnforcerDatabase(
      EnforcerStorage(store: store), tunnel: InterfaceName("wg0"), calendar: FixedOffsetCalendar.utc, log: log)
    var outage = DatabaseOutage(log: log)
    var check = DataCapCheck(calendar: FixedOffsetCalendar.utc)
    let cap = DataCap(limitBytes: 10_000, period: UsagePeriod(.day))
    let index = kernel.add("wg0", up: true).record.index
    database.advanceLedger(&sampler, notified: [], deleted: false, saveNow: true)
    #expect(!check.reached(nil, keeper: database.keeper, at: clock.now().wall, outage: &outage))
    #expect(check.status == nil)
    kernel.carry(index, rx: 6000, tx: 3999)
    clock.advance(.seconds(5))
    database.advanceLedger(&sampler, notified: [], deleted: false, saveNow: false)
    #expect(!check.reached(cap, keeper: database.keeper, at: clock.now().wall, outage: &outage))
    #expect(check.status?.usedBytes == 9999)
    kernel.carry(index, rx: 1, tx: 0)
    clock.advance(.seconds(5))
    database.advanceLedger(&sampler, notified: [], deleted: false, saveNow: false)
    #expect(check.reached(cap, keeper: database.keeper, at: clock.now().wall, outage: &outage))
    #expect(check.reachedText == "data cap reached: ≈ 10.0 kB of 10.0 kB this day (100 %)")
    // No database: the usage last read holds until midnight, and not after.
    #expect(check.reached(cap, keeper: nil, at: Timestamp(rfc3339: "2027-01-15T23:59:00Z")!, outage: &outage))
    #expect(!check.reached(cap, keeper: nil, at: Timestamp(rfc3339: "2027-01-16T00:00:00Z")!, outage: &outage))
    #expect(outage.problem == nil)
  }
}
