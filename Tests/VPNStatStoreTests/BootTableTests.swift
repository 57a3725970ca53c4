import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Schema 7: an interface's row names its boot by number (`boots`), not by its 36-character id;
/// a save removes the snapshot's mark itself, leaving the mark's page alone when there is no
/// mark, and fires no trigger. Pages and instructions a save no longer spends.
struct BootTableTests {
  let bootA = "3f2a1b4c-1234-4abc-9def-0123456789ab"
  let bootB = "77777777-8888-4999-aaaa-bbbbbbbbbbbb"

  func observation(_ name: String, _ rx: UInt64, index: Int32, boot: String, at clock: ManualTimeSource)
    -> LedgerObservation
  {
    let now = clock.now()
    return LedgerObservation(
      name: InterfaceName(name), interfaceClass: .tunnel,
      baseline: LedgerBaseline(
        instance: InterfaceInstance(index: index, bootID: boot),
        counters: TrafficCounts(rxBytes: rx, txBytes: rx / 2, rxPackets: rx / 100, txPackets: rx / 200),
        width: .bits64, wall: now.wall, boottime: now.boottime),
      plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
  }

  /// A file as the schema-6 build left it: its rows with the boot id as text, its snapshot's mark
  /// and its triggers (by their earlier names, deleting the whole mark table).
  func schemaSix(at path: String) throws {
    _ = try FileSystem.createFile(path, mode: 0o644)
    let connection = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: true)
    for step in Store.migrations.prefix(6) { try connection.execute(step) }
    try connection.execute(
      """
      PRAGMA application_id = \(Store.applicationID); PRAGMA user_version = 6;
      CREATE TABLE ledger_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL);
      CREATE TABLE ledger_snapshot_current (id INTEGER PRIMARY KEY CHECK (id = 1), token INTEGER NOT NULL);
      CREATE TRIGGER ledger_snapshot_on_insert AFTER INSERT ON interfaces BEGIN DELETE FROM ledger_snapshot_current; END;
      CREATE TRIGGER ledger_snapshot_on_update AFTER UPDATE ON interfaces BEGIN DELETE FROM ledger_snapshot_current; END;
      CREATE TRIGGER ledger_snapshot_on_delete AFTER DELETE ON interfaces BEGIN DELETE FROM ledger_snapshot_current; END;
      INSERT INTO interfaces (name, class, first_seen_at, if_index, boot_id, width, rx_bytes, tx_bytes, rx_packets,
        tx_packets, sampled_at, boottime, total_rx_bytes, total_tx_bytes, resets)
      VALUES
        (CAST('tun0' AS BLOB), 'tunnel', 1000, 5, '\(bootA)', 64, 10, 20, 1, 2, 3000, 4000, 777, 888, 1),
        (CAST('wg0' AS BLOB), 'tunnel', 1001, 6, '\(bootB)', 32, 11, 21, 1, 2, 3001, 4001, 999, 111, 0),
        (CAST('wlan0' AS BLOB), 'wifi', 1002, 7, '\(bootA)', 64, 12, 22, 1, 2, 3002, 4002, 5, 6, 0);
      INSERT INTO ledger_snapshot_current (id, token) VALUES (1, 42);
      """)
  }

  /// A writer's database in a directory of its own, with `tun0` saved once (100 bytes in).
  func saved(_ label: String) throws -> (TemporaryDirectory, String, Store, ManualTimeSource) {
    let directory = try TemporaryDirectory(label)
    let path = directory.file("v.db")
    let store = try #require(try Store.open(StoreLocation(path: path), intent: .write))
    let clock = ManualTimeSource()
    _ = try store.advanceLedger([observation("tun0", 100, index: 4, boot: bootA, at: clock)], now: clock.now().wall)
    return (directory, path, store, clock)
  }

  /// A save of `observations` that leaves the snapshot stale, as a published one does.
  func saveLeavingSnapshot(_ store: Store, _ observations: [LedgerObservation], at clock: ManualTimeSource) throws {
    _ = try store.saveLedger(now: clock.now().wall, storingSnapshot: false) { stored in
      var ledger = stored
      return ((), LedgerCheckpoint(ledger.advance(observations), calendar: store.calendar))
    }
  }

  func triggers(_ store: Store) throws -> [String] {
    var names: [String] = []
    try store.connection.query("SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name") { row in
      names.append(row.text(0) ?? "")
    }
    return names
  }

  @Test(
    "a schema-6 file reads the same before and after schema 7: boot ids become numbers, the triggers are made anew and the snapshot is stale until a save"
  )
  func migration() throws {
    let directory = try TemporaryDirectory("boots-migrate")
    let path = directory.file("v.db")
    try schemaSix(at: path)
    let before = contents(path)
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    let old = try reader.readLedger().entries
    #expect(old.count == 3)
    #expect(old[InterfaceName("wg0")]?.baseline.instance.bootID == bootB)
    #expect(old[InterfaceName("tun0")]?.totals.traffic.rxBytes == 777)
    #expect(contents(path) == before, "a reader changed the file")

    let writer = try #require(try Store.open(StoreLocation(path: path), intent: .write))
    #expect(try writer.connection.scalar("PRAGMA user_version") == 7)
    #expect(try writer.connection.scalar("SELECT count(*) FROM boots") == 2)
    #expect(try writer.connection.scalar("SELECT count(*) FROM interfaces WHERE typeof(boot) = 'integer'") == 3)
    #expect(try writer.readLedger().entries == old)
    #expect(
      try triggers(writer) == [
        "ledger_snapshot_stale_on_delete", "ledger_snapshot_stale_on_insert", "ledger_snapshot_stale_on_update",
      ])
    #expect(try writer.connection.scalar("SELECT count(*) FROM ledger_snapshot_current") == 0)
    let again = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try again.loadLedger().entries == old)
    withExtendedLifetime(directory) {}
  }

  @Test(
    "a save numbers each boot once; a reboot adds a number, and pruning drops the numbers no interface is of"
  )
  func numbering() throws {
    let directory = try TemporaryDirectory("boots")
    let store = try #require(try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write))
    let clock = ManualTimeSource()
    let names = ["ifb0", "ifb1", "ifb2"]
    _ = try store.advanceLedger(
      names.enumerated().map { observation($1, 100, index: Int32(3 + $0), boot: bootA, at: clock) },
      now: clock.now().wall)
    #expect(try store.connection.scalar("SELECT count(*) FROM boots") == 1)
    #expect(try store.connection.scalar("SELECT count(DISTINCT boot) FROM interfaces") == 1)
    // A reboot: two interfaces come back, the third is not seen again.
    clock.reboot(bootID: bootB)
    _ = try store.advanceLedger(
      names.prefix(2).enumerated().map { observation($1, 50, index: Int32(3 + $0), boot: bootB, at: clock) },
      now: clock.now().wall)
    #expect(try store.connection.scalar("SELECT count(*) FROM boots") == 2)
    let reader = try #require(try Store.open(StoreLocation(path: directory.file("v.db")), intent: .read))
    let rows = try reader.readLedger().entries
    #expect(rows[InterfaceName("ifb0")]?.baseline.instance.bootID == bootB)
    #expect(rows[InterfaceName("ifb2")]?.baseline.instance.bootID == bootA)
    #expect(rows[InterfaceName("ifb0")]?.totals.resets == 1)
    // The third comes back too: no interface is of the first boot; the next prune (hourly) drops it.
    clock.advance(.seconds(3601))
    _ = try store.advanceLedger([observation("ifb2", 10, index: 9, boot: bootB, at: clock)], now: clock.now().wall)
    #expect(try store.connection.scalar("SELECT count(*) FROM boots") == 1)
    #expect(try reader.readLedger().entries.values.allSatisfy { $0.baseline.instance.bootID == bootB })
    withExtendedLifetime(directory) {}
  }

  @Test("a row naming no boot reads as an unreadable boot id: the clocks tell its boot, and nothing is counted twice")
  func unknownNumber() throws {
    let (directory, path, store, clock) = try saved("boots-damaged")
    let other = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: false)
    try other.execute("UPDATE interfaces SET boot = 99, total_rx_bytes = 10000")
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try reader.loadLedger().entries[InterfaceName("tun0")]?.baseline.instance.bootID == "")
    // The writer reads the changed row. The same boot by the clocks: the counter went on from
    // 100, and only the 500 since are booked (a reset would book 600).
    clock.advance(.seconds(10))
    let result = try store.advanceLedger(
      [observation("tun0", 600, index: 4, boot: bootA, at: clock)], now: clock.now().wall)
    let totals = try #require(result.ledger.entries[InterfaceName("tun0")]?.totals)
    #expect(totals.traffic.rxBytes == 10500 && totals.resets == 0)
    withExtendedLifetime(directory) {}
  }

  @Test("a save that writes rows while no snapshot is current writes no page of the mark's table")
  func markPageUntouched() throws {
    let (directory, path, store, clock) = try saved("boots-mark")
    func save(_ rx: UInt64) throws {
      clock.advance(.seconds(1))
      try saveLeavingSnapshot(store, [observation("tun0", rx, index: 4, boot: bootA, at: clock)], at: clock)
    }
    try save(150)
    try save(200)
    #expect(try store.connection.scalar("SELECT count(*) FROM ledger_snapshot_current") == 0)
    let markPage = try #require(
      try store.connection.scalar("SELECT rootpage FROM sqlite_master WHERE name = 'ledger_snapshot_current'"))
    let rowsPage = try #require(
      try store.connection.scalar("SELECT rootpage FROM sqlite_master WHERE name = 'interfaces'"))
    store.checkpoint()
    try save(300)
    let written = try lastCommitPages(log: path + "-wal")
    #expect(written.contains(UInt32(rowsPage)), "the save wrote its row: \(written)")
    #expect(!written.contains(UInt32(markPage)), "the mark's page \(markPage) was written: \(written)")
    withExtendedLifetime(directory) {}
  }

  @Test(
    "a writer fires no trigger: one put in the file does not run in its saves, and its rows still make the snapshot stale; another connection's rows fire the file's triggers"
  )
  func writerFiresNoTrigger() throws {
    let (directory, path, store, clock) = try saved("boots-trigger")
    let other = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: false)
    try other.execute(
      """
      CREATE TRIGGER planted AFTER INSERT ON interfaces
        BEGIN INSERT INTO incidents (kind, count, last_at) VALUES ('planted', 1, 0)
          ON CONFLICT (kind) DO UPDATE SET count = count + 1; END;
      """)
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try reader.readSnapshot(sharingBootID: nil) != nil)
    // Saves that write rows without storing the snapshot: the mark goes all the same.
    for rx: UInt64 in [200, 300] {
      clock.advance(.seconds(1))
      try saveLeavingSnapshot(store, [observation("tun0", rx, index: 4, boot: bootA, at: clock)], at: clock)
      #expect(try reader.readSnapshot(sharingBootID: nil) == nil, "\(rx)")
    }
    #expect(try store.connection.scalar("SELECT count(*) FROM incidents WHERE kind = 'planted'") == 0)
    // Another connection fires what is in the file.
    try other.execute(
      """
      INSERT INTO interfaces SELECT CAST('tun9' AS BLOB), class, first_seen_at, if_index + 10, boot, width, rx_bytes,
        tx_bytes, rx_packets, tx_packets, sampled_at, boottime, total_rx_bytes, total_tx_bytes, total_rx_packets,
        total_tx_packets, resets, wraps, discarded FROM interfaces WHERE name = CAST('tun0' AS BLOB)
      """)
    #expect(try other.scalar("SELECT count FROM incidents WHERE kind = 'planted'") == 1)
    withExtendedLifetime(directory) {}
  }

  /// The pages of the frames of the log's current generation (salts equal to the header's).
  func lastCommitPages(log: String) throws -> Set<UInt32> {
    let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: log)))
    func u32(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
    let pageSize = Int(u32(8))
    let salts = (u32(16), u32(20))
    var pages: Set<UInt32> = []
    var at = 32
    while at + 24 + pageSize <= bytes.count, (u32(at + 8), u32(at + 12)) == salts {
      pages.insert(u32(at))
      at += 24 + pageSize
    }
    return pages
  }
}
