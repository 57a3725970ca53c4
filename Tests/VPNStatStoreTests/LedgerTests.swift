import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The ledger's rules end to end through the Store, with an injected clock.
struct LedgerTests {
  let name = InterfaceName("tun0")

  func observation(
    _ rx: UInt64, _ tx: UInt64, index: Int32 = 7, boot: String = "boot-a", at clock: ManualTimeSource,
    width: CounterWidth = .bits64, plausible: Double = Ledger.defaultCapBytesPerSecond
  ) -> LedgerObservation {
    let now = clock.now()
    return LedgerObservation(
      name: name, interfaceClass: .tunnel,
      baseline: LedgerBaseline(
        instance: InterfaceInstance(index: index, bootID: boot),
        counters: TrafficCounts(rxBytes: rx, txBytes: tx, rxPackets: rx / 100, txPackets: tx / 100),
        width: width, wall: now.wall, boottime: now.boottime),
      plausibleBytesPerSecond: plausible)
  }

  func store(_ directory: TemporaryDirectory) throws -> Store {
    try #require(try Store.open(StoreLocation(path: directory.file("ledger.db")), intent: .write))
  }

  @Test("a recreated tunnel's counters are bridged: totals add every instance, resets counted, no phantom 4 GiB")
  func recreatedTunnel() throws {
    let directory = try TemporaryDirectory("ledger")
    let store = try store(directory)
    let clock = ManualTimeSource()
    _ = try store.advanceLedger([observation(0, 0, index: 7, at: clock)], now: clock.now().wall)
    clock.advance(.seconds(5))
    _ = try store.advanceLedger([observation(1000, 5000, index: 7, at: clock)], now: clock.now().wall)
    clock.advance(.seconds(5))
    // Recreated: a new ifindex, counters from zero.
    _ = try store.advanceLedger([observation(300, 700, index: 8, at: clock)], now: clock.now().wall)
    clock.advance(.seconds(5))
    let last = try store.advanceLedger([observation(400, 900, index: 8, at: clock)], now: clock.now().wall)
    let totals = try #require(last.ledger.entries[name]?.totals)
    #expect(totals.traffic.rxBytes == 1400)
    #expect(totals.traffic.txBytes == 5900)
    #expect(totals.resets == 1)
    #expect(totals.wraps == 0)
    // And a fresh connection reads the same from the file.
    let reopened = try #require(try Store.open(StoreLocation(path: directory.file("ledger.db")), intent: .read))
    #expect(try reopened.loadLedger().entries[name]?.totals == totals)
  }

  @Test("a loaded boot id equal to the one given is that String itself, however the rows mix boots")
  func sharedBootID() throws {
    let directory = try TemporaryDirectory("bootshare")
    let store = try store(directory)
    let clock = ManualTimeSource()
    // 36 bytes made at run time, as a boot id is: each String has storage of its own.
    let current = UUID().uuidString.lowercased()
    let older = UUID().uuidString.lowercased()
    let names = (0..<3).map { InterfaceName("ifb\($0)") }
    let observations = names.enumerated().map { at, name in
      var made = observation(0, 0, index: Int32(10 + at), boot: at == 1 ? older : current, at: clock)
      made.name = name
      return made
    }
    _ = try store.advanceLedger(observations, now: clock.now().wall)
    // The same bytes as another String, as a clock's readings hold them.
    let given = String(decoding: Array(current.utf8), as: UTF8.self)
    #expect(storage(of: given) != storage(of: current))
    let reader = try #require(try Store.open(StoreLocation(path: directory.file("ledger.db")), intent: .read))
    // From the rows, and from the snapshot (what `loadLedger` reads).
    let snapshot = try #require(try reader.readSnapshot(sharingBootID: given))
    for entries in [try reader.readLedger(sharingBootID: given).entries, snapshot.entries] {
      // Rows by name: this boot, an older boot, this boot again.
      #expect(storage(of: try #require(entries[names[0]]).baseline.instance.bootID) == storage(of: given))
      #expect(try #require(entries[names[1]]).baseline.instance.bootID == older)
      #expect(storage(of: try #require(entries[names[2]]).baseline.instance.bootID) == storage(of: given))
    }
  }

  /// Saves a ledger of names of several classes, boots and widths, with figures up to 2⁶⁴ − 1.
  func saveVaried(_ store: Store, clock: ManualTimeSource) throws {
    let kinds: [(String, InterfaceClass, String, CounterWidth)] = [
      ("tun0", .tunnel, UUID().uuidString.lowercased(), .bits64), ("wlan0", .wifi, "boot-b", .bits32),
      ("eth\u{e9}", .ethernet, "", .bits64), ("veth-x", .other, "unknown", .bits64),
    ]
    func observations(_ rx: UInt64) -> [LedgerObservation] {
      kinds.enumerated().map { at, kind in
        var made = observation(rx, rx / 2, index: Int32(3 + at), boot: kind.2, at: clock, width: kind.3)
        made.name = InterfaceName(kind.0)
        made.interfaceClass = kind.1
        return made
      }
    }
    _ = try store.advanceLedger(observations(UInt64.max - 10_000), now: clock.now().wall)
    clock.advance(.seconds(1))
    _ = try store.advanceLedger(observations(UInt64.max - 1), now: clock.now().wall)
  }

  @Test("a reader's next read sees what was committed after its last one, though it starts from that read's stamp")
  func nextReadSeesLaterCommit() throws {
    let directory = try TemporaryDirectory("next-read")
    let store = try store(directory)
    let clock = ManualTimeSource()
    try saveVaried(store, clock: clock)
    let reader = try #require(try Store.open(StoreLocation(path: directory.file("ledger.db")), intent: .read))
    let before = try reader.readLedger().entries
    #expect(before[InterfaceName("ifb7")] == nil)
    var added = observation(5, 6, index: 70, boot: "boot-b", at: clock)
    added.name = InterfaceName("ifb7")
    clock.advance(.seconds(1))
    _ = try store.advanceLedger([added], now: clock.now().wall)
    let after = try reader.readLedger().entries
    #expect(after[InterfaceName("ifb7")] != nil, "the commit after the reader's last read")
    #expect(after.count == before.count + 1)
  }

  @Test("the snapshot a writer stores beside the rows reads as the rows do, and readers read it")
  func snapshotIsTheRows() throws {
    let directory = try TemporaryDirectory("snapshot")
    let store = try store(directory)
    let clock = ManualTimeSource()
    try saveVaried(store, clock: clock)
    let reader = try #require(try Store.open(StoreLocation(path: directory.file("ledger.db")), intent: .read))
    let rows = try reader.readLedger().entries
    #expect(rows.count == 4)
    #expect(rows[InterfaceName("tun0")]?.totals.traffic.rxBytes == 9_999)
    let snapshot = try #require(try reader.readSnapshot(sharingBootID: nil))
    #expect(snapshot.entries == rows)
    #expect(try reader.loadLedger().entries == rows)
  }

  @Test(
    "the snapshot's bytes are its documented layout: entries by name, each text once in the order first met (class, then boot id), little-endian fields"
  )
  func snapshotLayout() throws {
    func entry(_ name: String, _ interfaceClass: InterfaceClass, boot: String, index: Int32, base: UInt64)
      -> LedgerEntry
    {
      LedgerEntry(
        name: InterfaceName(name), interfaceClass: interfaceClass,
        baseline: LedgerBaseline(
          instance: InterfaceInstance(index: index, bootID: boot),
          counters: TrafficCounts(rxBytes: base + 1, txBytes: base + 2, rxPackets: base + 3, txPackets: base + 4),
          width: index == 3 ? .bits32 : .bits64, wall: Timestamp(nanoseconds: Int64(base) + 5),
          boottime: Int64(base) + 6),
        totals: LedgerTotals(
          TrafficCounts(rxBytes: base + 7, txBytes: base + 8, rxPackets: base + 9, txPackets: base + 10),
          resets: base + 11, wraps: base + 12, discarded: base + 13, firstSeenAt: Timestamp(nanoseconds: -Int64(base))))
    }
    // Names in no order, classes and boots mixed, one name longer than a packed one.
    let entries = [
      entry("wlan0", .wifi, boot: "boot-b", index: 3, base: 300),
      entry("a-very-long-name-0", .other, boot: "boot-a", index: 9, base: 900),
      entry("eth0", .ethernet, boot: "boot-a", index: 2, base: 200),
      entry("wg0", .tunnel, boot: "boot-b", index: 5, base: 500),
      entry("eth1", .ethernet, boot: "boot-b", index: 4, base: 400),
    ]
    let ledger = Ledger(entries: Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0) }))
    var expected: [UInt8] = []
    func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { expected += $0 } }
    func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { expected += $0 } }
    let sorted = entries.sorted { $0.name < $1.name }
    var texts: [String] = []
    for entry in sorted {
      for text in [entry.interfaceClass.rawValue, entry.baseline.instance.bootID] where !texts.contains(text) {
        texts.append(text)
      }
    }
    u32(0x3173_6C76)
    u32(UInt32(entries.count))
    u32(UInt32(texts.count))
    for text in texts {
      u32(UInt32(text.utf8.count))
      expected += Array(text.utf8)
    }
    for entry in sorted {
      let b = entry.baseline
      let t = entry.totals
      u32(UInt32(entry.name.bytes.count))
      expected += entry.name.bytes
      u32(UInt32(texts.firstIndex(of: entry.interfaceClass.rawValue)!))
      u32(UInt32(texts.firstIndex(of: b.instance.bootID)!))
      u32(UInt32(bitPattern: b.instance.index))
      u32(UInt32(b.width.rawValue))
      for figure in [
        b.counters.rxBytes, b.counters.txBytes, b.counters.rxPackets, b.counters.txPackets,
        UInt64(bitPattern: b.wall.nanoseconds), UInt64(bitPattern: b.boottime), t.traffic.rxBytes, t.traffic.txBytes,
        t.traffic.rxPackets, t.traffic.txPackets, t.resets, t.wraps, t.discarded,
        UInt64(bitPattern: t.firstSeenAt.nanoseconds),
      ] {
        u64(figure)
      }
    }
    let encoded = LedgerSnapshot.encode(ledger)
    #expect(encoded == expected)
    #expect(texts == ["other", "boot-a", "ethernet", "boot-b", "tunnel", "wifi"])
    let decoded = try #require(encoded.withUnsafeBytes { LedgerSnapshot.decode($0, sharingBootID: nil) })
    #expect(decoded.entries == ledger.entries)
  }

  @Test("a snapshot that names an interface twice is damage, not believed; the same bytes with another name are read")
  func duplicateNameInSnapshot() throws {
    func entry(_ name: String, _ figure: UInt64) -> LedgerEntry {
      LedgerEntry(
        name: InterfaceName(name), interfaceClass: .tunnel,
        baseline: LedgerBaseline(
          instance: InterfaceInstance(index: 4, bootID: "boot-a"),
          counters: TrafficCounts(rxBytes: figure, txBytes: 1, rxPackets: 1, txPackets: 1), width: .bits64,
          wall: Timestamp(seconds: 5), boottime: 6),
        totals: LedgerTotals(firstSeenAt: Timestamp(seconds: 5)))
    }
    let ledger = Ledger(entries: [InterfaceName("wg0"): entry("wg0", 10), InterfaceName("wg5"): entry("wg5", 50)])
    let encoded = LedgerSnapshot.encode(ledger)
    func u32(_ at: Int) -> Int {
      Int(UInt32(littleEndian: encoded.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) }))
    }
    // Past the header and the texts, the first record: wg0's.
    var offset = 12
    for _ in 0..<u32(8) { offset += 4 + u32(offset) }
    let first = Array(encoded[offset..<offset + 4 + u32(offset) + LedgerSnapshot.fixedLength])
    func withThird(_ record: [UInt8]) -> Ledger? {
      var blob = encoded + record
      withUnsafeBytes(of: UInt32(3).littleEndian) { blob.replaceSubrange(4..<8, with: $0) }
      return blob.withUnsafeBytes { LedgerSnapshot.decode($0, sharingBootID: nil) }
    }
    #expect(withThird(first) == nil)
    var renamed = first
    renamed[6] = UInt8(ascii: "1")
    let read = try #require(withThird(renamed))
    #expect(read.entries.count == 3)
    #expect(read.entries[InterfaceName("wg1")]?.baseline.counters.rxBytes == 10)
    #expect(read.entries[InterfaceName("wg5")] == entry("wg5", 50))
  }

  @Test(
    "a snapshot read a piece at a time decodes as it does whole: pieces smaller than a record, a name longer than a piece, never the whole blob at once; a failed read or a wrong size is damage"
  )
  func snapshotReadInPieces() throws {
    func entry(_ name: String, _ figure: UInt64, boot: String) -> LedgerEntry {
      LedgerEntry(
        name: InterfaceName(name), interfaceClass: figure % 2 == 0 ? .tunnel : .ethernet,
        baseline: LedgerBaseline(
          instance: InterfaceInstance(index: Int32(figure), bootID: boot),
          counters: TrafficCounts(rxBytes: figure, txBytes: figure * 3, rxPackets: 7, txPackets: 9), width: .bits64,
          wall: Timestamp(seconds: 5), boottime: Int64(figure)),
        totals: LedgerTotals(
          TrafficCounts(rxBytes: figure * 11, txBytes: 1, rxPackets: 2, txPackets: 3), resets: figure, wraps: 1,
          discarded: 2, firstSeenAt: Timestamp(seconds: 4)))
    }
    var entries = (0..<40).map { entry("veth\($0)", UInt64($0), boot: $0 < 20 ? "boot-a" : "boot-b") }
    entries.append(entry(String(repeating: "a-long-name-", count: 30), 99, boot: "boot-a"))
    let ledger = Ledger(entries: Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0) }))
    let encoded = LedgerSnapshot.encode(ledger)
    let whole = try #require(encoded.withUnsafeBytes { LedgerSnapshot.decode($0, sharingBootID: nil) })
    #expect(whole.entries.count == 41)
    #expect(whole.entries == ledger.entries)

    /// Decodes `blob`, said to be `count` bytes, through reads of at most `piece`; the largest
    /// read asked for. `failing`: the read at that offset or after fails.
    func inPieces(_ blob: [UInt8], count: Int, piece: Int, failing: Int? = nil) -> (Ledger?, largest: Int) {
      var largest = 0
      let ledger = LedgerSnapshot.decode(
        count: count, piece: piece,
        reading: { buffer, offset in
          largest = max(largest, buffer.count)
          if let failing, offset + buffer.count > failing { return false }
          guard offset >= 0, offset + buffer.count <= blob.count else { return false }
          blob.withUnsafeBytes {
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<offset + buffer.count]))
          }
          return true
        }, sharingBootID: nil)
      return (ledger, largest)
    }
    for piece in [1, 7, 13, 64, 500, encoded.count, 10 * encoded.count] {
      let (read, largest) = inPieces(encoded, count: encoded.count, piece: piece)
      #expect(read?.entries == ledger.entries, "piece \(piece)")
      if piece < 200 {
        // A read asks for a piece, or for one record when a record is longer (the long name's).
        #expect(largest < encoded.count / 4, "piece \(piece): \(largest) of \(encoded.count)")
      }
    }
    #expect(inPieces(encoded, count: encoded.count, piece: 64, failing: encoded.count / 2).0 == nil)
    #expect(inPieces(encoded, count: encoded.count - 1, piece: 64).0 == nil)
    #expect(inPieces(encoded + [0], count: encoded.count + 1, piece: 64).0 == nil)
    #expect(inPieces(encoded, count: encoded.count + 1, piece: 64).0 == nil)
  }

  @Test(
    "a writer killed before its commit leaves frames at the log's end: readers read the commit before, and a reader open all along reads the next writer's commit"
  )
  func deadWriterFrames() throws {
    let directory = try TemporaryDirectory("deadframes")
    let path = directory.file("ledger.db")
    let clock = ManualTimeSource()
    do {
      let store = try store(directory)
      _ = try store.advanceLedger([observation(0, 0, at: clock)], now: clock.now().wall)
      clock.advance(.seconds(5))
      _ = try store.advanceLedger([observation(1000, 2000, at: clock)], now: clock.now().wall)
    }
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try reader.loadLedger().entries[name]?.totals.traffic.rxBytes == 1000)
    try dieMidWrite(path)
    #expect(try reader.loadLedger().entries[name]?.totals.traffic.rxBytes == 1000)
    #expect(try reader.reading { try reader.connection.scalar("SELECT count(*) FROM stops") } == 0)
    // A small commit after the dead writer's many pages.
    let next = try store(directory)
    clock.advance(.seconds(5))
    _ = try next.advanceLedger([observation(1500, 2000, at: clock)], now: clock.now().wall)
    #expect(try reader.loadLedger().entries[name]?.totals.traffic.rxBytes == 1500)
    let fresh = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try fresh.loadLedger().entries[name]?.totals.traffic.rxBytes == 1500)
  }

  @Test("a row any writer changes (an older vpnstat, plain SQL) makes the snapshot stale; the next save stores it")
  func snapshotInvalidated() throws {
    let directory = try TemporaryDirectory("snapshot2")
    let path = directory.file("ledger.db")
    let store = try store(directory)
    let clock = ManualTimeSource()
    try saveVaried(store, clock: clock)
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try reader.readSnapshot(sharingBootID: nil) != nil)
    // As a vpnstat that knows nothing of the snapshot writes: the rows alone.
    let older = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: false)
    try older.execute("UPDATE interfaces SET total_rx_bytes = 123456789 WHERE name = CAST('tun0' AS BLOB)")
    #expect(try reader.readSnapshot(sharingBootID: nil) == nil)
    #expect(try reader.loadLedger().entries[InterfaceName("tun0")]?.totals.traffic.rxBytes == 123_456_789)
    try older.execute(
      """
      INSERT INTO interfaces SELECT CAST('tun9' AS BLOB), class, first_seen_at, if_index + 10, boot, width, rx_bytes,
        tx_bytes, rx_packets, tx_packets, sampled_at, boottime, total_rx_bytes, total_tx_bytes, total_rx_packets,
        total_tx_packets, resets, wraps, discarded FROM interfaces WHERE name = CAST('tun0' AS BLOB)
      """)
    // A save that changes no row stores the snapshot again, of the rows as they are.
    clock.advance(.seconds(1))
    _ = try store.advanceLedger([], now: clock.now().wall)
    let again = try #require(try reader.readSnapshot(sharingBootID: nil))
    #expect(again.entries == (try reader.readLedger().entries))
    #expect(again.entries[InterfaceName("tun9")]?.totals.traffic.rxBytes == 123_456_789)
  }

  @Test("a damaged snapshot is not believed: readers read the rows")
  func damagedSnapshot() throws {
    let directory = try TemporaryDirectory("snapshot3")
    let path = directory.file("ledger.db")
    let store = try store(directory)
    try saveVaried(store, clock: ManualTimeSource())
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    let rows = try reader.readLedger().entries
    /// Another program, one write at a time: its own connection each time, closed after.
    func raw(_ sql: String) throws {
      let connection = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: false)
      try connection.execute(sql)
    }
    // Shortened, lengthened, empty, another magic, a count too large, a text longer than the blob.
    for damage in [
      "substr(data, 1, length(data) - 1)", "data || x'00'", "x''", "x'00' || substr(data, 2)",
      "substr(data, 1, 4) || x'ffffff7f' || substr(data, 9)", "substr(data, 1, 12) || x'ffffffff' || substr(data, 17)",
    ] {
      try raw("UPDATE ledger_snapshot SET data = \(damage)")
      #expect(try reader.readSnapshot(sharingBootID: nil) == nil, "\(damage)")
      #expect(try reader.loadLedger().entries == rows, "\(damage)")
      // The writer's own again for the next damage (marked stale, as a changed row marks it).
      try raw("DELETE FROM ledger_snapshot_current")
      _ = try store.advanceLedger([], now: Timestamp(seconds: 1_800_000_100))
      #expect(try reader.readSnapshot(sharingBootID: nil)?.entries == rows)
    }
  }

  @Test("a file no writer of this vpnstat has opened (no snapshot table) is read from its rows and left as it is")
  func fileWithoutSnapshot() throws {
    let directory = try TemporaryDirectory("nosnapshot")
    let path = directory.file("ledger.db")
    _ = try FileSystem.createFile(path, mode: 0o644)
    let older = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: true)
    for step in Store.migrations { try older.execute(step) }
    try older.execute(
      """
      PRAGMA application_id = \(Store.applicationID); PRAGMA user_version = \(Store.schemaVersion);
      INSERT INTO boots (id, boot_id) VALUES (1, 'boot-a');
      INSERT INTO interfaces (name, class, first_seen_at, if_index, boot, width, rx_bytes, tx_bytes, rx_packets,
        tx_packets, sampled_at, boottime, total_rx_bytes)
      VALUES (CAST('wg0' AS BLOB), 'tunnel', 1, 5, 1, 64, 10, 20, 1, 2, 3, 4, 777)
      """)
    let before = contents(path)
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try reader.readSnapshot(sharingBootID: nil) == nil)
    #expect(try reader.loadLedger().entries[InterfaceName("wg0")]?.totals.traffic.rxBytes == 777)
    #expect(contents(path) == before, "a reader changed the file")
  }

  @Test("a changed boot id is a reset, never a wrap, even with 32-bit counters and the same ifindex")
  func reboot() throws {
    let directory = try TemporaryDirectory("reboot")
    let store = try store(directory)
    let clock = ManualTimeSource()
    _ = try store.advanceLedger([observation(4_000_000_000, 10, at: clock, width: .bits32)], now: clock.now().wall)
    clock.reboot(bootID: "boot-b")
    let result = try store.advanceLedger(
      [observation(1000, 20, boot: "boot-b", at: clock, width: .bits32)], now: clock.now().wall)
    let totals = try #require(result.ledger.entries[name]?.totals)
    #expect(totals.resets == 1 && totals.wraps == 0)
    #expect(totals.traffic.rxBytes == 1000 && totals.traffic.txBytes == 20)
    #expect(result.advance.events.map(\.kind) == [.reset])
    #expect(result.advance.events.first.map(LedgerEventText.detail)?.contains("rebooted") == true)
  }

  @Test("32-bit wraps are exact and counted")
  func wraps() throws {
    var ledger = Ledger()
    let clock = ManualTimeSource()
    var counter: UInt64 = 0
    var truth: UInt64 = 0
    _ = ledger.advance([observation(0, 0, at: clock, width: .bits32)])
    for _ in 0..<10 {
      clock.advance(.seconds(1))
      truth += 1_000_000_007
      counter = truth % (1 << 32)
      _ = ledger.advance([observation(counter, counter, at: clock, width: .bits32)])
    }
    let totals = try #require(ledger.entries[name]?.totals)
    #expect(totals.traffic.rxBytes == truth)
    #expect(totals.wraps == truth / (1 << 32))
  }

  @Test(
    "a delta faster than plausible is discarded and counted, on rx or on tx, and the next one counts from it",
    arguments: ["rx", "tx"])
  func implausible(direction: String) throws {
    var ledger = Ledger()
    let clock = ManualTimeSource()
    let linkSpeed = 1e9 / 8  // 1 Gbit/s
    /// `spiked` bytes in the direction under test, `other` in the other one.
    func reading(_ spiked: UInt64, _ other: UInt64) -> LedgerObservation {
      direction == "tx"
        ? observation(other, spiked, at: clock, plausible: linkSpeed)
        : observation(spiked, other, at: clock, plausible: linkSpeed)
    }
    _ = ledger.advance([reading(0, 0)])
    clock.advance(.seconds(5))
    let glitch = ledger.advance([reading(1 << 62, 100)])
    #expect(glitch.events.map(\.kind) == [.discarded])
    #expect(glitch.booked.isEmpty)
    clock.advance(.seconds(5))
    _ = ledger.advance([reading((1 << 62) + 5000, 200)])
    let totals = try #require(ledger.entries[name]?.totals)
    #expect(totals.discarded == 1)
    // The discarded sample's traffic went with it; the next delta counts from its counters.
    let (spiked, other) =
      direction == "tx"
      ? (totals.traffic.txBytes, totals.traffic.rxBytes) : (totals.traffic.rxBytes, totals.traffic.txBytes)
    #expect(spiked == 5000 && other == 100)
  }

  @Test("a name seen for the first time books nothing: totals count only the traffic vpnstat saw happen")
  func firstSightBooksNothing() throws {
    let directory = try TemporaryDirectory("first")
    let store = try store(directory)
    let clock = ManualTimeSource()
    let first = try store.advanceLedger([observation(7_000_000, 9_000, at: clock)], now: clock.now().wall)
    #expect(first.advance.booked.isEmpty)
    #expect(first.ledger.entries[name]?.totals == LedgerTotals(firstSeenAt: clock.now().wall))
    clock.advance(.seconds(5))
    _ = try store.advanceLedger([observation(7_001_000, 9_500, at: clock)], now: clock.now().wall)
    let totals = try #require(try store.loadLedger().entries[name]?.totals)
    #expect(totals.traffic.rxBytes == 1000 && totals.traffic.txBytes == 500)
    #expect(try store.buckets(.month, since: 0).map(\.traffic.rxBytes) == [1000])
  }

  @Test("a recreated instance is counted from zero even when its counters are already past the old ones")
  func recreatedAhead() throws {
    var ledger = Ledger()
    let clock = ManualTimeSource()
    _ = ledger.advance([observation(0, 0, index: 7, at: clock)])
    clock.advance(.seconds(5))
    _ = ledger.advance([observation(1000, 2000, index: 7, at: clock)])
    clock.advance(.seconds(5))
    // Deleted and made again between two polls, and busier since than the old one ever was.
    let recreated = ledger.advance([observation(50_000, 70_000, index: 8, at: clock)])
    #expect(recreated.events.map(\.kind) == [.reset])
    let totals = try #require(ledger.entries[name]?.totals)
    #expect(totals.traffic.rxBytes == 51_000 && totals.traffic.txBytes == 72_000)
    #expect(totals.resets == 1)
  }

  @Test("a poll stamped before the stored baseline adds nothing: another writer committed a newer one first")
  func earlierPollAddsNothing() throws {
    var ledger = Ledger()
    let clock = ManualTimeSource()
    _ = ledger.advance([observation(0, 0, at: clock)])
    clock.advance(.seconds(1))
    let early = observation(5000, 5000, at: clock)  // sampled first, committed last
    clock.advance(.milliseconds(10))
    _ = ledger.advance([observation(6000, 6000, at: clock)])
    let late = ledger.advance([early])
    #expect(late.events.isEmpty && late.booked.isEmpty)
    clock.advance(.seconds(1))
    _ = ledger.advance([observation(7000, 7000, at: clock)])
    let totals = try #require(ledger.entries[name]?.totals)
    #expect(totals.traffic.rxBytes == 7000 && totals.traffic.txBytes == 7000)
    #expect(totals.resets == 0)
  }

  @Test(
    "netlink and getifaddrs sharing one database: 64-, 32- and 64-bit readings of one instance book exactly the traffic"
  )
  func mixedWidths() throws {
    let directory = try TemporaryDirectory("widths")
    let store = try store(directory)
    let clock = ManualTimeSource()
    /// The counters as a reader of `width` sees them: getifaddrs truncates each to 32 bits.
    func reading(_ truth: UInt64, _ width: CounterWidth) -> LedgerObservation {
      var seen = observation(truth, truth + 777, at: clock, width: width)
      if width == .bits32 {
        seen.baseline.counters = seen.baseline.counters.masked32
      }
      return seen
    }
    // Past 2^33: the 32-bit view is more than one wrap behind the 64-bit one.
    var truth: UInt64 = 10_000_000_000
    _ = try store.advanceLedger([reading(truth, .bits64)], now: clock.now().wall)
    var fed: UInt64 = 0
    for (step, width) in [(4000, CounterWidth.bits32), (6000, .bits64), (3_000_000_000, .bits32), (8000, .bits64)] {
      clock.advance(.seconds(2))
      truth += UInt64(step)
      fed += UInt64(step)
      _ = try store.advanceLedger([reading(truth, width)], now: clock.now().wall)
    }
    let totals = try #require(try store.loadLedger().entries[name]?.totals)
    #expect(totals.traffic.rxBytes == fed && totals.traffic.txBytes == fed)
    // One real wrap (the 3 GB step crossed 2^32 in the 32-bit view), nothing reset or discarded.
    #expect(totals.wraps == 1 && totals.resets == 0 && totals.discarded == 0)
  }

  @Test("a long gap still counts: the instance is tracked, so nothing needs throwing away")
  func longGap() throws {
    var ledger = Ledger()
    let clock = ManualTimeSource()
    _ = ledger.advance([observation(0, 0, at: clock)])
    clock.suspend(.seconds(3 * 86_400))
    _ = ledger.advance([observation(80_000_000, 9_000, at: clock)])
    #expect(ledger.entries[name]?.totals.traffic.rxBytes == 80_000_000)
  }

  @Test("a reading queued behind a newer one (a late notification, a slower sampler) never moves the instance back")
  func staleNotification() throws {
    var ledger = Ledger()
    let clock = ManualTimeSource()
    _ = ledger.advance([observation(0, 0, at: clock)])
    clock.advance(.seconds(1))
    _ = ledger.advance([observation(5000, 5000, at: clock)])
    clock.advance(.seconds(1))
    let stale = ledger.advance([observation(4000, 4000, at: clock)])
    #expect(stale.events.isEmpty)
    clock.advance(.seconds(1))
    _ = ledger.advance([observation(6000, 6000, at: clock)])
    #expect(ledger.entries[name]?.totals.traffic.rxBytes == 6000)
    #expect(ledger.entries[name]?.totals.resets == 0)
  }

  @Test("two connections advancing in turn keep one consistent ledger (each advance against the stored baseline)")
  func interleavedWriters() throws {
    let directory = try TemporaryDirectory("two")
    let a = try store(directory)
    let b = try store(directory)
    let clock = ManualTimeSource()
    var counter: UInt64 = 0
    _ = try a.advanceLedger([observation(0, 0, at: clock)], now: clock.now().wall)
    for i in 0..<40 {
      clock.advance(.milliseconds(100))
      counter += 1000
      _ = try (i % 3 == 0 ? a : b).advanceLedger([observation(counter, counter, at: clock)], now: clock.now().wall)
    }
    #expect(try a.loadLedger().entries[name]?.totals.traffic.rxBytes == counter)
    #expect(try b.loadLedger().entries[name]?.totals.traffic.txBytes == counter)
    // Each advance booked only its own delta: a stale ledger would book the other's again.
    try expectBucketsMatchTotals(b, name, try #require(try b.loadLedger().entries[name]?.totals))
  }

  @Test("buckets add up per 5 minutes, hour, day and month, and old ones are pruned")
  func buckets() throws {
    let directory = try TemporaryDirectory("buckets")
    let store = try store(directory)
    let clock = ManualTimeSource(wall: 1_800_000_000)
    _ = try store.advanceLedger([observation(0, 0, at: clock)], now: clock.now().wall)
    var rx: UInt64 = 0
    for _ in 0..<(12 * 24 * 3) {  // three days of 5-minute samples
      clock.advance(.seconds(300))
      rx += 1000
      _ = try store.advanceLedger([observation(rx, 0, at: clock)], now: clock.now().wall)
    }
    for granularity in TrafficGranularity.allCases {
      let buckets = try store.buckets(granularity, since: 0)
      #expect(buckets.reduce(0) { $0 + $1.traffic.rxBytes } <= rx)
      // Pruning runs once an hour, so up to an hour's worth more may be kept meanwhile.
      #expect(buckets.count <= granularity.retainedBuckets + (granularity == .fiveMinutes ? 12 : 1), "\(granularity)")
    }
    // Months and days keep everything of three days; 5-minute buckets only 48 hours.
    #expect(try store.buckets(.month, since: 0).reduce(0) { $0 + $1.traffic.rxBytes } == rx)
    #expect(try store.buckets(.day, since: 0).reduce(0) { $0 + $1.traffic.rxBytes } == rx)
    #expect((576...588).contains(try store.buckets(.fiveMinutes, since: 0).count))
    let history = TrafficHistory.make(
      buckets: try store.buckets(.hour, since: 0), granularity: .hour, count: 24, now: clock.now().wall,
      grouping: .class, selection: InterfaceSelection(), calendar: SystemCalendar())
    #expect(history.series.count == 1)
    #expect(history.series[0].rows.count == 24)
    // Full hours hold 12 samples; the current hour, starting now, holds one.
    #expect(history.series[0].rows.dropLast().allSatisfy { $0.traffic.rxBytes == 12_000 })
    #expect(history.series[0].rows.last?.traffic.rxBytes == 1000)
  }
}

/// Writers racing for real on one database: threads with connections of their own, and processes.
/// Each advance must be one transaction against the stored baseline, or two writers both book the
/// same delta into the buckets (the totals, written last, hide it).
struct ConcurrentWriterTests {
  let name = InterfaceName("tun0")

  @Test(
    "threads racing on one database, each with its own connection: every bucket granularity adds up to the totals, the totals to what was fed"
  )
  func racingThreads() throws {
    let directory = try TemporaryDirectory("race")
    let path = directory.file("v.db")
    _ = try #require(try Store.open(StoreLocation(path: path), intent: .write))
    // One interface's readings, 20 s apart over 200 minutes (many 5-minute and several hourly buckets).
    let clock = ManualTimeSource(wall: 1_800_000_000)
    var feed: [LedgerObservation] = []
    for i in UInt64(0)...600 {
      let now = clock.now()
      feed.append(
        LedgerObservation(
          name: name, interfaceClass: .tunnel,
          baseline: LedgerBaseline(
            instance: InterfaceInstance(index: 7, bootID: "boot-a"),
            counters: TrafficCounts(rxBytes: i * 1000, txBytes: i * 3000, rxPackets: i * 2, txPackets: i * 5),
            width: .bits64, wall: now.wall, boottime: now.boottime),
          plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond))
      clock.advance(.seconds(20))
    }
    // Every thread advances the whole feed in order, in step: all of them advance the same
    // reading at the same moment. Whichever commits first books it; the others must find it
    // booked and add nothing.
    let readings = feed
    let step = Barrier(8)
    let failures = onThreads(8) { _ in
      // Every thread reaches every step, also after a failure, or the others would wait forever.
      var failure: (any Error)?
      let store: Store?
      do {
        store = try Store.open(StoreLocation(path: path), intent: .write, busyTimeoutMilliseconds: 60_000)
      } catch {
        store = nil
        failure = error
      }
      for observation in readings {
        step.wait()
        do {
          _ = try store?.advanceLedger([observation], now: observation.baseline.wall)
        } catch {
          failure = failure ?? error
        }
      }
      if let failure { throw failure }
    }
    #expect(failures.isEmpty, "\(failures)")
    let store = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    let totals = try #require(try store.loadLedger().entries[name]?.totals)
    #expect(totals.traffic.rxBytes == 600_000 && totals.traffic.txBytes == 1_800_000)
    #expect(totals.traffic.rxPackets == 1200 && totals.traffic.txPackets == 3000)
    #expect(totals.resets == 0 && totals.discarded == 0)
    try expectBucketsMatchTotals(store, name, totals)
  }

  @Test(
    "a reader reading while a writer commits and checks the log into the file: every read is one commit (the buckets add up to the totals)"
  )
  func readsAcrossCheckpoints() throws {
    let directory = try TemporaryDirectory("readcut")
    let path = directory.file("v.db")
    /// Every interface's counters at `round`, a new 5-minute bucket each round (new rows, new pages).
    @Sendable func save(_ round: UInt64, _ writer: Store) throws {
      let wall = 1_800_000_000 + Int64(round) * 301
      let observations = (0..<40).map { at in
        LedgerObservation(
          name: InterfaceName("t\(at)"), interfaceClass: .tunnel,
          baseline: LedgerBaseline(
            instance: InterfaceInstance(index: Int32(10 + at), bootID: "boot-a"),
            counters: TrafficCounts(rxBytes: round * 1000, txBytes: round * 10, rxPackets: round, txPackets: round),
            width: .bits64, wall: Timestamp(seconds: wall), boottime: (wall - 1_700_000_000) * 1_000_000_000),
          plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
      }
      _ = try writer.advanceLedger(observations, now: Timestamp(seconds: wall))
    }
    try save(0, try #require(try Store.open(StoreLocation(path: path), intent: .write)))
    let done = Flag()
    let reads = Counter()
    let failures = onThreads(2) { thread in
      if thread == 0 {
        defer { done.set() }
        let writer = try #require(try Store.open(StoreLocation(path: path), intent: .write))
        for round in UInt64(1)...400 {
          try save(round, writer)
          // Every commit starts the log over, written over the last log's frames at the same
          // size: the case a stamp of the log's size and salts alone once missed.
          writer.checkpoint()
        }
      } else {
        // What is asked is whether a read is ever of two commits, not how soon one gets through
        // a writer that never pauses (under load, not within the default 2 s): it may wait.
        let reader = try #require(
          try Store.open(StoreLocation(path: path), intent: .read, busyTimeoutMilliseconds: 60_000))
        repeat {
          let (ledger, buckets) = try reader.snapshot {
            (try reader.readLedger(), try reader.buckets(.fiveMinutes, since: 0))
          }
          let totals = ledger.entries.reduce(UInt64(0)) { $0 + $1.value.totals.traffic.rxBytes }
          let booked = buckets.reduce(UInt64(0)) { $0 + $1.traffic.rxBytes }
          if totals != booked { throw TestSetupError("a read of two commits: totals \(totals), buckets \(booked)") }
          _ = reads.next()
        } while !done.isSet
      }
    }
    #expect(failures.isEmpty, "\(failures)")
    #expect(reads.count >= 1, "no read while the writer wrote")
  }

  @Test(
    "processes racing on one database: a recorder and five status runs at once — every reader shows the exact totals, the buckets equal them"
  )
  func racingProcesses() throws {
    let tree = try SysfsFixture()
    let device = "wlan9"
    var rx: UInt64 = 1_000_000
    var tx: UInt64 = 2_000_000
    try tree.add(device, index: 9, rx: rx, tx: tx, uevent: "DEVTYPE=wlan")
    let directory = try TemporaryDirectory("raceproc")
    let db = directory.file("v.db")
    let common = ["--sysfs-root", tree.directory.path, "--db", db]
    let first = try run(Built.vpnstat, ["record", "--count", "1"] + common)
    #expect(first.status == 0, "\(first.errors)")
    for round in UInt64(1)...12 {
      rx += 1500 * round
      tx += 700
      for (file, value) in [("rx_bytes", rx), ("tx_bytes", tx), ("rx_packets", rx / 100), ("tx_packets", tx / 100)] {
        try Data("\(value)\n".utf8).write(to: tree.directory.appendingPathComponent("\(device)/statistics/\(file)"))
      }
      // The recorder advances the ledger while five readers read it and the same counters.
      let writer = try ChildProcess(Built.vpnstat, ["record", "--count", "1"] + common)
      let readers = try (0..<5).map { _ in try ChildProcess(Built.vpnstat, ["status", "--json", "-i", device] + common)
      }
      writer.closeInput()
      #expect(writer.wait() == 0, "\(String(decoding: writer.stderrData, as: UTF8.self))")
      for reader in readers {
        reader.closeInput()
        #expect(reader.wait() == 0, "\(String(decoding: reader.stderrData, as: UTF8.self))")
        let shown = try parseStatus(CommandResult(status: 0, stdout: reader.stdoutData, stderr: Data()))
        #expect(uint(interface(shown, named: device)?["total_rx_bytes"]) == rx - 1_000_000)
      }
    }
    let store = try #require(try Store.open(StoreLocation(path: db), intent: .read))
    let totals = try #require(try store.loadLedger().entries[InterfaceName(device)]?.totals)
    #expect(totals.traffic.rxBytes == rx - 1_000_000 && totals.traffic.txBytes == tx - 2_000_000)
    #expect(totals.resets == 0 && totals.discarded == 0)
    try expectBucketsMatchTotals(store, InterfaceName(device), totals)
  }
}

/// Every granularity's buckets of `name`, summed, must equal the ledger's totals.
func expectBucketsMatchTotals(_ store: Store, _ name: InterfaceName, _ totals: LedgerTotals) throws {
  for granularity in TrafficGranularity.allCases {
    let buckets = try store.buckets(granularity, since: 0).filter { $0.name == name }
    let sum = buckets.reduce(TrafficCounts()) { $0 + $1.traffic }
    #expect(sum == totals.traffic, "\(granularity.name) buckets")
  }
}

/// Runs `body` on `count` threads of their own, released together; returns what they threw.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [String] {
  let group = DispatchGroup()
  let start = DispatchSemaphore(value: 0)
  let failures = Failures()
  for index in 0..<count {
    group.enter()
    Thread {
      start.wait()
      do { try body(index) } catch { failures.add("thread \(index): \(error)") }
      group.leave()
    }.start()
  }
  for _ in 0..<count { start.signal() }
  group.wait()
  return failures.all
}

/// Threads wait here until all `count` of them arrived, then go on together.
final class Barrier: @unchecked Sendable {
  private let condition = NSCondition()
  private let count: Int
  private var arrived = 0
  private var generation = 0
  init(_ count: Int) { self.count = count }
  func wait() {
    condition.lock()
    defer { condition.unlock() }
    let mine = generation
    arrived += 1
    if arrived == count {
      arrived = 0
      generation += 1
      condition.broadcast()
    } else {
      while generation == mine { condition.wait() }
    }
  }
}

final class Failures: @unchecked Sendable {
  private let lock = NSLock()
  private var list: [String] = []
  func add(_ failure: String) {
    lock.lock()
    list.append(failure)
    lock.unlock()
  }
  var all: [String] {
    lock.lock()
    defer { lock.unlock() }
    return list
  }
}

/// The database as bad input: every case names the file, exits as documented, changes nothing.
struct StoreBadInputTests {
  func check(
    _ path: String, expectStatus: Int32, fragment: String,
    commands: [[String]] = [["status", "--json"], ["record", "--count", "1"], ["history"]]
  ) throws {
    let before = contents(path)
    for command in commands {
      let result = try run(Built.vpnstat, command + ["--db", path])
      #expect(result.status == expectStatus, "\(command): \(result.errors)")
      #expect(result.errors.contains(path), "\(command): \(result.errors)")
      #expect(result.errors.contains(fragment), "\(command): \(result.errors)")
      #expect(contents(path) == before, "\(command) changed \(path)")
    }
  }

  @Test(
    "SQLite's locking protocol error (a reader holding the -shm's write lock) is a lock that passes: busy, which a running writer waits out; damage and permissions are lasting"
  )
  func lockingProtocolIsALock() {
    let location = StoreLocation(path: "/nonexistent/v.db")
    let protocolError = Store.map(SQLiteError(code: 15, message: "locking protocol"), location)
    guard case .busy = protocolError else {
      Issue.record("SQLITE_PROTOCOL was \(protocolError)")
      return
    }
    #expect(protocolError.isTransient && !protocolError.isLasting)
    #expect(!Store.map(SQLiteError(code: 10, message: "disk I/O error"), location).isLasting)
    #expect(Store.map(SQLiteError(code: 11, message: "malformed"), location).isLasting)
    #expect(StoreError.untrustedDirectory(path: "/x", detail: "0777").isLasting)
  }

  @Test("a file that is not SQLite: 65, untouched")
  func notSQLite() throws {
    let directory = try TemporaryDirectory("notdb")
    let path = directory.file("v.db")
    try Data(String(repeating: "this is not a database\n", count: 300).utf8).write(to: URL(fileURLWithPath: path))
    try check(path, expectStatus: 65, fragment: "not a vpnstat database")
  }

  @Test("an SQLite database that is not vpnstat's: 65, untouched")
  func foreign() throws {
    let directory = try TemporaryDirectory("foreign")
    let path = directory.file("v.db")
    let made = try python(
      "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table t(x)'); c.commit()", [path])
    #expect(made.status == 0)
    try check(path, expectStatus: 65, fragment: "not vpnstat's")
  }

  @Test(
    "another program's database, with its own application_id and a user_version: refused with 65, byte for byte untouched, never migrated",
    arguments: [("delete", 1), ("wal", 7)])
  func foreignWithItsOwnIDs(journal: String, userVersion: Int) throws {
    let directory = try TemporaryDirectory("alien")
    let path = directory.file("notes.db")
    let made = try python(
      """
      import sqlite3, sys
      c = sqlite3.connect(sys.argv[1])
      c.execute('pragma journal_mode=' + sys.argv[2])
      c.execute('pragma application_id=%d' % 0x4E4F5445)
      c.execute('pragma user_version=' + sys.argv[3])
      c.execute('create table notes(id integer primary key, body text)')
      c.execute("insert into notes(body) values ('not vpnstat data')")
      c.commit()
      c.close()
      """, [path, journal, "\(userVersion)"])
    #expect(made.status == 0, "\(made.errors)")
    let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    #expect(files == ["notes.db"])
    let before = try #require(contents(path))
    for intent in [Store.Intent.read, .write] {
      let error = try #require(throws: StoreError.self, "\(intent)") {
        try Store.open(StoreLocation(path: path), intent: intent)
      }
      guard case .foreign(let named) = error, named == path else {
        Issue.record("\(intent): \(error)")
        continue
      }
    }
    #expect(contents(path) == before)
    try check(
      path, expectStatus: 65, fragment: "not vpnstat's",
      commands: [["status", "--json"], ["session", "check"], ["plan", "premium"], ["record", "--count", "1"]])
    // No -wal or -shm left beside it either.
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == files)
  }

  @Test("a truncated database: 65, untouched")
  func truncated() throws {
    let directory = try TemporaryDirectory("trunc")
    let good = directory.file("good.db")
    let recorded = try run(Built.vpnstat, ["record", "--count", "2", "--interval", "100ms", "--db", good])
    #expect(recorded.status == 0, "\(recorded.errors)")
    let full = try #require(contents(good))
    #expect(full.count >= 8192)
    let path = directory.file("v.db")
    try full.prefix(full.count / 2 + 100).write(to: URL(fileURLWithPath: path))
    try check(
      path, expectStatus: 65, fragment: "damaged", commands: [["status", "--json"], ["record", "--count", "1"]])
  }

  @Test("a database from a newer vpnstat: 65, untouched")
  func newer() throws {
    let directory = try TemporaryDirectory("newer")
    let path = directory.file("v.db")
    let made = try python(
      "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma application_id=%d' % 0x76706E73); c.execute('pragma user_version=99'); c.execute('create table future(x)'); c.commit()",
      [path])
    #expect(made.status == 0, "\(made.errors)")
    try check(path, expectStatus: 65, fragment: "newer vpnstat")
  }

  @Test(
    "SQLite's own locks, which any reader can take, stop no write; only vpnstat's writer lock makes record wait, then exit 75 naming the file; status reads it without a word, unchanged"
  )
  func locked() throws {
    let directory = try TemporaryDirectory("locked")
    let path = directory.file("v.db")
    #expect(try run(Built.vpnstat, ["record", "--count", "1", "--db", path]).status == 0)
    // Another program holds SQLite's write lock (and every byte of the file, read-locked): a
    // reader could do this to any database it can open.
    let holder = try BackgroundProcess(
      "/usr/bin/python3",
      [
        "-c",
        "import fcntl,sqlite3,sys,time; c=sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('begin immediate'); fd=open(sys.argv[1]); fcntl.lockf(fd, fcntl.LOCK_SH, 0, 0, 0); print('locked', flush=True); time.sleep(30)",
        path,
      ])
    defer { holder.stop() }
    try holder.waitFor("locked")
    let written = try run(Built.vpnstat, ["record", "--count", "1", "--db", path])
    #expect(written.status == 0, "\(written.errors)")
    holder.stop()
    // vpnstat's own writer lock, which only this user's writers can open: a save under way.
    let writer = try HeldWriterLock(StoreLocation(path: path))
    let before = contents(path)
    let record = try run(Built.vpnstat, ["record", "--count", "1", "--db", path])
    #expect(record.status == 75, "\(record.errors)")
    #expect(record.errors.contains(path) && record.errors.contains("locked"))
    let status = try run(Built.vpnstat, ["status", "--json", "--db", path])
    #expect(status.status == 0, "\(status.errors)")
    #expect(interfaces(try parseStatus(status)).contains { $0["total_rx_bytes"] is NSNumber })
    #expect(contents(path) == before)
    writer.release()
  }

  @Test("a second recorder on the same database refuses, naming the holder")
  func secondRecorder() throws {
    let directory = try TemporaryDirectory("second")
    let path = directory.file("v.db")
    let first = try BackgroundProcess(Built.vpnstat, ["record", "--interval", "1s", "--db", path])
    defer { first.stop() }
    let deadline = Date().addingTimeInterval(10)
    while !FileManager.default.fileExists(atPath: path + ".record.lock")
      || (contents(path + ".record.lock")?.isEmpty ?? true)
    {
      if Date() > deadline { break }
      usleep(20_000)
    }
    let second = try run(Built.vpnstat, ["record", "--count", "1", "--db", path])
    #expect(second.status == 75, "\(second.errors)")
    #expect(second.errors.contains("vpnstat record (pid \(first.pid))"), "\(second.errors)")
    #expect(first.stop() == 0)
    // With the first gone (even by kill -9), the lock is free again.
    #expect(try run(Built.vpnstat, ["record", "--count", "1", "--db", path]).status == 0)
  }

  @Test(
    "a user who may read but not write: status reads the totals, record is refused with 77, nothing changes",
    .enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
  func readOnlyUser() throws {
    let directory = try TemporaryDirectory("ro")
    let path = directory.file("v.db")
    #expect(try run(Built.vpnstat, ["record", "--count", "2", "--interval", "100ms", "--db", path]).status == 0)
    let binary = try vpnstatForOtherUsers(in: directory)
    let before = contents(path)
    let status = try runAsNobody(binary, ["status", "--json", "--db", path])
    #expect(status.status == 0, "\(status.errors)")
    let parsed = try parseStatus(status)
    #expect(interfaces(parsed).contains { $0["total_rx_bytes"] is NSNumber })
    #expect((parsed["warnings"] as? [String] ?? []).isEmpty, "a reader has nothing to apologise for")
    let record = try runAsNobody(binary, ["record", "--count", "1", "--db", path])
    #expect(record.status == 77, "\(record.errors)")
    #expect(record.errors.contains(path))
    // Also when the last writer left no -wal/-shm files behind.
    try? FileManager.default.removeItem(atPath: path + "-wal")
    try? FileManager.default.removeItem(atPath: path + "-shm")
    let bare = try runAsNobody(binary, ["status", "--json", "--db", path])
    #expect(bare.status == 0, "\(bare.errors)")
    #expect(contents(path) == before)
  }
}

/// A flag one thread sets and others read.
final class Flag: @unchecked Sendable {
  private let lock = NSLock()
  private var value = false
  func set() {
    lock.lock()
    value = true
    lock.unlock()
  }
  var isSet: Bool {
    lock.lock()
    defer { lock.unlock() }
    return value
  }
}
