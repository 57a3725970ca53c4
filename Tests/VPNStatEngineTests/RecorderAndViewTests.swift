import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// A sampler on the fake kernel and the manual clock.
func fakeSampler(_ kernel: FakeKernel, _ clock: ManualTimeSource) -> TrafficSampler {
  TrafficSampler(reader: CounterReader(source: FakeCounters(kernel: kernel)), catalog: InterfaceCatalog(), clock: clock)
}

/// The recorder's steps in-process: samples, notifications, a database that is held, the textfile.
struct RecorderTests {
  let kernel = FakeKernel()
  let clock = ManualTimeSource()
  let log = CapturedLog()

  func recorder(
    _ directory: TemporaryDirectory, textfile: Bool = false, saveInterval: Duration = Recorder.defaultSaveInterval,
    lock: any LedgerWriterLock = UncontendedLedgerLock()
  ) throws -> (Recorder, Store, Box<[String]>) {
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: FixedOffsetCalendar.utc))
    let written = Box<[String]>([])
    let recorder = Recorder(
      sampler: fakeSampler(kernel, clock), store: store, textfileDirectory: textfile ? directory.path : nil,
      saveInterval: saveInterval, lock: lock, log: log,
      writeTextfile: { bytes, _ in written.value.append(String(decoding: bytes, as: UTF8.self)) })
    return (recorder, store, written)
  }

  @Test("samples book growth; a deleted tunnel's last counters from its notification; the recreation is a reset")
  func teardownBetweenSamples() throws {
    let directory = try TemporaryDirectory("rec")
    var (recorder, store, _) = try recorder(directory)
    kernel.add("tun7", up: true)
    let first = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    kernel.carry(first, rx: 1000, tx: 2000)
    clock.advance(.seconds(5))
    try recorder.sample()
    kernel.carry(first, rx: 300, tx: 400)
    try recorder.book([kernel.delete(first)], overflowed: false)
    kernel.add("tun7", up: true)
    let second = try #require(kernel.index(of: "tun7"))
    kernel.carry(second, rx: 50, tx: 60)
    clock.advance(.seconds(5))
    try recorder.sample()
    // In memory at once; in the database from the next checkpoint (here: stopping).
    let totals = try #require(recorder.keeper.ledger.entries[InterfaceName("tun7")]?.totals)
    #expect(totals.traffic.rxBytes == 1350 && totals.traffic.txBytes == 2460)
    #expect(totals.resets == 1)
    #expect(log.contains("tun7: reset (recreated, ifindex"))
    try recorder.finish(patience: 100)
    #expect(try store.loadLedger().entries[InterfaceName("tun7")]?.totals == totals)
  }

  @Test(
    "a database held by another writer: a deleted tunnel's last counters wait in memory, then are saved; the outage is one line"
  )
  func heldDatabase() throws {
    let directory = try TemporaryDirectory("held")
    var (recorder, store, _) = try recorder(directory)
    store.setBusyTimeout(milliseconds: 0)
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    kernel.carry(index, rx: 700, tx: 900)
    let other = try HeldWriterLock(store.location)
    try recorder.book([kernel.delete(index)], overflowed: false)
    try recorder.sample()
    #expect(recorder.keeper.memory?.hasUnsaved == true)
    #expect(recorder.keeper.ledger.entries[InterfaceName("tun7")]?.totals.traffic.rxBytes == 700)
    #expect(try store.loadLedger().entries[InterfaceName("tun7")]?.totals.traffic.rxBytes == 0)
    #expect(log.lines.filter { $0.contains("locked") }.count == 1)
    other.release()
    // Patient now: a process another test forks in parallel holds a copy of the lock's
    // descriptor (and so the lock) until it execs, which under load outlasts no wait at all.
    store.setBusyTimeout(milliseconds: 5000)
    try recorder.sample()
    #expect(recorder.keeper.memory?.hasUnsaved == false)
    #expect(try store.loadLedger().entries[InterfaceName("tun7")]?.totals.traffic.rxBytes == 700)
    #expect(log.contains("writable again"))
  }

  @Test("an overflow is counted in the database, said in the log, and followed by a sample")
  func overflow() throws {
    let directory = try TemporaryDirectory("ovf")
    var (recorder, store, _) = try recorder(directory)
    kernel.add("tun7", up: true)
    try recorder.sample()
    try recorder.book([], overflowed: true)
    #expect(try store.health().notificationOverflows == 1)
    #expect(log.contains("overflowed"))
  }

  @Test("after its first saves, the recorder compiles no SQL: every statement a sample or a save runs stays prepared")
  func savesCompileNothing() throws {
    let directory = try TemporaryDirectory("compile")
    var (recorder, store, _) = try recorder(directory, saveInterval: .seconds(10))
    kernel.add("tun7", up: true)
    kernel.add("eth0", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    try recorder.sample()
    var carried: UInt64 = 0
    /// Samples after `seconds`, with traffic: a save when the interval has passed.
    func sample(after seconds: Int64) throws {
      kernel.carry(index, rx: 100, tx: 200)
      carried += 100
      clock.advance(.seconds(seconds))
      try recorder.sample()
    }
    store.connection.countCompilations()
    // What the counter expired is compiled again at its next run: a save, a sample between.
    try sample(after: 11)
    try sample(after: 1)
    let warm = try #require(store.connection.compilations)
    #expect(warm > 0)
    for _ in 0..<3 {
      try sample(after: 1)
      try sample(after: 11)
    }
    #expect(store.connection.compilations == warm)
    // Those were saves.
    #expect(try store.loadLedger().entries[InterfaceName("tun7")]?.totals.traffic.rxBytes == carried)
  }

  @Test("after a save, the writer's saved entries and the store's ledger are one table, not two copies")
  func oneSavedTable() throws {
    let directory = try TemporaryDirectory("share")
    var (recorder, store, _) = try recorder(directory, saveInterval: .seconds(10))
    for i in 0..<20 { kernel.add("tun\(i)", up: true) }
    let index = try #require(kernel.index(of: "tun3"))
    try recorder.sample()
    kernel.carry(index, rx: 100, tx: 200)
    clock.advance(.seconds(11))
    try recorder.sample()
    let saved = try #require(recorder.keeper.memory?.saved)
    let stored = try #require(store.savedLedger?.entries)
    #expect(saved == stored)
    #expect(stored[InterfaceName("tun3")]?.totals.traffic.rxBytes == 100)
    // One table: the entries of both lie at one address.
    let savedAt = saved.values.withUnsafeBufferPointer { $0.baseAddress }
    let storedAt = stored.values.withUnsafeBufferPointer { $0.baseAddress }
    #expect(savedAt == storedAt)
  }

  @Test("the textfile is written after each sample, in the Prometheus format, with the session gauges")
  func textfile() throws {
    let directory = try TemporaryDirectory("tf")
    var (recorder, _, written) = try recorder(directory, textfile: true)
    kernel.add("wg0", up: true)
    try recorder.sample()
    try recorder.sample()
    #expect(written.value.count == 2)
    #expect(written.value.last?.contains("# TYPE vpnstat_interface_receive_bytes_total counter") == true)
    #expect(written.value.last?.contains("vpnstat_session_can_connect 1") == true)
  }
}

/// The live view's model in-process: refreshes, keys, what a pipe gets.
struct LiveViewTests {
  let kernel = FakeKernel()
  let clock = ManualTimeSource()

  func view(_ store: Store?) -> LiveView {
    LiveView(
      sampler: fakeSampler(kernel, clock), store: store, selection: InterfaceSelection(), interval: .seconds(1),
      nextLengths: .release, options: DisplayOptions(calendar: FixedOffsetCalendar.utc))
  }

  @Test("refreshes: rates from the second on, the ledger from the database advanced in memory, never written")
  func refreshes() throws {
    let directory = try TemporaryDirectory("view")
    let location = StoreLocation(path: directory.file("v.db"))
    let writer = try #require(try Store.open(location, intent: .write))
    kernel.add("wg0", up: true)
    let index = try #require(kernel.index(of: "wg0"))
    var sampler = fakeSampler(kernel, clock)
    _ = try writer.advanceLedger(now: clock.now().wall) { ((), sampler.observations(kernel.sample(at: clock))) }
    let before = try writer.loadLedger()
    var live = view(try Store.open(location, intent: .read))
    let first = try live.refresh()
    #expect(first.interfaces.first?.rate == nil)
    kernel.carry(index, rx: 4000, tx: 2000)
    clock.advance(.seconds(2))
    let second = try live.refresh()
    #expect(second.interfaces.first?.rate?.rxBytesPerSecond == 2000)
    #expect(second.interfaces.first?.ledger?.traffic.rxBytes == 4000)
    #expect(try writer.loadLedger().entries == before.entries, "a reader wrote the ledger")
    #expect(second.session?.state == SessionState.none)
  }

  @Test("a tunnel deleted between refreshes keeps its bytes in the totals shown")
  func deletedBetweenRefreshes() throws {
    let directory = try TemporaryDirectory("view2")
    let location = StoreLocation(path: directory.file("v.db"))
    let writer = try #require(try Store.open(location, intent: .write))
    kernel.add("tun3", up: true)
    let index = try #require(kernel.index(of: "tun3"))
    var sampler = fakeSampler(kernel, clock)
    _ = try writer.advanceLedger(now: clock.now().wall) { ((), sampler.observations(kernel.sample(at: clock))) }
    var live = view(try Store.open(location, intent: .read))
    try live.refresh()
    kernel.carry(index, rx: 900, tx: 100)
    live.book([kernel.delete(index)])
    kernel.add("tun3", up: true)
    kernel.carry(try #require(kernel.index(of: "tun3")), rx: 10, tx: 10)
    clock.advance(.seconds(1))
    let shown = try live.refresh()
    #expect(shown.interfaces.first?.ledger?.traffic.rxBytes == 910)
    #expect(shown.interfaces.first?.ledger?.resets == 1)
  }

  @Test("keys: q quits, b switches to bits, c cycles the classes present, ? shows help, others do nothing")
  func keys() throws {
    kernel.add("wg0", up: true)
    var live = view(nil)
    try live.refresh()
    #expect(live.press(UInt8(ascii: "b")) == .redraw && live.state.bits)
    #expect(live.press(UInt8(ascii: "c")) == .redraw && live.state.classFilter == .tunnel)
    #expect(live.press(UInt8(ascii: "c")) == .redraw && live.state.classFilter == nil)
    #expect(live.press(UInt8(ascii: "?")) == .redraw && live.state.showHelp)
    #expect(live.press(UInt8(ascii: "x")) == .none)
    #expect(live.press(UInt8(ascii: "q")) == .quit)
    #expect(live.screen(size: TerminalSize(columns: 80, rows: 24)).joined().contains("help"))
  }

  @Test("a pipe gets one plain line per interface, or one JSON object, per refresh")
  func pipeLines() throws {
    kernel.add("wg0", up: true)
    var live = view(nil)
    try live.refresh()
    let plain = String(decoding: live.lines(.plain), as: UTF8.self)
    #expect(plain.split(separator: "\n").count == 1 && plain.contains("tunnel wg0 up"))
    let json = live.lines(.json)
    #expect(json.last == 0x0A)
    #expect((try JSONSerialization.jsonObject(with: Data(json.dropLast())) as? [String: Any])?["interfaces"] != nil)
  }
}

/// A value a closure can change (the textfile writer's record).
/// The ledger as a reader loads it.
struct ReaderLedgerTests {
  @Test("a reader's ledger holds this boot's id as its clock's own String, so advancing compares identities")
  func sharedBootID() throws {
    let directory = try TemporaryDirectory("readerboot")
    let location = StoreLocation(path: directory.file("v.db"))
    let writer = try #require(try Store.open(location, intent: .write))
    let kernel = FakeKernel()
    // A boot id made at run time (36 bytes, stored apart from any other String).
    let clock = ManualTimeSource(bootID: UUID().uuidString.lowercased())
    for name in ["ifb0", "ifb1"] { kernel.add(name, up: true) }
    var sampler = fakeSampler(kernel, clock)
    _ = try writer.advanceLedger(now: clock.now().wall) { ((), sampler.observations(kernel.sample(at: clock))) }
    clock.advance(.seconds(1))
    // Idle interfaces: advancing leaves each baseline as loaded.
    var reader = fakeSampler(kernel, clock)
    let read = try ReaderSample.take(&reader, store: try Store.open(location, intent: .read))
    let entries = try #require(read.ledger).entries
    #expect(entries.count == 2)
    for entry in entries.values {
      #expect(storage(of: entry.baseline.instance.bootID) == storage(of: clock.now().bootID))
    }
  }

  @Test(
    "with no writer connected (a recorder's exit), a reader keeps its ledger: what it booked stays"
  )
  func noWriterKeepsBooked() throws {
    let directory = try TemporaryDirectory("readerkeep")
    let location = StoreLocation(path: directory.file("v.db"))
    let kernel = FakeKernel()
    let clock = ManualTimeSource()
    kernel.add("tun7", up: true)
    let index = try #require(kernel.index(of: "tun7"))
    do {
      let writer = try #require(try Store.open(location, intent: .write))
      var keeper = LedgerKeeper(
        store: writer, saveInterval: .seconds(60), role: .recorder, lock: UncontendedLedgerLock())
      var sampler = fakeSampler(kernel, clock)
      #expect(try keeper.saveNow(&sampler)?.saved == true)
    }
    let store = try #require(try Store.open(location, intent: .read))
    var view = LedgerView(store: store)
    var sampler = fakeSampler(kernel, clock)
    _ = try view.sample(&sampler)
    // The tunnel carries 1000 bytes and is deleted between samples: the reader books its last
    // counters, which only its memory holds.
    clock.advance(.seconds(1))
    kernel.carry(index, rx: 1000, tx: 500)
    let change = kernel.delete(index)
    let observed = sampler.observation(change)
    let observation = try #require(observed)
    sampler.apply(change)
    view.book([observation])
    // Nothing was committed since: no sample reloads the stored ledger (which says 0).
    for _ in 0..<3 {
      clock.advance(.seconds(1))
      let (_, ledger) = try view.sample(&sampler)
      #expect(ledger.entries[InterfaceName("tun7")]?.totals.traffic.rxBytes == 1000, "the reader reloaded")
    }
  }

  @Test("a reader reads each snapshot a writer stores: a name the writer saved shows its first-seen time")
  func readsNewSnapshot() throws {
    let directory = try TemporaryDirectory("readernew")
    let location = StoreLocation(path: directory.file("v.db"))
    let kernel = FakeKernel()
    let clock = ManualTimeSource()
    kernel.add("tun7", up: true)
    // The writer first and for good (in one process, SQLite shares the -shm as the first opened it).
    let writer = try #require(try Store.open(location, intent: .write))
    var keeper = LedgerKeeper(
      store: writer, saveInterval: .seconds(60), role: .recorder, lock: UncontendedLedgerLock())
    var writing = fakeSampler(kernel, clock)
    #expect(try keeper.saveNow(&writing)?.saved == true)
    var view = LedgerView(store: try #require(try Store.open(location, intent: .read)))
    var sampler = fakeSampler(kernel, clock)
    _ = try view.sample(&sampler)
    for name in ["tun8", "tun9"] {
      kernel.add(name, up: true)
      clock.advance(.seconds(1))
      let saved = clock.now().wall
      #expect(try keeper.saveNow(&writing)?.saved == true)
      clock.advance(.seconds(1))
      let (_, ledger) = try view.sample(&sampler)
      // The reader's own first sight of it would be a second later.
      #expect(ledger.entries[InterfaceName(name)]?.totals.firstSeenAt == saved, "the writer's save was not read")
    }
  }
}

final class Box<Value>: @unchecked Sendable {
  var value: Value
  init(_ value: Value) { self.value = value }
}
