import CSQLite
import VPNStatModel
import VPNStatSystem

/// The one SQLite database (WAL) behind everything that must outlive a process: the ledger, the
/// traffic buckets, the session window, the plan, stop records. The only code that speaks SQL.
/// Several processes use it at once; each write is one transaction.
package final class Store {
  package let location: StoreLocation
  /// The calendar the hourly, daily and monthly buckets follow.
  package let calendar: any LocalCalendar
  let connection: SQLiteConnection
  /// True when this connection was opened for reading: it never writes.
  package let isReadOnly: Bool
  /// The ledger as last loaded or written by this connection, and SQLite's `data_version` then:
  /// while no other connection commits, a long-running sampler need not reload it every tick.
  var cachedLedger: (ledger: Ledger, dataVersion: Int64)?
  /// When this connection last deleted buckets past their retention.
  var lastPrune: Timestamp?
  /// The schema version of the file as opened (current once a writer has migrated it).
  var schema: Int64 = 0
  /// How long a statement waits for another process's lock before failing busy.
  private(set) var busyTimeoutMilliseconds: Int32

  /// How a command means to use the database.
  package enum Intent: Sendable {
    /// Read only: never create, upgrade or write anything (`status`, `watch`, `export`,
    /// `session`, the connect gate, `history`). A full disk, a lock held by a reader or a damaged
    /// page can then never cost a write half done.
    case read
    /// Read and write, creating the database if missing (`record`, `enforce`, `plan`,
    /// `session reset`). The file is checked for damage before the first write.
    case write
  }

  /// `application_id` of vpnstat databases: "vpns".
  static let applicationID: Int64 = 0x7670_6E73
  /// The schema version this vpnstat writes; migrations bring older ones up to it.
  package static let schemaVersion: Int64 = Int64(migrations.count)
  /// A writer's page cache, KiB (`PRAGMA cache_size`; SQLite's default is 2000).
  package static let writerCacheKiB = 512

  /// Opens the database at `location` for `intent`. Returns nil when it does not exist (or is an
  /// empty file) and the intent does not create it. Throws `StoreError`, never rewriting a file it
  /// cannot use. Each statement waits up to `busyTimeoutMilliseconds` for another process's
  /// lock; with `waitingAtMost`, all of them together wait no longer than that.
  package static func open(
    _ location: StoreLocation, intent: Intent, busyTimeoutMilliseconds: Int32 = 2000, waitingAtMost: Duration? = nil,
    calendar: any LocalCalendar = SystemCalendar()
  ) throws -> Store? {
    let deadline = waitingAtMost.map { SystemClock.monotonic + $0.nanoseconds }
    let exists = location.exists
    if !exists && intent == .read { return nil }
    if intent == .write {
      if !location.isWritable {
        throw StoreError.notPermitted(
          path: location.path,
          detail: exists ? "no write access to the file or its directory" : "cannot create it in \(location.directory)")
      }
      try location.checkDirectoryTrust()
      if !exists { try create(location) }
    }
    let readOnly = intent == .read
    do {
      let store = try Store(
        location: location, connection: connect(location, query: readOnly ? "?mode=ro&readonly_shm=1" : ""),
        readOnly: readOnly,
        busyTimeoutMilliseconds: busyTimeoutMilliseconds, calendar: calendar)
      if let deadline { store.connection.setBusyDeadline(deadline) }
      return try store.validateAndMigrate() ? store : nil
    } catch let error as SQLiteError where readOnly && (error.isCannotOpen || error.isReadOnly) {
      // A user who may not write cannot create the `-shm` file of a WAL database whose last
      // writer removed it. Then there is no WAL to miss, and reading the file as immutable is
      // exact.
      let store = try Store(
        location: location, connection: connect(location, query: "?immutable=1"), readOnly: true,
        busyTimeoutMilliseconds: busyTimeoutMilliseconds, calendar: calendar)
      if let deadline { store.connection.setBusyDeadline(deadline) }
      return try store.validateAndMigrate() ? store : nil
    }
  }

  private init(
    location: StoreLocation, connection: SQLiteConnection, readOnly: Bool, busyTimeoutMilliseconds: Int32,
    calendar: any LocalCalendar
  ) {
    self.location = location
    self.calendar = calendar
    self.connection = connection
    self.isReadOnly = readOnly
    self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
    connection.setBusyTimeout(milliseconds: busyTimeoutMilliseconds)
  }

  /// Creates the directory (0755) and an empty file (0644) so the modes do not depend on umask:
  /// readers without write access must be able to read it and its `-wal`/`-shm` files.
  private static func create(_ location: StoreLocation) throws {
    do {
      try FileSystem.createDirectories(location.directory, mode: 0o755)
      _ = try FileSystem.createFile(location.path, mode: 0o644)
    } catch {
      let detail = error.path == location.path ? error.error.description : "cannot create \(error)"
      throw error.error.meansNotPermitted
        ? StoreError.notPermitted(path: location.path, detail: detail)
        : StoreError.unavailable(path: location.path, detail: detail)
    }
  }

  private static func connect(_ location: StoreLocation, query: String) throws -> SQLiteConnection {
    let uri = "file:" + percentEncoded(location.path) + query
    do {
      return try SQLiteConnection(uri: uri, readOnly: !query.isEmpty, create: false)
    } catch let error as SQLiteError {
      throw map(error, location)
    }
  }

  /// Reads what makes this file ours before anything is written to it; for a writer, checks it
  /// for damage and then brings the schema up to date. Returns false for an empty file a reader
  /// finds (its creator has not written the schema yet: no database to read).
  private func validateAndMigrate() throws -> Bool {
    var applicationID: Int64 = 0
    var version: Int64 = 0
    var tables: Int64 = 0
    do {
      // One read transaction, so all three come from one snapshot: read one by one, a process
      // creating the database between them made a new file look like another program's.
      try connection.transaction(immediate: false) {
        applicationID = try connection.scalar("PRAGMA application_id") ?? 0
        version = try connection.scalar("PRAGMA user_version") ?? 0
        if applicationID == 0 && version == 0 {
          tables = try connection.scalar("SELECT count(*) FROM sqlite_master") ?? 0
        }
      }
    } catch let error as SQLiteError where isReadOnly && (error.isCannotOpen || error.isReadOnly) {
      throw error  // open() retries as immutable
    } catch let error as SQLiteError {
      throw Self.map(error, location)
    }
    if applicationID == 0 && version == 0 {
      if tables > 0 { throw StoreError.foreign(path: location.path) }
    } else if applicationID != Self.applicationID {
      throw StoreError.foreign(path: location.path)
    }
    if version > Self.schemaVersion {
      throw StoreError.newerSchema(path: location.path, found: version, supported: Self.schemaVersion)
    }
    schema = version
    if isReadOnly {
      if version == 0 { return false }
      if version < Self.oldestReadableSchema {
        throw StoreError.olderSchema(path: location.path, found: version, supported: Self.schemaVersion)
      }
      return true
    }
    // A writer runs for good: SQLite's default page cache (2 MiB) would fill with pages read once
    // by the check below and stay that size. A save touches the ledger's table and the current
    // buckets, some 500 KiB at a thousand interfaces; the rest is read again from the OS's cache.
    try guarded { try connection.execute("PRAGMA cache_size = -\(Self.writerCacheKiB)") }
    // Nothing writes to a file found damaged: look at every page before the first write.
    if version > 0, let problem = try guarded({ try integrityProblem() }) {
      throw StoreError.corrupt(path: location.path, detail: problem)
    }
    try guarded {
      try connection.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
      connection.persistWAL()
    }
    if version < Self.schemaVersion {
      try guarded {
        try connection.transaction {
          // Re-read under the write lock: another process may have migrated meanwhile.
          let current = try connection.scalar("PRAGMA user_version") ?? 0
          guard current < Self.schemaVersion else { return }
          for step in Int(current)..<Self.migrations.count { try connection.execute(Self.migrations[step]) }
          try connection.execute("PRAGMA application_id = \(Self.applicationID)")
          try connection.execute("PRAGMA user_version = \(Self.schemaVersion)")
        }
      }
      schema = Self.schemaVersion
    }
    try guarded { try addLedgerSnapshot() }
    return true
  }

  /// The ledger's snapshot (`LedgerSnapshot`), the mark that it is current (with the token a
  /// reader compares, `LedgerVersion`), and the triggers that remove the mark when any writer
  /// changes a row. Not a migration: the schema version
  /// stays, so a vpnstat that knows nothing of them still opens the file, and its writes,
  /// through the triggers, make readers read the rows. The mark is a table of its own: a trigger
  /// that deleted (or updated) the snapshot's row would free (or read) its every page once per
  /// row written.
  private func addLedgerSnapshot() throws {
    let present = "SELECT count(*) FROM pragma_table_info('ledger_snapshot_current') WHERE name = 'token'"
    guard try connection.scalar(present) == 0 else { return }
    try connection.transaction {
      // Re-read under the write lock: another writer may have added them meanwhile.
      guard try connection.scalar(present) == 0 else { return }
      // A mark without a token (an early build of this table) is replaced: the snapshot is then stale.
      try connection.execute(
        """
        DROP TABLE IF EXISTS ledger_snapshot_current;
        CREATE TABLE IF NOT EXISTS ledger_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL);
        CREATE TABLE ledger_snapshot_current (id INTEGER PRIMARY KEY CHECK (id = 1), token INTEGER NOT NULL);
        CREATE TRIGGER IF NOT EXISTS ledger_snapshot_on_insert AFTER INSERT ON interfaces
          BEGIN DELETE FROM ledger_snapshot_current; END;
        CREATE TRIGGER IF NOT EXISTS ledger_snapshot_on_update AFTER UPDATE ON interfaces
          BEGIN DELETE FROM ledger_snapshot_current; END;
        CREATE TRIGGER IF NOT EXISTS ledger_snapshot_on_delete AFTER DELETE ON interfaces
          BEGIN DELETE FROM ledger_snapshot_current; END;
        """)
    }
  }

  /// What SQLite's quick check finds wrong with the file (page structure, freelist, indexes),
  /// or nil when nothing. Cheap at vpnstat's sizes: a year of history is under a megabyte.
  private func integrityProblem() throws -> String? {
    var lines: [String] = []
    try connection.query("PRAGMA quick_check(3)") { row in lines.append(row.text(0) ?? "") }
    return lines == ["ok"] ? nil : lines.joined(separator: "; ")
  }

  /// Hands back the page cache's memory. A recorder saves once a save interval and reads a page
  /// or two in between: the pages a save touched (some 500 KiB at a thousand interfaces) would
  /// stay resident all interval; the next save reads them again from the OS's cache, a few
  /// hundred microseconds once a minute.
  package func releaseCache() { connection.releaseMemory() }

  /// The bytes the page cache holds now.
  package var cacheBytes: Int { connection.cacheUsed }

  /// Changes how long each statement waits for another process's lock (an enforcer opens with
  /// time to migrate, then waits only moments: it must never be held up by the database).
  package func setBusyTimeout(milliseconds: Int32) {
    busyTimeoutMilliseconds = milliseconds
    connection.setBusyTimeout(milliseconds: milliseconds)
  }

  /// Runs a database operation, turning SQLite's errors into `StoreError`s that name the file.
  /// A reader's operation that SQLite refuses as a write it may not do is tried again a few times
  /// first: a read-only connection cannot rebuild the WAL index, and it may find it in need of
  /// that for the moment a writer takes to close (checkpoint, remove the `-wal` and `-shm`) —
  /// seen once as a `status` exiting 77 beside a finishing `record`.
  func guarded<T>(_ body: () throws -> T) throws -> T {
    var attempt = 0
    while true {
      do {
        return try body()
      } catch let error as SQLiteError {
        attempt += 1
        guard isReadOnly, error.isReadOnly || error.isCannotOpen, attempt < 5 else { throw Self.map(error, location) }
        SystemClock.sleep(for: .milliseconds(10 * attempt))
      }
    }
  }

  static func map(_ error: SQLiteError, _ location: StoreLocation) -> StoreError {
    if error.primary == SQLITE_NOTADB { return .notADatabase(path: location.path) }
    if error.isCorrupt { return .corrupt(path: location.path, detail: error.message) }
    // SQLITE_PROTOCOL: a lock held against SQLite's protocol (any user who may read the file can
    // hold the `-shm`'s write lock) kept a connection from reading the WAL index. It is a lock.
    if error.isBusy || error.primary == SQLITE_PROTOCOL { return .busy(path: location.path) }
    if error.isFull { return .full(path: location.path) }
    if error.isReadOnly { return .notPermitted(path: location.path, detail: error.message) }
    return .unavailable(path: location.path, detail: error.message)
  }

  private static func percentEncoded(_ path: String) -> String {
    var out = ""
    for byte in path.utf8 {
      switch byte {
      case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2F, 0x2D, 0x2E, 0x5F, 0x7E:
        out.unicodeScalars.append(Unicode.Scalar(byte))
      default: out += "%" + hexByte(byte).uppercased()
      }
    }
    return out
  }

  // MARK: - Schema

  /// Each step brings the schema up one version; never edit a step once released.
  static let migrations: [String] = [
    // 1: the ledger and traffic buckets.
    """
    CREATE TABLE interfaces (
      name BLOB PRIMARY KEY,
      class TEXT NOT NULL,
      first_seen_at INTEGER NOT NULL,
      if_index INTEGER NOT NULL,
      boot_id TEXT NOT NULL,
      width INTEGER NOT NULL,
      rx_bytes INTEGER NOT NULL, tx_bytes INTEGER NOT NULL,
      rx_packets INTEGER NOT NULL, tx_packets INTEGER NOT NULL,
      sampled_at INTEGER NOT NULL,
      boottime INTEGER NOT NULL,
      total_rx_bytes INTEGER NOT NULL DEFAULT 0, total_tx_bytes INTEGER NOT NULL DEFAULT 0,
      total_rx_packets INTEGER NOT NULL DEFAULT 0, total_tx_packets INTEGER NOT NULL DEFAULT 0,
      resets INTEGER NOT NULL DEFAULT 0, wraps INTEGER NOT NULL DEFAULT 0,
      discarded INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID;
    CREATE TABLE buckets (
      name BLOB NOT NULL,
      granularity INTEGER NOT NULL,
      start INTEGER NOT NULL,
      class TEXT NOT NULL,
      rx_bytes INTEGER NOT NULL, tx_bytes INTEGER NOT NULL,
      rx_packets INTEGER NOT NULL, tx_packets INTEGER NOT NULL,
      PRIMARY KEY (granularity, start, name)
    ) WITHOUT ROWID;
    """,
    // 2: the session window, the plan, stop records, the trusted clock.
    """
    CREATE TABLE session (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      plan TEXT NOT NULL DEFAULT 'free',
      opened_at INTEGER, session_ends_at INTEGER, pause_ends_at INTEGER,
      session_length INTEGER, pause_length INTEGER,
      tunnel BLOB,
      usage_rx_base INTEGER NOT NULL DEFAULT 0, usage_tx_base INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO session (id) VALUES (1);
    CREATE TABLE stops (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      at INTEGER NOT NULL,
      interface BLOB,
      reason TEXT NOT NULL,
      detail TEXT
    );
    CREATE TABLE trusted_clock (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      wall INTEGER NOT NULL, boottime INTEGER NOT NULL, boot_id TEXT NOT NULL
    );
    """,
    // 3: counts of what the ledger could not see (notification overflows), for reports.
    """
    CREATE TABLE incidents (
      kind TEXT PRIMARY KEY,
      count INTEGER NOT NULL,
      last_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    """,
    // 4: the data cap: bytes per period (day, week, month) and the day months start on.
    """
    ALTER TABLE session ADD COLUMN data_cap_bytes INTEGER;
    ALTER TABLE session ADD COLUMN data_cap_period TEXT;
    ALTER TABLE session ADD COLUMN month_start_day INTEGER;
    """,
    // 5: refusals: connections refused or undone because connecting was not allowed, for readers
    // (`watch`, `session`, `notify`) to say why a VPN did not come up.
    """
    CREATE TABLE refusals (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      at INTEGER NOT NULL,
      interface BLOB,
      by TEXT NOT NULL,
      reason TEXT NOT NULL,
      until INTEGER
    );
    """,
  ]

  /// The oldest schema a reader can read (older ones lack the session): readers never upgrade,
  /// so they read what is there and take the defaults for tables added since.
  static let oldestReadableSchema: Int64 = 2
}
