import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The ledger saved as a checkpoint: when the recorder and the enforcer write, what they write,
/// and that one writer at a time keeps the totals exact — on the fake kernel, a manual clock and
/// a temporary database.
struct CheckpointTests {
  let kernel = FakeKernel()
  let clock = ManualTimeSource()
  let log = CapturedLog()
  let tun7 = InterfaceName("tun7")

  func recorder(
    _ directory: TemporaryDirectory, saveInterval: Duration = .seconds(60),
    lock: any LedgerWriterLock = UncontendedLedgerLock()
  ) throws -> Recorder {
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: FixedOffsetCalendar.utc))
    return Recorder(
      sampler: fakeSampler(kernel, clock), store: store, textfileDirectory: nil, saveInterval: saveInterval, lock: lock,
      log: log)
  }

  /// The ledger as another process reads it from the file.
  func stored(_ directory: TemporaryDirectory) throws -> Ledger {
    try #require(try Store.open(StoreLocation(path: directory.file("v.db")), intent: .read)).loadLedger()
  }

  /// Every bucket of one granularity, as another process reads it.
  func buckets(_ directory: TemporaryDirectory, _ granularity: TrafficGranularity) throws -> [TrafficBucket] {
    try #require(try Store.open(StoreLocation(path: directory.file("v.db")), intent: .read)).buckets(
      granularity, since: 0)
  }

  @Test("the status line follows the interfaces recorded and who keeps the ledger, made again only when they change")
  func statusLineFollowsTheRecorder() throws {
    let directory = try TemporaryDirectory("ckstatus")
    let locks = LedgerLockState()
    locks.exclusive = "vpnstat enforce wg0"
    var recorder = try recorder(directory, lock: FakeLedgerLock(locks, role: "vpnstat record (pid 42)"))
    let path = directory.file("v.db")
    kernel.add("tun7", up: true)
    try recorder.sample()
    let first = recorder.keeper.ledger.entries.count
    #expect(first >= 1)
    #expect(!recorder.keeper.isWriting)
    let writer = try #require(recorder.keeper.writer)
    let recording = "recording \(first) interface\(first == 1 ? "" : "s") into \(path)"
    #expect(recorder.statusLine() == recording + " · \(writer) keeps the ledger")
    // The enforcer is gone: the recorder takes the ledger at its next sample, and the line says so.
    locks.release()
    clock.advance(.seconds(1))
    try recorder.sample()
    #expect(recorder.keeper.isWriting)
    #expect(recorder.statusLine() == recording)
    kernel.add("tun8", up: true)
    clock.advance(.seconds(1))
    try recorder.sample()
    #expect(recorder.statusLine() == "recording \(first + 1) interfaces into \(path)")
    #expect(recorder.statusLine() == "recording \(first + 1) interfaces into \(path)", "asked again, unchanged")
  }

  @Test("saved every save interval, not every sample: the database moves once a minute, memory every second")
  func savesAtTheInterval() throws {
    let directory = try TemporaryDirectory("ckint")
    var recorder = try recorder(directory)
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    let start = try stored(directory).entries[tun7]
    #expect(start != nil, "a name seen for the first time is saved at once")
    for second in 1...59 {
      clock.advance(.seconds(1))
      kernel.carry(index, rx: 100, tx: 10)
      try recorder.sample()
      #expect(recorder.keeper.ledger.entries[tun7]?.totals.traffic.rxBytes == UInt64(100 * second))
    }
    #expect(try stored(directory).entries[tun7] == start, "saved before the interval was over")
    clock.advance(.seconds(1))
    kernel.carry(index, rx: 100, tx: 10)
    try recorder.sample()
    #expect(try stored(directory).entries[tun7]?.totals.traffic.rxBytes == 6000)
    // Sixty samples, one row per bucket: the 5-minute, hour, day and month rows of tun7.
    for granularity in TrafficGranularity.allCases {
      let rows = try buckets(directory, granularity).filter { $0.name == tun7 }
      #expect(rows.count == 1, "\(granularity)")
      #expect(rows.first?.traffic.rxBytes == 6000 && rows.first?.traffic.txBytes == 600, "\(granularity)")
    }
  }

  @Test("samples across a 5-minute boundary: the buckets split as the samples fell, though saved together")
  func bucketsSplitAtTheirBoundary() throws {
    let directory = try TemporaryDirectory("ckbnd")
    // 30 s before a 5-minute (and hour) boundary: 1_800_000_000 is a multiple of 3600.
    clock.advance(.seconds(3600 - 30))
    var recorder = try recorder(directory)
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    for _ in 1...6 {
      clock.advance(.seconds(10))
      kernel.carry(index, rx: 100, tx: 0)
      try recorder.sample()
    }
    try recorder.finish(patience: 100)
    let boundary = Int64(1_800_000_000 + 3600)
    let five = try buckets(directory, .fiveMinutes).filter { $0.name == tun7 }.map { ($0.start, $0.traffic.rxBytes) }
    // Booked at -20 s and -10 s before the boundary; at 0, 10, 20 and 30 s after it.
    #expect(five.map(\.0) == [boundary - 300, boundary] && five.map(\.1) == [200, 400], "\(five)")
    let hours = try buckets(directory, .hour).filter { $0.name == tun7 }.map { ($0.start, $0.traffic.rxBytes) }
    #expect(hours.map(\.0) == [boundary - 3600, boundary] && hours.map(\.1) == [200, 400], "\(hours)")
  }

  @Test("a deleted instance's final counters are saved at once, before the interval is over")
  func deletionSavedAtOnce() throws {
    let directory = try TemporaryDirectory("ckdel")
    var recorder = try recorder(directory)
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    clock.advance(.seconds(3))
    kernel.carry(index, rx: 4321, tx: 1234)
    try recorder.book([kernel.delete(index)], overflowed: false)
    // No finish: what survives a kill -9 right now is what is stored.
    let entry = try #require(try stored(directory).entries[tun7])
    #expect(entry.totals.traffic.rxBytes == 4321 && entry.totals.traffic.txBytes == 1234)
    #expect(try buckets(directory, .day).first { $0.name == tun7 }?.traffic.rxBytes == 4321)
  }

  @Test("a window opened by another process is saved with the ledger at the next sample")
  func windowChangeSaved() throws {
    let directory = try TemporaryDirectory("ckwin")
    var recorder = try recorder(directory)
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    clock.advance(.seconds(2))
    kernel.carry(index, rx: 500, tx: 50)
    try recorder.sample()
    #expect(try stored(directory).entries[tun7]?.totals.traffic.rxBytes == 0)
    // An enforcer opens a window.
    let enforcer = try #require(try Store.open(recorder.store.location, intent: .write))
    try enforcer.updateSession { record in
      record.window = SessionWindow.open(
        at: clock.now().wall, lengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)))
    }
    clock.advance(.seconds(1))
    try recorder.sample()
    #expect(try stored(directory).entries[tun7]?.totals.traffic.rxBytes == 500)
    // Nothing changed since: the next samples do not save.
    clock.advance(.seconds(1))
    kernel.carry(index, rx: 7, tx: 0)
    try recorder.sample()
    #expect(try stored(directory).entries[tun7]?.totals.traffic.rxBytes == 500)
  }

  @Test(
    "the recorder's own saves are not read back: no connection opened for them; a window another process opens right after one is still saved at the next sample"
  )
  func ownSavesNotReadBack() throws {
    let directory = try TemporaryDirectory("ckown")
    var recorder = try recorder(directory, saveInterval: .seconds(10))
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    /// A sample after `seconds` with traffic; whether it saved (wrote the file).
    func sample(after seconds: Int64) throws -> Bool {
      let written = recorder.store.writtenVersion
      kernel.carry(index, rx: 100, tx: 10)
      clock.advance(.seconds(seconds))
      try recorder.sample()
      return recorder.store.writtenVersion != written
    }
    // The first save after the session was read (a new writer epoch) is read back once.
    #expect(try sample(after: 11))
    _ = try sample(after: 1)
    let opened = recorder.store.readConnections
    var saves = 0
    for _ in 0..<3 {
      if try sample(after: 11) { saves += 1 }
      _ = try sample(after: 1)
      _ = try sample(after: 1)
    }
    #expect(saves == 3)
    #expect(recorder.store.readConnections == opened, "each save of its own opened a connection to read it back")
    // Another process opens a window just after the recorder's save: the next sample reads it and
    // saves the ledger with it.
    #expect(try sample(after: 11))
    let enforcer = try #require(try Store.open(recorder.store.location, intent: .write))
    try enforcer.updateSession { record in
      record.window = SessionWindow.open(
        at: clock.now().wall, lengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)))
    }
    let before = try #require(try stored(directory).entries[tun7]).totals.traffic.rxBytes
    #expect(try sample(after: 1), "a window opened by another process is saved at once")
    #expect(try stored(directory).entries[tun7]?.totals.traffic.rxBytes == before + 100)
    #expect(recorder.store.readConnections > opened)
  }

  @Test(
    "between writes a sample does not read the database's stamp (the recorder watches its files), and another process's window still reaches the next save"
  )
  func noStampReadBetweenWrites() throws {
    let directory = try TemporaryDirectory("ckstamp")
    var recorder = try recorder(directory, saveInterval: .seconds(60))
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    clock.advance(.seconds(1))
    try recorder.sample()
    let reads = recorder.store.stampReads
    let written = recorder.store.writtenVersion
    for _ in 0..<5 {
      kernel.carry(index, rx: 100, tx: 10)
      clock.advance(.seconds(1))
      try recorder.sample()
    }
    #expect(recorder.store.writtenVersion == written, "no save between: the five samples only advanced memory")
    #expect(recorder.store.stampReads == reads, "a sample read the stamp with nothing written since the last read")
    // The watch still sees another process's commit: its window is saved at the next sample.
    let enforcer = try #require(try Store.open(recorder.store.location, intent: .write))
    try enforcer.updateSession { record in
      record.window = SessionWindow.open(
        at: clock.now().wall, lengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)))
    }
    kernel.carry(index, rx: 100, tx: 10)
    clock.advance(.seconds(1))
    try recorder.sample()
    #expect(recorder.store.stampReads == reads + 1, "the commit was read once, for the session and the ledger alike")
    #expect(recorder.store.writtenVersion != written, "the window another process opened was not saved at once")
    #expect(try stored(directory).entries[tun7]?.totals.traffic.rxBytes == 600)
  }

  @Test(
    "a window another process commits between the recorder's look at the file and its save is read at the next sample, not taken for the recorder's own write"
  )
  func commitBeforeOwnSave() throws {
    let directory = try TemporaryDirectory("ckrace")
    let claims = ClaimHook()
    var recorder = try recorder(directory, saveInterval: .seconds(10), lock: HookedLedgerLock(claims))
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    func sample(after seconds: Int64) throws {
      kernel.carry(index, rx: 100, tx: 10)
      clock.advance(.seconds(seconds))
      try recorder.sample()
    }
    try recorder.sample()
    try sample(after: 11)
    try sample(after: 1)
    let enforcer = try #require(try Store.open(recorder.store.location, intent: .write))
    // The enforcer commits as the recorder's due save claims the ledger: after the recorder
    // looked at the file in this sample, before its save.
    claims.before = {
      try enforcer.updateSession { record in
        record.window = SessionWindow.open(
          at: clock.now().wall, lengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)))
      }
    }
    try sample(after: 11)
    #expect(claims.ran == 1)
    let saved = try #require(try stored(directory).entries[tun7]).totals.traffic.rxBytes
    try sample(after: 1)
    #expect(
      try stored(directory).entries[tun7]?.totals.traffic.rxBytes == saved + 100,
      "the window was taken for the recorder's own write: the ledger was not saved with it")
  }

  @Test(
    "/metrics and the textfile show every sample, not every checkpoint: totals and a data cap's usage from memory"
  )
  func publishedEverySample() throws {
    let directory = try TemporaryDirectory("ckpub")
    var recorder = try recorder(directory, saveInterval: .seconds(3600))
    let exposition = MetricsExposition()
    recorder.exposition = exposition
    let textfile = try TemporaryDirectory("ckpubtext")
    recorder.textfileDirectory = textfile.path
    _ = try recorder.store.updateSession { $0.dataCap = DataCap(limitBytes: 1_000_000, period: UsagePeriod(.day)) }
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    for second in 1...3 {
      clock.advance(.seconds(1))
      kernel.carry(index, rx: 100, tx: 10)
      try recorder.sample()
      let body = String(decoding: try #require(exposition.body(.prometheus)), as: UTF8.self)
      #expect(
        body.contains("vpnstat_interface_receive_bytes_total{interface=\"tun7\",class=\"tunnel\"} \(100 * second)\n"),
        "\(body.prefix(600))")
      #expect(body.contains("vpnstat_data_cap_used_bytes{period=\"day\"} \(110 * second)\n"))
      let written = try String(contentsOfFile: textfile.file("vpnstat.prom"), encoding: .utf8)
      #expect(written == body)
    }
    // None of it is saved yet.
    #expect(try stored(directory).entries[tun7]?.totals.traffic.rxBytes == 0)
    #expect(try buckets(directory, .day).filter { $0.name == tun7 }.isEmpty)
  }

  @Test("a name that appears between checkpoints is saved at once: its starting point exists nowhere else")
  func newNameSavedAtOnce() throws {
    let directory = try TemporaryDirectory("cknew")
    var recorder = try recorder(directory)
    kernel.add("tun7", up: true)
    try recorder.sample()
    clock.advance(.seconds(5))
    kernel.add("tun8", up: true)
    kernel.carry(try #require(kernel.index(of: "tun8")), rx: 999, tx: 0)
    try recorder.sample()
    #expect(try stored(directory).entries[InterfaceName("tun8")]?.baseline.counters.rxBytes == 999)
  }

  @Test("killed between checkpoints: the next recorder books what the kernel counted since the last save")
  func killedBetweenCheckpoints() throws {
    let directory = try TemporaryDirectory("ckkill")
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    do {
      var first = try recorder(directory, saveInterval: .seconds(3600))
      try first.sample()
      for _ in 0..<10 {
        clock.advance(.seconds(1))
        kernel.carry(index, rx: 1000, tx: 100)
        try first.sample()
      }
      // Dropped without finish(): a kill -9.
    }
    #expect(try stored(directory).entries[tun7]?.totals.traffic.rxBytes == 0)
    clock.advance(.seconds(1))
    kernel.carry(index, rx: 1000, tx: 100)
    var second = try recorder(directory)
    try second.sample()
    let totals = try #require(try stored(directory).entries[tun7]?.totals)
    #expect(totals.traffic.rxBytes == 11_000 && totals.traffic.txBytes == 1100)
    #expect(totals.resets == 0)
  }

  @Test("stopping saves what memory holds, and the buckets add up to the totals")
  func stopSaves() throws {
    let directory = try TemporaryDirectory("ckstop")
    var recorder = try recorder(directory)
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    clock.advance(.seconds(7))
    kernel.carry(index, rx: 2500, tx: 700)
    try recorder.sample()
    try recorder.finish(patience: 100)
    let totals = try #require(try stored(directory).entries[tun7]?.totals)
    #expect(totals == recorder.keeper.ledger.entries[tun7]?.totals)
    #expect(totals.traffic.rxBytes == 2500)
    for granularity in TrafficGranularity.allCases {
      #expect(
        try buckets(directory, granularity).filter { $0.name == tun7 }.map(\.traffic.rxBytes).reduce(0, +) == 2500)
    }
  }

  @Test(
    "two writers of one name without the lock (an older vpnstat, a lock that cannot be used): totals exact, buckets equal to them"
  )
  func twoWritersReconcile() throws {
    let directory = try TemporaryDirectory("cktwo")
    kernel.add("tun7", up: true)
    var index = try #require(kernel.index(of: "tun7"))
    var a = try recorder(directory, saveInterval: .seconds(7))
    var b = try recorder(directory, saveInterval: .seconds(11))
    try a.sample()
    try b.sample()
    for second in 1...100 {
      clock.advance(.seconds(1))
      kernel.carry(index, rx: UInt64(100 + second), tx: 3)
      if second % 2 == 0 { try a.sample() } else { try b.sample() }
      if second == 50 {
        kernel.carry(index, rx: 77, tx: 0)
        let deleted = kernel.delete(index)
        try a.book([deleted], overflowed: false)
        try b.book([deleted], overflowed: false)
        kernel.add("tun7", up: true)
        index = try #require(kernel.index(of: "tun7"))
      }
    }
    try a.finish(patience: 100)
    try b.finish(patience: 100)
    var expected: UInt64 = 77
    for second in 1...100 { expected += UInt64(100 + second) }
    let totals = try #require(try stored(directory).entries[tun7]?.totals)
    #expect(totals.traffic.rxBytes == expected)
    #expect(totals.resets == 1)
    for granularity in TrafficGranularity.allCases {
      let sum = try buckets(directory, granularity).filter { $0.name == tun7 }.map(\.traffic.rxBytes).reduce(0, +)
      #expect(sum == expected, "\(granularity)")
    }
  }
}

/// One writer of the ledger at a time: a recorder and an enforcer on one database.
struct LedgerWriterTests {
  @Test(
    "while a recorder holds the ledger lock the enforcer reads (exact usage, no writes), and takes over when the recorder is gone"
  )
  func enforcerReadsWhileARecorderWrites() throws {
    let directory = try TemporaryDirectory("ckrole")
    let locks = LedgerLockState()
    let bench = try EnforcerBench(
      "ckrole", directory: directory, ledgerLock: FakeLedgerLock(locks, role: "vpnstat enforce wg0"))
    let store = try #require(
      try Store.open(bench.location, intent: .write, calendar: FixedOffsetCalendar.utc))
    var recorder = Recorder(
      sampler: fakeSampler(bench.kernel, bench.clock), store: store, textfileDirectory: nil,
      saveInterval: .seconds(3600), lock: FakeLedgerLock(locks, role: "vpnstat record (pid 42)"), log: bench.log)
    bench.kernel.add("wg0", up: true)
    let index = try #require(bench.kernel.index(of: "wg0"))
    try recorder.sample()
    #expect(locks.exclusive == "vpnstat record (pid 42)")
    try bench.handle(.started)
    let wg0 = InterfaceName("wg0")
    let afterStart = try store.loadLedger().entries[wg0]
    for _ in 0..<30 {
      bench.clock.advance(.seconds(5))
      bench.kernel.carry(index, rx: 1000, tx: 500)
      try bench.handle(.tick)
    }
    // 150 s: past the enforcer's save interval, not the recorder's. The enforcer read, exactly.
    #expect(bench.log.contains("vpnstat record (pid 42) keeps the ledger"))
    #expect(try store.loadLedger().entries[wg0] == afterStart, "the enforcer wrote while a recorder held the lock")
    #expect(bench.enforcer.tunnelTotals.rxBytes == 30_000 && bench.enforcer.tunnelTotals.txBytes == 15_000)
    // The recorder stops (its last save), and is gone.
    try recorder.finish(patience: 100)
    locks.release()
    bench.kernel.carry(index, rx: 1000, tx: 500)
    bench.clock.advance(.seconds(61))
    try bench.handle(.tick)
    #expect(bench.log.contains("no recorder keeps the ledger any more"))
    #expect(try store.loadLedger().entries[wg0]?.totals.traffic.rxBytes == 31_000)
    // And a deleted instance is saved by the enforcer at once.
    bench.clock.advance(.seconds(1))
    bench.kernel.carry(index, rx: 5, tx: 0)
    try bench.handle(.link(bench.kernel.delete(index)))
    #expect(try store.loadLedger().entries[wg0]?.totals.traffic.rxBytes == 31_005)
  }

  @Test(
    "an enforcer's save writes its rows and leaves the snapshot stale (readers read the rows); a recorder's first and last store it"
  )
  func enforcerLeavesSnapshot() throws {
    let directory = try TemporaryDirectory("cksnap")
    let kernel = FakeKernel()
    let clock = ManualTimeSource()
    let location = StoreLocation(path: directory.file("v.db"))
    let store = try #require(try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc))
    for name in ["eth0", "wlan0", "tun7"] { kernel.add(name, up: true) }
    let index = try #require(kernel.index(of: "tun7"))
    var recorder = LedgerKeeper(
      store: store, saveInterval: .seconds(60), role: .recorder, lock: UncontendedLedgerLock())
    var sampler = fakeSampler(kernel, clock)
    _ = try recorder.step(&sampler)
    let reader = try #require(try Store.open(location, intent: .read, calendar: FixedOffsetCalendar.utc))
    #expect(try reader.readSnapshot(sharingBootID: nil)?.entries.count == 3)
    // An enforcer (no recorder running) saves its tunnel: the rows are the ledger.
    var enforcer = LedgerKeeper(
      store: store, saveInterval: .seconds(60), role: .enforcer, lock: UncontendedLedgerLock())
    clock.advance(.seconds(5))
    kernel.carry(index, rx: 1000, tx: 500)
    #expect(try enforcer.saveNow(&sampler)?.saved == true)
    #expect(try reader.readSnapshot(sharingBootID: nil) == nil, "the enforcer stored the snapshot")
    let tun7 = InterfaceName("tun7")
    #expect(try reader.loadLedger().entries[tun7]?.totals.traffic.rxBytes == 1000)
    // The recorder's last save stores it again, of the rows as they are.
    clock.advance(.seconds(5))
    #expect(try recorder.saveNow(&sampler, last: true)?.saved == true)
    let stored = try #require(try reader.readSnapshot(sharingBootID: nil))
    #expect(stored.entries == (try reader.readLedger().entries))
    #expect(stored.entries[tun7]?.totals.traffic.rxBytes == 1000)
  }

  @Test("a recorder that starts while an enforcer saves reads for that sample, then claims the lock and writes")
  func recorderWaitsForAnEnforcersSave() throws {
    let directory = try TemporaryDirectory("ckwait")
    let kernel = FakeKernel()
    let clock = ManualTimeSource()
    let locks = LedgerLockState()
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: FixedOffsetCalendar.utc))
    var recorder = Recorder(
      sampler: fakeSampler(kernel, clock), store: store, textfileDirectory: nil, saveInterval: .seconds(60),
      lock: FakeLedgerLock(locks, role: "vpnstat record"), log: CapturedLog())
    kernel.add("tun7", up: true)
    locks.sharedSaves = 1
    try recorder.sample()
    #expect(!recorder.keeper.isWriting)
    #expect(try store.loadLedger().entries.isEmpty)
    locks.sharedSaves = 0
    clock.advance(.seconds(1))
    try recorder.sample()
    #expect(recorder.keeper.isWriting)
    #expect(try store.loadLedger().entries[InterfaceName("tun7")] != nil)
  }
}

/// What a `HookedLedgerLock` runs once, the next time the recorder claims the ledger for a save.
final class ClaimHook: @unchecked Sendable {
  var before: (() throws -> Void)?
  var ran = 0
}

/// An uncontended ledger lock that runs its hook's work as a save claims it: another process's
/// commit between the recorder's look at the file and its save.
struct HookedLedgerLock: LedgerWriterLock {
  let hook: ClaimHook
  init(_ hook: ClaimHook) { self.hook = hook }
  mutating func claim() throws -> Bool {
    if let before = hook.before {
      hook.before = nil
      hook.ran += 1
      try before()
    }
    return true
  }
  func sharing<T>(_ save: () throws -> T) throws -> (result: T?, holder: String?) { (try save(), nil) }
}
