import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// One-shot reports from what the recorder published (`PublishedState`): the recorder publishes
/// at every save and after its last, and a report made from it is the report the database gives.
struct PublishedReportTests {
  let kernel = FakeKernel()
  let clock = ManualTimeSource()
  let tun7 = InterfaceName("tun7")

  func recorder(_ location: StoreLocation) throws -> Recorder {
    let store = try #require(try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc))
    return Recorder(
      sampler: fakeSampler(kernel, clock), store: store, textfileDirectory: nil, saveInterval: .seconds(60),
      log: CapturedLog())
  }

  func published(_ location: StoreLocation) -> PublishedState? { PublishedState.load(location, sharingBootID: nil) }

  @Test(
    "the recorder publishes at each save and after its last (the checkpoint restarted the log); between saves it is current"
  )
  func recorderPublishes() throws {
    let directory = try TemporaryDirectory("pub-recorder")
    let location = StoreLocation(path: directory.file("v.db"))
    var recorder = try recorder(location)
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    #expect(published(location)?.ledger.entries[tun7] != nil, "the first save, of a new name, is published")
    for _ in 1...30 {
      clock.advance(.seconds(1))
      kernel.carry(index, rx: 100, tx: 10)
      try recorder.sample()
    }
    // Samples between saves write nothing: what was published is still the database.
    #expect(published(location)?.ledger.entries[tun7]?.totals.traffic.rxBytes == 0)
    // Another vpnstat writer's commit that leaves the ledger: published again, with its change.
    let other = try #require(try Store.open(location, intent: .write))
    try other.updateSession { $0.plan = .premium }
    #expect(published(location)?.session.record.plan == .premium)
    #expect(published(location)?.ledger.entries[tun7]?.totals.traffic.rxBytes == 0)
    // Another program's commit: stale until the recorder's next save.
    let foreign = try SQLiteConnection(uri: "file:" + location.path, readOnly: false, create: false)
    try foreign.execute("UPDATE session SET usage_rx_base = 1")
    #expect(published(location) == nil)
    clock.advance(.seconds(30))
    kernel.carry(index, rx: 100, tx: 10)
    try recorder.sample()
    let saved = try #require(published(location))
    #expect(saved.ledger.entries[tun7]?.totals.traffic.rxBytes == 3100)
    #expect(saved.session.record.plan == .premium)
    clock.advance(.seconds(1))
    kernel.carry(index, rx: 5, tx: 0)
    try recorder.finish(patience: 100)
    #expect(published(location)?.ledger.entries[tun7]?.totals.traffic.rxBytes == 3105)
  }

  @Test(
    "while its saves are published the recorder leaves the database's snapshot stale; a save it cannot publish, and its last, store it"
  )
  func snapshotOnlyWhenNotPublished() throws {
    let directory = try TemporaryDirectory("pub-snapshot")
    let location = StoreLocation(path: directory.file("v.db"))
    var recorder = try recorder(location)
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    let reader = try #require(try Store.open(location, intent: .read))
    func stored() throws -> UInt64? {
      try reader.readSnapshot(sharingBootID: nil)?.entries[tun7]?.totals.traffic.rxBytes
    }
    func save(rx: UInt64) throws {
      clock.advance(.seconds(61))
      kernel.carry(index, rx: rx, tx: 0)
      try recorder.sample()
    }
    try recorder.sample()
    #expect(try stored() == 0, "the first save, with nothing published yet, stores it")
    try save(rx: 100)
    #expect(published(location)?.ledger.entries[tun7]?.totals.traffic.rxBytes == 100)
    #expect(try stored() == nil, "published: the snapshot is left stale")
    #expect(try reader.loadLedger().entries[tun7]?.totals.traffic.rxBytes == 100, "readers read the rows")
    // A save it cannot publish (a directory in the file's place): from the next save on, the
    // snapshot is stored instead.
    let file = location.path + ".published"
    try FileManager.default.removeItem(atPath: file)
    try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false)
    try save(rx: 20)
    #expect(published(location) == nil)
    #expect(try stored() == nil)
    try save(rx: 30)
    #expect(try stored() == 150)
    try save(rx: 40)
    #expect(try stored() == 190)
    try FileManager.default.removeItem(atPath: file)
    try save(rx: 3)
    #expect(try stored() == 193, "the save after one not published")
    try save(rx: 4)
    #expect(published(location)?.ledger.entries[tun7]?.totals.traffic.rxBytes == 197)
    #expect(try stored() == nil)
    clock.advance(.seconds(1))
    kernel.carry(index, rx: 5, tx: 0)
    try recorder.finish(patience: 100)
    #expect(try stored() == 202, "the last save stores it: after a reboot nothing is published")
    #expect(published(location)?.ledger.entries[tun7]?.totals.traffic.rxBytes == 202)
  }

  /// A source of what was published for `location`, read in UTC; `opened` counts the database's
  /// opens it falls back to.
  func publishedSource(_ location: StoreLocation, opened: Counter? = nil) throws -> LedgerSource {
    let state = try #require(published(location))
    return .published(
      PublishedSource(state: state, calendar: FixedOffsetCalendar.utc) {
        opened?.count += 1
        return try Store.open(location, intent: .read, calendar: FixedOffsetCalendar.utc)
      })
  }

  final class Counter: @unchecked Sendable { var count = 0 }

  @Test(
    "a status report from what was published equals one from the database: the ledger advanced by the sample, the session (with a data cap's usage, or without one), the warnings",
    arguments: [false, true])
  func sameReport(capped: Bool) throws {
    let directory = try TemporaryDirectory("pub-report")
    let location = StoreLocation(path: directory.file("v.db"))
    kernel.add("wg0", up: true)
    kernel.add("eth9", up: true)
    let index = try #require(kernel.index(of: "wg0"))
    var recorder = try recorder(location)
    try recorder.store.updateSession { record in
      record.window = SessionWindow.open(at: clock.now().wall, lengths: .release)
      record.tunnel = InterfaceName("wg0")
      if capped { record.dataCap = DataCap(limitBytes: 10_000, period: UsagePeriod(.day)) }
    }
    try recorder.store.recordStop(StopRecord(at: clock.now().wall, interface: InterfaceName("wg0"), reason: .user))
    try recorder.sample()
    kernel.carry(index, rx: 3000, tx: 1000)
    clock.advance(.seconds(60))
    try recorder.sample()
    clock.advance(.seconds(7))
    kernel.carry(index, rx: 400, tx: 20)
    let detector = FixedDetector(
      manager: TunnelManager(kind: .wgQuick, id: "wg0", foundBy: .nothing, evidence: "test"))
    let opened = Counter()
    var fromFile = StatusReader(
      sampler: fakeSampler(kernel, clock), source: try publishedSource(location, opened: opened), managers: detector)
    var fromDatabase = StatusReader(
      sampler: fakeSampler(kernel, clock),
      source: LedgerSource(store: try Store.open(location, intent: .read, calendar: FixedOffsetCalendar.utc)),
      managers: detector)
    let request = StatusRequest(nextLengths: .release)
    let a = try fromFile.report(request).snapshot
    let b = try fromDatabase.report(request).snapshot
    #expect(opened.count == 0, "read from the file alone")
    #expect(a.interfaces.map { $0.ledger } == b.interfaces.map { $0.ledger })
    #expect(
      a.interfaces.first { $0.name == InterfaceName("wg0") }?.ledger?.traffic.rxBytes == 3400,
      "counted from its first sight")
    #expect(a.session == b.session)
    #expect(a.session?.state == .active && a.session?.lastStop?.reason == .user)
    if capped {
      // 3000 + 1000 saved in the buckets, 400 + 20 grown since: the sample's growth is counted.
      #expect(a.session?.dataCap?.used.rxBytes == 3400 && a.session?.dataCap?.used.txBytes == 1020)
    } else {
      #expect(a.session?.dataCap == nil)
    }
    #expect(a.warnings == b.warnings)
    #expect(a.classes == b.classes)
    // The published state is read by the first report only; the next reads no database.
    #expect(try fromFile.report(request).snapshot.session == nil)
  }

  @Test(
    "a data cap whose period turned since it was published: the report reads the database, and counts the new period"
  )
  func capPeriodTurned() throws {
    let directory = try TemporaryDirectory("pub-cap-turn")
    let location = StoreLocation(path: directory.file("v.db"))
    kernel.add("wg0", up: true)
    let index = try #require(kernel.index(of: "wg0"))
    var recorder = try recorder(location)
    try recorder.store.updateSession { $0.dataCap = DataCap(limitBytes: 10_000, period: UsagePeriod(.day)) }
    try recorder.sample()
    kernel.carry(index, rx: 3000, tx: 1000)
    clock.advance(.seconds(60))
    try recorder.sample()
    let published = try #require(published(location)?.capUsage)
    #expect(published.stored.rxBytes == 3000)
    // The next day, nothing saved since: the published usage is the day before's.
    clock.advance(.seconds(86_400))
    kernel.carry(index, rx: 50, tx: 5)
    let opened = Counter()
    var fromFile = StatusReader(
      sampler: fakeSampler(kernel, clock), source: try publishedSource(location, opened: opened))
    var fromDatabase = StatusReader(
      sampler: fakeSampler(kernel, clock),
      source: LedgerSource(store: try Store.open(location, intent: .read, calendar: FixedOffsetCalendar.utc)))
    let request = StatusRequest(nextLengths: .release)
    let a = try fromFile.report(request).snapshot
    let b = try fromDatabase.report(request).snapshot
    #expect(opened.count == 1)
    #expect(a.session == b.session)
    let cap = try #require(a.session?.dataCap)
    #expect(cap.periodStart.seconds == published.start + 86_400)
    #expect(cap.used.rxBytes == 50, "only the new day's growth")
    #expect(a.interfaces.map { $0.ledger } == b.interfaces.map { $0.ledger })
  }
}
