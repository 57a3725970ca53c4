import CSQLite
import VPNStatModel
import VPNStatSystem

/// The ledger and the traffic buckets, as stored.
extension Store {
  /// Every interface the ledger knows, with its baseline and totals. A stored boot id equal to
  /// `sharingBootID` is that very String (not a copy of its bytes), so comparing it with the
  /// boot id of a reading of the same clock is a comparison of identity
  /// (`BootIdentity.same`, once per entry per sample).
  package func loadLedger(sharingBootID: String? = nil) throws -> Ledger {
    try loadVersionedLedger(sharingBootID: sharingBootID).ledger
  }

  /// The ledger as `loadLedger` reads it, with the version it was read at: a reader compares
  /// `ledgerVersion()` with it to tell whether the stored ledger may have changed since.
  package func loadVersionedLedger(sharingBootID: String? = nil) throws -> (ledger: Ledger, version: LedgerVersion) {
    try reading {
      if let read = try readVersionedSnapshot(sharingBootID: sharingBootID) {
        // A reader reads the rest of its report in the same transaction, and its kernel sample
        // and report are allocated meanwhile: the snapshot's pages, read once, are given back for
        // them to reuse (kept, they made the report fault in some fifty fresh pages at a thousand
        // interfaces). A writer keeps its cache.
        if isReadOnly { connection.releaseMemory() }
        return read
      }
      // Read before the rows: a commit in between makes the next comparison differ, never miss.
      let version = try readLedgerVersion()
      return (try readLedger(sharingBootID: sharingBootID), version)
    }
  }

  /// The ledger as this connection last read or wrote it in a save (`saveLedger`): the stored
  /// one, while no other connection has committed since.
  package var savedLedger: Ledger? { cachedLedger?.ledger }

  /// The version of the stored ledger now (one statement). See `LedgerVersion`.
  package func ledgerVersion() throws -> LedgerVersion {
    try reading { try readLedgerVersion() }
  }

  private func readLedgerVersion() throws -> LedgerVersion {
    var token: Int64?
    do {
      token = try connection.scalar("SELECT token FROM ledger_snapshot_current WHERE id = 1")
    } catch let error as SQLiteError where error.primary == SQLITE_ERROR {
      // No such table: no writer of this vpnstat has opened the file.
    }
    return try token.map(LedgerVersion.snapshot) ?? .rows(dataVersion: currentDataVersion())
  }

  /// The ledger from its snapshot: nil when there is none current (a writer changed the rows
  /// since, or none has written one; a file vpnstat made before it) or it cannot be decoded.
  /// The triggers make a current snapshot equal to the rows it was read with.
  func readSnapshot(sharingBootID: String?) throws -> Ledger? {
    try reading { try readVersionedSnapshot(sharingBootID: sharingBootID)?.ledger }
  }

  /// The current snapshot with its version (its token), in one read transaction (that of the
  /// report, when there is one). The blob is decoded as it is read, a piece at a time
  /// (`LedgerSnapshot.decode(count:reading:)`): read whole, it was one allocation of its size
  /// (137 KB at a thousand interfaces: a fresh mapping, faulted in page by page, then unmapped).
  private func readVersionedSnapshot(sharingBootID: String?) throws -> (ledger: Ledger, version: LedgerVersion)? {
    do {
      return try connection.transaction(immediate: false) {
        guard let token = try connection.scalar("SELECT token FROM ledger_snapshot_current WHERE id = 1") else {
          return nil
        }
        // No row, or bytes that are not a whole snapshot: the caller reads the rows.
        let ledger = try connection.withBlob(table: "ledger_snapshot", column: "data", rowid: 1) { count, read in
          LedgerSnapshot.decode(count: count, reading: read, sharingBootID: sharingBootID)
        }
        return ledger.map { ($0, .snapshot(token)) }
      }
    } catch let error as SQLiteError where error.primary == SQLITE_ERROR {
      return nil  // no such table: no writer of this vpnstat has opened the file
    }
  }

  /// The ledger from the `interfaces` rows: the record the snapshot stands for.
  func readLedger(sharingBootID: String? = nil) throws -> Ledger {
    try reading { try readRows(sharingBootID: sharingBootID) }
  }

  private func readRows(sharingBootID: String?) throws -> Ledger {
    var entries = LedgerTable(minimumCapacity: Int(try connection.scalar("SELECT count(*) FROM interfaces") ?? 0))
    // Rows mostly share a boot id and a class: each is decoded once and compared after.
    var bootID: String? = sharingBootID
    var lastClass: InterfaceClass?
    // From schema 7 a row holds its boot's number: `boots` (a row or two) is read first, and each
    // row's number looked up here, not by a query per row. A number that names none reads as an
    // unreadable boot id: the clocks tell its boot (`BootIdentity`).
    var boots: [(number: Int64, id: String)]?
    if schema >= 7 {
      var read: [(number: Int64, id: String)] = []
      try connection.query("SELECT id, boot_id FROM boots") { row in
        read.append((row.integer(0), row.text(1, reusing: sharingBootID) ?? ""))
      }
      boots = read
    }
    func boot(_ row: SQLiteRow) -> String {
      guard let boots else { return row.text(4, reusing: bootID, or: sharingBootID) ?? "" }
      let number = row.integer(4)
      return boots.first { $0.number == number }?.id ?? ""
    }
    let bootColumn = boots == nil ? "boot_id" : "boot"
    try connection.query(
      """
      SELECT name, class, first_seen_at, if_index, \(bootColumn), width, rx_bytes, tx_bytes, rx_packets,
        tx_packets, sampled_at, boottime, total_rx_bytes, total_tx_bytes, total_rx_packets,
        total_tx_packets, resets, wraps, discarded FROM interfaces
      """
    ) { row in
      let name = InterfaceName(bytes: row.blob(0))
      // Counters are any UInt64 (the kernel's word); the rest is damage outside its kind's range.
      let baseline = LedgerBaseline(
        instance: InterfaceInstance(
          index: try stored(row, 3, .interfaceIndex, "interfaces.if_index"),
          bootID: boot(row)),
        counters: row.traffic(6),
        width: try stored(row, 5, .counterWidth, "interfaces.width"),
        wall: try stored(row, 10, .instant, "interfaces.sampled_at"),
        boottime: try stored(row, 11, .boottime, "interfaces.boottime"))
      let totals = LedgerTotals(
        row.traffic(12), resets: row.unsigned(16), wraps: row.unsigned(17), discarded: row.unsigned(18),
        firstSeenAt: try stored(row, 2, .instant, "interfaces.first_seen_at"))
      bootID = baseline.instance.bootID
      let interfaceClass: InterfaceClass
      if let lastClass, row.textEquals(1, lastClass.rawValue) {
        interfaceClass = lastClass
      } else {
        interfaceClass = InterfaceClass(rawValue: row.text(1) ?? "") ?? .other
        lastClass = interfaceClass
      }
      entries.update(LedgerEntry(name: name, interfaceClass: interfaceClass, baseline: baseline, totals: totals))
    }
    return Ledger(entries: entries)
  }

  /// Advances the ledger with what `observe` reads from the kernel, inside one write transaction:
  /// the stored baselines are read under the write lock and the kernel after them, so however
  /// many processes sample at once, each one's counters are newer than the baselines it advances
  /// from. Writes the changed entries and adds the booked traffic to the buckets. Returns the
  /// ledger, what the advance did, and what `observe` returned besides its observations.
  package func advanceLedger<Reading>(
    now: Timestamp, observing observe: () throws -> (Reading, [LedgerObservation])
  ) throws -> (ledger: Ledger, advance: LedgerAdvance, reading: Reading) {
    try saveLedger(now: now) { stored in
      var ledger = stored
      let (reading, observations) = try observe()
      let advance = ledger.advance(observations)
      return ((ledger, advance, reading), LedgerCheckpoint(advance, calendar: calendar))
    }
  }

  /// Saves a writer's checkpoint in one write transaction: `prepare` is given the ledger as
  /// stored, read under the write lock, reads the kernel after it (the rule above), and returns
  /// what to write. Prunes old buckets at most once an hour. Returns what `prepare` returned.
  /// `storingSnapshot`: whether the ledger's snapshot is kept current too (`LedgerSnapshot`);
  /// without it, rows written leave it stale and readers read the rows.
  package func saveLedger<Result>(
    now: Timestamp, storingSnapshot: Bool = true, preparing prepare: (Ledger) throws -> (Result, LedgerCheckpoint)
  ) throws -> Result {
    guard !isReadOnly else { throw StoreError.notPermitted(path: location.path, detail: "opened for reading") }
    let pruneDue = lastPrune.map { now - $0 > .seconds(3600) || now < $0 } ?? true
    let (result, stored, version) = try guarded {
      try connection.transaction {
        let version = try connection.scalar("PRAGMA data_version") ?? 0
        var stored: Ledger
        if let cached = cachedLedger, cached.dataVersion == version {
          stored = cached.ledger
        } else {
          stored = try readLedger()
        }
        let (result, checkpoint) = try prepare(stored)
        try write(checkpoint, now: now)
        for entry in checkpoint.entries { stored.replace(entry) }
        // Written rows made the snapshot stale (`write`); so may another writer's have.
        if storingSnapshot,
          try !checkpoint.entries.isEmpty || connection.scalar("SELECT count(*) FROM ledger_snapshot_current") != 1
        {
          // An update of the row, not a replacement: SQLite then rewrites in place only the pages
          // whose bytes changed, and the entries' order (by name) keeps an unchanged one's bytes.
          try connection.query(
            """
            INSERT INTO ledger_snapshot (id, data) VALUES (1, ?)
            ON CONFLICT (id) DO UPDATE SET data = excluded.data
            """, [.blob(LedgerSnapshot.encode(stored))])
          // A new token for every snapshot stored: a reader that loaded another reloads.
          try connection.query("INSERT OR REPLACE INTO ledger_snapshot_current (id, token) VALUES (1, random())")
        }
        if pruneDue { try prune(now: now) }
        return (result, stored, version)
      }
    }
    // Only after the commit: a rolled-back checkpoint must not be remembered.
    cachedLedger = (stored, version)
    if pruneDue { lastPrune = now }
    return result
  }

  /// Advances the ledger with observations already made (link notifications: each carries the
  /// counters the kernel sent, and a late one cannot move an instance back).
  package func advanceLedger(_ observations: [LedgerObservation], now: Timestamp) throws -> (
    ledger: Ledger, advance: LedgerAdvance
  ) {
    let result = try advanceLedger(now: now) { ((), observations) }
    return (result.ledger, result.advance)
  }

  /// Runs `read` in one read transaction: every query in it sees the database as of one commit,
  /// so a ledger and buckets read there agree (no save falls between them).
  package func snapshot<T>(_ read: () throws -> T) throws -> T {
    try reading { try connection.transaction(immediate: false, read) }
  }

  /// `read` in one read transaction of `store`, or just `read` without a database. A reader's
  /// report makes half a dozen queries: in one transaction they agree, and SQLite takes its
  /// locks and checks the file and the WAL once, not at each (seven system calls each).
  package static func inOneRead<T>(_ store: Store?, _ read: () throws -> T) throws -> T {
    guard let store else { return try read() }
    return try store.snapshot(read)
  }

  /// When a writer last stored the trusted clock — every checkpoint does, and every decision
  /// of an enforcer — or nil when none has: how current the saved ledger is, for a report that
  /// says so.
  package func lastSaved() throws -> Timestamp? {
    try reading {
      try connection.scalar("SELECT wall FROM trusted_clock WHERE id = 1").map {
        try stored($0, .instant, "trusted_clock.wall", repair: .sessionReset)
      }
    }
  }

  /// Copies the log's pages into the file (the recorder does this when it stops), so that the
  /// next writer starts the log over instead of making it longer.
  package func checkpoint() {
    guard !isReadOnly else { return }
    _ = try? guarded { try checkpointLog() }
  }

  /// What changes when another process commits: the file's stamp, hashed (an immutable
  /// connection's count never moves); inside a writer's operation, SQLite's count of other
  /// connections' commits. A process reloads what it keeps only when it moved.
  ///
  /// Outside an operation, the stamp is read as a read's first look reads it: asking opens no
  /// connection. Through `reading`, a recorder asking after each of its own saves opened a
  /// connection at the new stamp and parsed the schema, once a minute, and kept SQLite's parser
  /// resident until the next save.
  ///
  /// Watched (`watchStamp()`), the stamp is read again only after a write to its files: the
  /// events are taken before the read, so one that lands during it is found at the next call.
  package func dataVersion() throws -> Int64 {
    guard depth == 0 else { return try currentDataVersion() }
    if let watch = stampWatch, !watch.changes.consume(), let version = watch.version { return version }
    stampReads += 1
    stampWatch?.version = nil
    guard let stamp = StoreStamp.read(stampFiles) else { throw noStamp() }
    let version = Self.version(of: stamp)
    stampWatch?.version = version
    return version
  }

  /// `dataVersion()` inside an operation already running.
  func currentDataVersion() throws -> Int64 {
    guard inRead else { return try connection.scalar("PRAGMA data_version") ?? 0 }
    return lastReadVersion
  }

  /// The 5-minute buckets starting at or after this instant (Unix seconds) are not in the
  /// hourly, daily and monthly buckets yet: readers add them (`buckets`, `usage`). Nil on a
  /// schema without the mark, whose every granularity is written at every save.
  ///
  /// A save at a thousand moving interfaces rewrote each granularity's current bucket, 35 pages
  /// in all; the coarser ones are now written once per `foldSpan` of closed 5-minute buckets
  /// ("folded"), in the transaction that moves the mark.
  func foldedThrough() throws -> Int64? {
    guard schema >= 6 else { return nil }
    return try connection.scalar("SELECT through FROM bucket_fold WHERE id = 1")
  }

  /// How much of closed 5-minute buckets waits before a fold (seconds). A fold writes every
  /// name's hourly, daily and monthly rows (35 pages at a thousand interfaces): once a quarter
  /// hour, not every five minutes. A reader adds up to four 5-minute rows per name (three closed,
  /// one open) while savers run, where it added two.
  static let foldSpan: Int64 = 900

  /// Adds the closed 5-minute buckets from the mark up to the one holding `now` to the coarser
  /// granularities, and moves the mark there, once they span `foldSpan`. A clock set back leaves
  /// the mark where it is.
  private func fold(from through: Int64, now: Timestamp) throws {
    let until = TrafficGranularity.fiveMinutes.start(of: now, in: calendar)
    guard until - through >= Self.foldSpan else { return }
    var starts: [Int64] = []
    try connection.query(
      "SELECT DISTINCT start FROM buckets WHERE granularity = 0 AND start >= ? AND start < ? ORDER BY start",
      [.integer(through), .integer(until)]
    ) { row in starts.append(row.integer(0)) }
    for start in starts {
      for granularity in [TrafficGranularity.hour, .day, .month] {
        // `WHERE` before `ON CONFLICT`: SQLite's way to tell the upsert from a join.
        try connection.query(
          """
          INSERT INTO buckets (name, granularity, start, class, rx_bytes, tx_bytes, rx_packets, tx_packets)
          SELECT name, ?1, ?2, class, rx_bytes, tx_bytes, rx_packets, tx_packets FROM buckets
          WHERE granularity = 0 AND start = ?3 ORDER BY name
          ON CONFLICT (granularity, start, name) DO UPDATE SET
            class = excluded.class,
            rx_bytes = rx_bytes + excluded.rx_bytes, tx_bytes = tx_bytes + excluded.tx_bytes,
            rx_packets = rx_packets + excluded.rx_packets, tx_packets = tx_packets + excluded.tx_packets
          """,
          [
            .integer(Int64(granularity.rawValue)),
            .integer(granularity.start(of: Timestamp(seconds: start), in: calendar)), .integer(start),
          ])
      }
    }
    try connection.query("UPDATE bucket_fold SET through = ? WHERE id = 1", [.integer(until)])
  }

  /// The number `boots` gives this boot id, added when it has none. Looked up in each save
  /// (mostly one boot id for all its rows), never kept across: pruning may remove a number.
  private func bootNumber(_ bootID: String) throws -> Int64 {
    if let number = try connection.scalar("SELECT id FROM boots WHERE boot_id = ?", [.text(bootID)]) {
      return number
    }
    try connection.query("INSERT INTO boots (boot_id) VALUES (?)", [.text(bootID)])
    return try connection.scalar("SELECT last_insert_rowid()") ?? 0
  }

  private func write(_ checkpoint: LedgerCheckpoint, now: Timestamp) throws {
    // Rows of one save mostly share a boot id, and the same String: compared, not hashed.
    var lastBoot: (id: String, number: Int64)?
    // Each statement prepared once for all its rows, and each row's values one array.
    try connection.repeatedly(
      """
      INSERT OR REPLACE INTO interfaces (name, class, first_seen_at, if_index, boot, width,
        rx_bytes, tx_bytes, rx_packets, tx_packets, sampled_at, boottime, total_rx_bytes,
        total_tx_bytes, total_rx_packets, total_tx_packets, resets, wraps, discarded)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      """
    ) { run in
      for entry in checkpoint.entries {
        let b = entry.baseline
        let t = entry.totals
        let boot: Int64
        if let lastBoot, lastBoot.id == b.instance.bootID {
          boot = lastBoot.number
        } else {
          boot = try bootNumber(b.instance.bootID)
          lastBoot = (b.instance.bootID, boot)
        }
        try run([
          .blob(entry.name.bytes), .text(entry.interfaceClass.rawValue), .integer(t.firstSeenAt.nanoseconds),
          .integer(Int64(b.instance.index)), .integer(boot), .integer(Int64(b.width.rawValue)),
          .unsigned(b.counters.rxBytes), .unsigned(b.counters.txBytes), .unsigned(b.counters.rxPackets),
          .unsigned(b.counters.txPackets), .integer(b.wall.nanoseconds), .integer(b.boottime),
          .unsigned(t.traffic.rxBytes), .unsigned(t.traffic.txBytes), .unsigned(t.traffic.rxPackets),
          .unsigned(t.traffic.txPackets), .unsigned(t.resets), .unsigned(t.wraps), .unsigned(t.discarded),
        ])
      }
    }
    // What the triggers do for other writers (this connection fires none): rows changed, the
    // snapshot is stale until `saveLedger` stores it again.
    if !checkpoint.entries.isEmpty { try connection.query("DELETE FROM ledger_snapshot_current WHERE id = 1") }
    let through = try foldedThrough()
    try connection.repeatedly(
      """
      INSERT INTO buckets (name, granularity, start, class, rx_bytes, tx_bytes, rx_packets, tx_packets)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (granularity, start, name) DO UPDATE SET
        class = excluded.class,
        rx_bytes = rx_bytes + excluded.rx_bytes, tx_bytes = tx_bytes + excluded.tx_bytes,
        rx_packets = rx_packets + excluded.rx_packets, tx_packets = tx_packets + excluded.tx_packets
      """
    ) { run in
      func book(_ bucket: TrafficBucket, _ granularity: TrafficGranularity, start: Int64) throws {
        try run([
          .blob(bucket.name.bytes), .integer(Int64(granularity.rawValue)), .integer(start),
          .text(bucket.interfaceClass.rawValue), .unsigned(bucket.traffic.rxBytes), .unsigned(bucket.traffic.txBytes),
          .unsigned(bucket.traffic.rxPackets), .unsigned(bucket.traffic.txPackets),
        ])
      }
      for (granularity, bucket) in checkpoint.buckets {
        guard let through else {
          try book(bucket, granularity, start: bucket.start)
          continue
        }
        // With the mark, the coarser buckets are the 5-minute ones folded: booked from those.
        guard granularity == .fiveMinutes else { continue }
        try book(bucket, .fiveMinutes, start: bucket.start)
        // One already folded (a clock set back, a late booking): the coarser ones at once.
        if bucket.start < through {
          for coarser in [TrafficGranularity.hour, .day, .month] {
            try book(bucket, coarser, start: coarser.start(of: Timestamp(seconds: bucket.start), in: calendar))
          }
        }
      }
    }
    if let through { try fold(from: through, now: now) }
  }

  /// Deletes buckets older than each granularity keeps, and boots no interface is of.
  private func prune(now: Timestamp) throws {
    for granularity in TrafficGranularity.allCases {
      try connection.query(
        "DELETE FROM buckets WHERE granularity = ? AND start < ?",
        [.integer(Int64(granularity.rawValue)), .integer(granularity.retentionCutoff(at: now, in: calendar))])
    }
    try connection.query("DELETE FROM boots WHERE id NOT IN (SELECT boot FROM interfaces)")
  }

  /// Traffic buckets of one granularity from `since` (Unix seconds) on, oldest first; for the
  /// hourly, daily and monthly ones, then the 5-minute buckets not folded into them yet, each as
  /// a bucket of the granularity that holds it (a bucket may appear twice: whoever sums them adds
  /// them, as with `RecordedTraffic`'s unsaved ones).
  package func buckets(_ granularity: TrafficGranularity, since: Int64) throws -> [TrafficBucket] {
    try reading {
      var result: [TrafficBucket] = []
      func read(_ source: TrafficGranularity, from: Int64, as start: (Int64) -> Int64) throws {
        try connection.query(
          """
          SELECT name, start, class, rx_bytes, tx_bytes, rx_packets, tx_packets FROM buckets
          WHERE granularity = ? AND start >= ? ORDER BY start, name
          """, [.integer(Int64(source.rawValue)), .integer(from)]
        ) { row in
          let bucketStart = start(try stored(row, 1, .instantSeconds, "buckets.start").seconds)
          guard bucketStart >= since else { return }
          result.append(
            TrafficBucket(
              name: InterfaceName(bytes: row.blob(0)), start: bucketStart,
              interfaceClass: InterfaceClass(rawValue: row.text(2) ?? "") ?? .other, traffic: row.traffic(3)))
        }
      }
      try read(granularity, from: since) { $0 }
      if granularity != .fiveMinutes, let through = try foldedThrough() {
        // Rows come by start: the bucket holding one is worked out once per start.
        var last: (start: Int64, holder: Int64)?
        try read(.fiveMinutes, from: max(through, since)) { start in
          if let last, last.start == start { return last.holder }
          let holder = granularity.start(of: Timestamp(seconds: start), in: calendar)
          last = (start, holder)
          return holder
        }
      }
      return result
    }
  }

  /// Counts one overflow of the link notifications (the kernel dropped some: deleted links'
  /// final counters may be missing).
  package func noteNotificationOverflow(at time: Timestamp) throws {
    try keepingPublished {
      try connection.query(
        """
        INSERT INTO incidents (kind, count, last_at) VALUES ('notification-overflow', 1, ?)
        ON CONFLICT (kind) DO UPDATE SET count = count + 1, last_at = excluded.last_at
        """, [.integer(time.nanoseconds)])
    }
  }

  /// What the ledger could not see, for reports: zero on a schema older than the incidents table.
  package func health() throws -> StoreHealth {
    var health = StoreHealth()
    guard schema >= 3 else { return health }
    try reading {
      try connection.query("SELECT count, last_at FROM incidents WHERE kind = 'notification-overflow'") { row in
        health.notificationOverflows = row.unsigned(0)
        health.lastNotificationOverflow = try stored(row, 1, .instant, "incidents.last_at")
      }
    }
    return health
  }
}

/// What a reader compares to tell whether the stored ledger may have changed since it loaded it:
/// the token of the snapshot current then, else SQLite's count of other connections' commits.
/// The token alone decides while there is one: with no writer connected and its `-wal` empty (a
/// recorder truncates it at exit), a read-only connection's `data_version` changes at every read
/// transaction (SQLite cannot trust the `-shm`), and `watch` would reload the ledger at every
/// refresh. A writer of this vpnstat stores a new token with every snapshot, and any writer's
/// change of a row removes it (the triggers), so an unchanged token is an unchanged ledger.
package enum LedgerVersion: Equatable, Sendable {
  /// A current snapshot's token.
  case snapshot(Int64)
  /// No snapshot current (readers read the rows): SQLite's `data_version` then.
  case rows(dataVersion: Int64)

  /// Whether the ledger stored at `self` is the one loaded at `loaded`: the same token, or no
  /// token at either and the same `data_version`.
  package func sameLedger(as loaded: LedgerVersion) -> Bool { self == loaded }
}
