import CSQLite
import VPNStatModel
import VPNStatSystem

/// The one SQLite database behind everything that must outlive a process: the ledger, the
/// traffic buckets, the session window, the plan, stop records. The only code that speaks SQL.
/// Several processes use it at once; each write is one transaction.
///
/// No process ever waits on a lock another user can take. SQLite's locks are byte ranges of the
/// database's files, which every process that may read the file can hold (a reader's lock on the
/// WAL's `-shm` stopped every write of root's). So nothing here uses them, nor the `-shm`: every
/// connection keeps its WAL index in its own memory (`vfs=unix-none`, exclusive locking mode,
/// which reads the log when it opens). Writers write under their own `WriterLock` — a private
/// file of the writing user's, which nobody else can open — and open their connection again when
/// another writer wrote since (their index would be stale). Readers read without any lock: a read
/// counts only when the file's `StoreStamp` — the log's size and salts, the file's identity — is
/// the same before and after it; otherwise it is read again. The log keeps WAL's economy: a page
/// changed in many commits reaches the file once, at a checkpoint.
package final class Store {
  package let location: StoreLocation
  /// The calendar the hourly, daily and monthly buckets follow.
  package let calendar: any LocalCalendar
  /// A writer's connection: used only under its lock, opened again when another writer wrote.
  private var writing: SQLiteConnection?
  /// The stamp after the writer's last operation: another, at the next, means another writer.
  private var writerStamp: StoreStamp?
  /// How many times this writer opened its connection: at its first operation, and at each that
  /// found the file changed by another writer since its last. Equal at two moments, and the file
  /// then as this writer left it (`writtenVersion`), no one else committed in between.
  package private(set) var writerEpoch = 0
  /// The connection reads use, opened at the stamp they read (a new one when the file changed:
  /// an immutable connection never looks again).
  private var reading: SQLiteConnection?
  /// Whether the operation running now reads through `reading` (a writer's too, when it reads
  /// only: it need not wait for the lock).
  private(set) var inRead = false
  /// The connection of the operation running now (`guarded`, `reading`); outside one (a test's
  /// look), the writer's, else the reader's last.
  var connection: SQLiteConnection { (inRead ? reading : writing ?? reading)! }
  /// True when this connection was opened for reading: it never writes.
  package let isReadOnly: Bool
  /// The ledger as last loaded or written by this connection, and SQLite's `data_version` then:
  /// while no other connection commits, a long-running sampler need not reload it every tick.
  var cachedLedger: (ledger: Ledger, dataVersion: Int64)?
  /// When this connection last deleted buckets past their retention.
  var lastPrune: Timestamp?
  /// Where a writer puts what it publishes for readers (`PublishedState`), with a link to it
  /// beside the database; nil (or a directory others may write): beside the database itself.
  /// The recorder's service manager makes it one on tmpfs (`$RUNTIME_DIRECTORY`).
  package var publishingDirectory: String?
  /// The schema version of the file as opened (current once a writer has migrated it).
  var schema: Int64 = 0
  /// How long an operation waits for another writer, or for a reader's consistent read.
  private(set) var busyTimeoutMilliseconds: Int32
  /// CLOCK_MONOTONIC nanoseconds after which no operation waits any more (`waitingAtMost`).
  private var busyDeadline: Int64?
  /// A writer's lock, taken around each of its operations.
  private let writerLock: WriterLock?
  /// The database's real path, where its stamp is read.
  let realPath: String
  /// The files of `realPath`'s stamp, named once.
  let stampFiles: StoreStamp.Files
  /// The stamp `reading` was opened at.
  private var openedAt: StoreStamp?
  /// How many connections reads opened: one at each stamp they met, so one per commit read after
  /// (each parses the schema).
  package private(set) var readConnections = 0
  /// How many times `dataVersion()` read the stamp (some ten system calls each): a recorder asks
  /// once a sample.
  package internal(set) var stampReads = 0
  /// Writes to the stamp's files, watched (`watchStamp()`), and the version `dataVersion()` read
  /// last: given again while nothing was written.
  var stampWatch: (changes: FileChanges, version: Int64?)?
  /// The stamp the last consistent read ended at: the next read starts from it rather than
  /// reading it again (8 system calls of a `status --db`'s 175). A commit since then makes that
  /// read's own closing stamp differ, and it runs again at once from a fresh one.
  private var lastReadStamp: StoreStamp?
  /// Operations running now: one inside another is part of it (one lock, one consistent read).
  private(set) var depth = 0

  /// How a command means to use the database.
  package enum Intent: Sendable {
    /// Read only: never create, upgrade or write anything, and take no lock (`status`, `watch`,
    /// `export`, `session`, the connect gate, `history`).
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
  /// cannot use. Each operation waits up to `busyTimeoutMilliseconds` for another writer (or, a
  /// reader, for a write in progress to end); with `waitingAtMost`, all of them together wait no
  /// longer than that.
  package static func open(
    _ location: StoreLocation, intent: Intent, busyTimeoutMilliseconds: Int32 = 2000, waitingAtMost: Duration? = nil,
    calendar: any LocalCalendar = SystemCalendar()
  ) throws -> Store? {
    let deadline = waitingAtMost.map { SystemClock.monotonic + $0.nanoseconds }
    let exists = location.exists
    if exists, let status = FileStatus.of(location.path), !status.isRegular {
      throw StoreError.unavailable(path: location.path, detail: "not a regular file")
    }
    if intent == .read {
      guard exists, (FileStatus.of(location.path)?.size ?? 0) > 0 else { return nil }
      let store = Store(
        location: location, writerLock: nil, busyTimeoutMilliseconds: busyTimeoutMilliseconds, deadline: deadline,
        calendar: calendar)
      // An empty schema (its creator has not written one yet) is no database to read.
      return try store.reading { store.schema } > 0 ? store : nil
    }
    if !location.isWritable {
      throw StoreError.notPermitted(
        path: location.path,
        detail: exists ? "no write access to the file or its directory" : "cannot create it in \(location.directory)")
    }
    try location.checkDirectoryTrust()
    if !exists { try create(location) }
    // A writer that died in the middle of a write of a file in rollback mode (another program, a
    // file of an older vpnstat) left its journal: SQLite's own recovery (the journal played back)
    // comes first, under the lock, so that the file can be read at all. (A WAL's half-written
    // commit is no commit: readers read the one before.)
    let realPath = FileSystem.realPath(location.path) ?? location.path
    var store: Store?
    func writer() throws -> Store {
      if let store { return store }
      let made = Store(
        location: location, writerLock: try makeWriterLock(location), busyTimeoutMilliseconds: busyTimeoutMilliseconds,
        deadline: deadline, calendar: calendar)
      store = made
      return made
    }
    if StoreStamp.read(database: realPath)?.isWriting == true {
      // Opening the writer's connection plays it back (`openWriter`).
      try writer().guarded {}
    }
    // Nothing writes to a file found damaged or not vpnstat's, its lock included: every page is
    // looked at, as a reader looks (no lock held meanwhile), before the first write.
    if let reader = try Store.open(
      location, intent: .read, busyTimeoutMilliseconds: busyTimeoutMilliseconds, waitingAtMost: waitingAtMost,
      calendar: calendar), let problem = try reader.reading({ try reader.integrityProblem() })
    {
      throw StoreError.corrupt(path: location.path, detail: problem)
    }
    let opened = try writer()
    try opened.guarded { try opened.prepareForWriting() }
    return opened
  }

  /// The writer's lock for the database at `location` (`WriterLock`), as a `StoreError` when it
  /// cannot be made or trusted.
  private static func makeWriterLock(_ location: StoreLocation) throws -> WriterLock {
    do {
      return try WriterLock(path: location.lockPath("write"))
    } catch let failure as ProcessLock.Failure {
      if case .unusable(_, let detail, let notPermitted) = failure, notPermitted {
        throw StoreError.notPermitted(path: location.path, detail: "its lock: \(detail)")
      }
      throw StoreError.unavailable(path: location.path, detail: "\(failure)")
    }
  }

  /// Plays back the journal a writer that died in the middle of a write left (SQLite does so
  /// when a connection that may write starts to read and finds one, which it takes for a dead
  /// writer's: no lock of SQLite's says otherwise here, and this writer holds the writers' lock).
  /// Not the writer's own connection: in exclusive locking mode SQLite keeps the journal (its
  /// header zeroed), which readers would take for a write under way.
  private func rollBackDeadWrite() throws {
    let connection = try Self.connect(location, query: "?vfs=unix-none", readOnly: false)
    _ = try connection.scalar("SELECT count(*) FROM sqlite_master")
  }

  private init(
    location: StoreLocation, writerLock: WriterLock?, busyTimeoutMilliseconds: Int32, deadline: Int64?,
    calendar: any LocalCalendar
  ) {
    self.location = location
    self.calendar = calendar
    self.writerLock = writerLock
    self.isReadOnly = writerLock == nil
    self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
    self.busyDeadline = deadline
    realPath = FileSystem.realPath(location.path) ?? location.path
    stampFiles = StoreStamp.Files(database: realPath)
  }

  /// From now on `dataVersion()` reads the stamp only when the database, its `-wal` or its
  /// `-journal` was written, created, replaced, deleted or given another owner or mode since
  /// its last read (inotify on their directory, `FileChanges`); otherwise it gives the version
  /// it read then. For a process that asks every second between its own writes (the recorder):
  /// the stamp is ten system calls, two of them opens. A watch that cannot be made, or is lost,
  /// leaves every call reading.
  ///
  /// Whoever may write the file makes the events a watch reports; a write by anyone else cannot
  /// be hidden by them, and events they pile up only make the reads happen (an overflowed queue
  /// counts as a change).
  package func watchStamp() {
    guard stampWatch == nil,
      let changes = try? StoreLocation(path: realPath).changes(
        suffixes: ["", "-wal", "-journal"], databaseAttributes: true)
    else { return }
    stampWatch = (changes, nil)
  }

  /// Creates the directory (0755) and an empty file (0644) so the modes do not depend on umask:
  /// users who may not write must be able to read it.
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

  private static func connect(_ location: StoreLocation, query: String, readOnly: Bool) throws -> SQLiteConnection {
    let uri = "file:" + percentEncoded(location.path) + query
    do {
      return try SQLiteConnection(uri: uri, readOnly: readOnly, create: false)
    } catch let error as SQLiteError {
      throw map(error, location)
    }
  }

  /// A reader's connection for the file at `stamp`: one that reads the log into its own memory
  /// when it opens (exclusive locking mode, `vfs=unix-none`: no lock, never the `-shm` any reader
  /// could lock); for a file without a log (in rollback mode, or whose log is gone), an immutable
  /// one. Either never looks again: the stamps around each read say whether the file held still.
  private func openReader(at stamp: StoreStamp) throws {
    reading = nil
    readConnections += 1
    let connection: SQLiteConnection
    if stamp.isWAL, stamp.hasLog {
      connection = try Self.connect(location, query: "?mode=ro&vfs=unix-none", readOnly: true)
      try connection.execute("PRAGMA locking_mode=EXCLUSIVE")
    } else {
      connection = try Self.connect(location, query: "?immutable=1", readOnly: true)
    }
    // Closed, a connection that may write the log (root's reader: SQLite opens the `-wal` read-
    // write when it can) would check it into the file and delete it under a writer.
    connection.skipCheckpointOnClose()
    reading = connection
    openedAt = stamp
    _ = try validate()
  }

  /// Reads what makes this file ours before anything is written to it. Returns false for an
  /// empty file a reader finds (its creator has not written the schema yet: no database to read).
  private func validate() throws -> Bool {
    var applicationID: Int64 = 0
    var version: Int64 = 0
    var tables: Int64 = 0
    try connection.transaction(immediate: false) {
      applicationID = try connection.scalar("PRAGMA application_id") ?? 0
      version = try connection.scalar("PRAGMA user_version") ?? 0
      if applicationID == 0 && version == 0 {
        tables = try connection.scalar("SELECT count(*) FROM sqlite_master") ?? 0
      }
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
    guard isReadOnly else { return true }
    if version == 0 { return false }
    if version < Self.oldestReadableSchema {
      throw StoreError.olderSchema(path: location.path, found: version, supported: Self.schemaVersion)
    }
    return true
  }

  /// A writer's connection, under its lock: the file checked to be vpnstat's, the schema
  /// brought up to date.
  private func prepareForWriting() throws {
    _ = try validate()
    // A file in rollback mode (new, an older vpnstat's, another program's) goes to WAL mode.
    try connection.execute("PRAGMA journal_mode=WAL")
    if schema < Self.schemaVersion {
      try connection.transaction {
        // Re-read under the write lock: another process may have migrated meanwhile.
        let current = try connection.scalar("PRAGMA user_version") ?? 0
        guard current < Self.schemaVersion else { return }
        for step in Int(current)..<Self.migrations.count { try connection.execute(Self.migrations[step]) }
        try connection.execute("PRAGMA application_id = \(Self.applicationID)")
        try connection.execute("PRAGMA user_version = \(Self.schemaVersion)")
      }
      schema = Self.schemaVersion
    }
    try addLedgerSnapshot()
  }

  /// The writer's connection, new: its WAL index in its own memory (exclusive locking mode, never
  /// the `-shm`), built from the log as it stands now (`stamp`), under the writers' lock.
  private func openWriter(at stamp: StoreStamp?) throws {
    writing = nil
    // Its data_version starts again: what it cached of an earlier connection's is not known good.
    cachedLedger = nil
    if stamp?.isWriting == true { try rollBackDeadWrite() }
    let connection = try Self.connect(location, query: "?vfs=unix-none", readOnly: false)
    connection.skipCheckpointOnClose()
    // The snapshot's triggers are for other writers (plain SQL, a repair by hand): this one
    // removes the mark itself, once a save (`write`), where a trigger ran a program of its own
    // for every row (a third of what SQLite spent on a row). Nor does a trigger someone put in
    // the file run as this process.
    try connection.disableTriggers()
    // A writer runs for good: SQLite's default page cache (2 MiB) would fill with pages read once
    // and stay that size. A save touches the ledger's table and the current buckets, some 500 KiB
    // at a thousand interfaces; the rest is read again from the OS's cache. When the log starts
    // over it is cut to what the commit wrote, not left at its largest.
    try connection.execute(
      """
      PRAGMA locking_mode=EXCLUSIVE; PRAGMA cache_size = -\(Self.writerCacheKiB); PRAGMA synchronous=NORMAL;
      PRAGMA journal_size_limit=0
      """)
    writing = connection
    // A writer that died before its commit left frames at the log's end; commits from here would
    // be written over them, and one shorter would leave the log's last frame (and stamp) as it
    // was. Checked into the file, the log starts over at the next commit, with new salts.
    if stamp?.logEndsUncommitted == true { try checkpointLog() }
  }

  /// Copies the log's pages into the file, under the writer's lock; this connection's next
  /// commit starts the log over, with new salts. The log is left as it is, not truncated: a
  /// reader of it still reads those pages from it, and its stamp stays that of the state it
  /// holds. (A log cut to nothing would show the stamp an earlier empty log showed, though the
  /// file changed between: SQLite moves the header's change counter once per exclusive lock.)
  func checkpointLog() throws {
    guard let stamp = StoreStamp.read(stampFiles), stamp.isWAL, stamp.logSize > 0 else { return }
    try connection.execute("PRAGMA wal_checkpoint(RESTART)")
  }

  /// The ledger's snapshot (`LedgerSnapshot`), the mark that it is current (with the token a
  /// reader compares, `LedgerVersion`), and the triggers that remove the mark when any writer
  /// changes a row. The mark is a table of its own: a trigger that deleted (or updated) the
  /// snapshot's row would free (or read) its every page once per row written. The triggers
  /// delete `WHERE id = 1`: a `DELETE` of the whole table rewrites its root page even when it is
  /// empty, a page more in every save. Made again when missing (schema 7 made the rows' table
  /// anew) or of an earlier build; the snapshot is then stale until the next save stores it.
  private func addLedgerSnapshot() throws {
    let present = "SELECT count(*) FROM sqlite_master WHERE name = 'ledger_snapshot_stale_on_update'"
    guard try connection.scalar(present) == 0 else { return }
    try connection.transaction {
      // A mark without a token (an early build of this table) is replaced.
      let tokens = "SELECT count(*) FROM pragma_table_info('ledger_snapshot_current') WHERE name = 'token'"
      if try connection.scalar(tokens) == 0 {
        try connection.execute(
          """
          DROP TABLE IF EXISTS ledger_snapshot_current;
          CREATE TABLE ledger_snapshot_current (id INTEGER PRIMARY KEY CHECK (id = 1), token INTEGER NOT NULL);
          """)
      }
      try connection.execute(
        """
        CREATE TABLE IF NOT EXISTS ledger_snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), data BLOB NOT NULL);
        DROP TRIGGER IF EXISTS ledger_snapshot_on_insert;
        DROP TRIGGER IF EXISTS ledger_snapshot_on_update;
        DROP TRIGGER IF EXISTS ledger_snapshot_on_delete;
        CREATE TRIGGER ledger_snapshot_stale_on_insert AFTER INSERT ON interfaces
          BEGIN DELETE FROM ledger_snapshot_current WHERE id = 1; END;
        CREATE TRIGGER ledger_snapshot_stale_on_update AFTER UPDATE ON interfaces
          BEGIN DELETE FROM ledger_snapshot_current WHERE id = 1; END;
        CREATE TRIGGER ledger_snapshot_stale_on_delete AFTER DELETE ON interfaces
          BEGIN DELETE FROM ledger_snapshot_current WHERE id = 1; END;
        DELETE FROM ledger_snapshot_current;
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
  package func releaseCache() {
    writing?.releaseMemory()
    reading?.releaseMemory()
  }

  /// The bytes the page cache holds now.
  package var cacheBytes: Int { (writing?.cacheUsed ?? 0) + (reading?.cacheUsed ?? 0) }

  /// Changes how long each operation waits for another writer (an enforcer opens with time to
  /// migrate, then waits only moments: it must never be held up by the database).
  package func setBusyTimeout(milliseconds: Int32) {
    busyTimeoutMilliseconds = milliseconds
  }

  /// Runs a database operation that may write: a writer's under its `WriterLock`, on its own
  /// connection; a reader's as `reading` runs it. SQLite's errors become `StoreError`s that name
  /// the file. An operation inside another is part of it.
  func guarded<T>(_ body: () throws -> T) throws -> T {
    guard let writerLock, depth == 0 else { return try reading(body) }
    depth = 1
    defer { depth = 0 }
    lastReadStamp = nil
    do {
      return try writerLock.holding(until: deadline()) {
        // Another writer wrote since this one's last operation: its index of the log is stale.
        let now = StoreStamp.read(stampFiles)
        if writing == nil || now == nil || now != writerStamp {
          writerEpoch += 1
          try mapped { try openWriter(at: now) }
        }
        defer { writerStamp = StoreStamp.read(stampFiles) }
        return try mapped(body)
      }
    } catch is WriterLock.Busy {
      throw StoreError.busy(path: location.path)
    } catch let error as Errno {
      throw StoreError.unavailable(path: location.path, detail: "its lock: \(error)")
    }
  }

  /// Runs an operation that only reads, taking no lock, by readers and writers alike: one
  /// consistent read, the stamp the same before and after (read again when a commit came
  /// between, waiting while a write is under way). Inside another operation, part of it.
  func reading<T>(_ body: () throws -> T) throws -> T {
    if depth > 0 { return try mapped(body) }
    depth = 1
    inRead = true
    defer {
      depth = 0
      inRead = false
    }
    let deadline = deadline()
    var known = lastReadStamp
    lastReadStamp = nil
    while true {
      let fresh = known == nil
      guard let before = known ?? StoreStamp.read(stampFiles) else { throw noStamp() }
      known = nil
      if !before.isWriting {
        do {
          let result = try mapped {
            if openedAt != before { try openReader(at: before) }
            return try body()
          }
          if StoreStamp.read(stampFiles) == before {
            lastReadStamp = before
            return result
          }
        } catch {
          // Damage seen in a file that held still is damage; a commit meanwhile may have made it.
          if StoreStamp.read(stampFiles) == before { throw error }
        }
      }
      // A commit came after the last read: read again at once, from the file as it is now.
      if !fresh { continue }
      if SystemClock.monotonic >= deadline { throw StoreError.busy(path: location.path) }
      SystemClock.sleep(for: .milliseconds(1))
    }
  }

  /// Why the file has no stamp: gone, or no SQLite file.
  func noStamp() -> StoreError {
    FileSystem.exists(realPath)
      ? StoreError.notADatabase(path: location.path)
      : StoreError.unavailable(path: location.path, detail: "it is gone")
  }

  /// When the operation starting now stops waiting: its busy timeout, and never after the
  /// deadline of all (`waitingAtMost`).
  private func deadline() -> Int64 {
    let own = SystemClock.monotonic + Int64(busyTimeoutMilliseconds) * 1_000_000
    return busyDeadline.map { min(own, $0) } ?? own
  }

  /// The version of the file the running read reads (its connection's stamp, hashed), which any
  /// commit changes.
  var lastReadVersion: Int64 { Self.version(of: openedAt) }

  /// A stamp as a version (FNV-1a of its bytes): what `dataVersion()` and `writtenVersion` give.
  static func version(of stamp: StoreStamp?) -> Int64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in stamp?.bytes ?? [] { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return Int64(bitPattern: hash)
  }

  /// The file's version (`dataVersion()`) as this writer's last operation left it, read under its
  /// lock; nil before its first.
  package var writtenVersion: Int64? { writerStamp.map { Self.version(of: $0) } }

  /// `body`, with SQLite's errors as `StoreError`s.
  private func mapped<T>(_ body: () throws -> T) throws -> T {
    do {
      return try body()
    } catch let error as SQLiteError {
      throw Self.map(error, location)
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
    // 6: the hourly, daily and monthly buckets are the 5-minute ones folded in once closed
    // (`Store.foldedThrough`): those from `through` on are not in them yet. Every bucket so far
    // was written at every save, so everything up to the last 5-minute bucket's end is.
    """
    CREATE TABLE bucket_fold (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL);
    INSERT INTO bucket_fold (id, through) SELECT 1, coalesce(max(start) + 300, 0) FROM buckets WHERE granularity = 0;
    """,
    // 7: an interface's boot is a number (`boots`): the boot id's 36 characters were a third of
    // every row a save writes. The table is made anew (a column's type cannot change in place);
    // the snapshot's triggers go with the old one and are made again (`addLedgerSnapshot`). No
    // index on the id: the table holds a row per boot an interface is of (`prune`), a writer
    // looks one up once a save, and every reader would parse the index with the schema.
    """
    CREATE TABLE boots (id INTEGER PRIMARY KEY, boot_id TEXT NOT NULL);
    INSERT INTO boots (boot_id) SELECT DISTINCT boot_id FROM interfaces ORDER BY boot_id;
    CREATE TABLE interfaces_7 (
      name BLOB PRIMARY KEY,
      class TEXT NOT NULL,
      first_seen_at INTEGER NOT NULL,
      if_index INTEGER NOT NULL,
      boot INTEGER NOT NULL,
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
    INSERT INTO interfaces_7 SELECT name, class, first_seen_at, if_index,
      (SELECT id FROM boots WHERE boots.boot_id = interfaces.boot_id), width, rx_bytes, tx_bytes, rx_packets,
      tx_packets, sampled_at, boottime, total_rx_bytes, total_tx_bytes, total_rx_packets, total_tx_packets, resets,
      wraps, discarded FROM interfaces;
    DROP TABLE interfaces;
    ALTER TABLE interfaces_7 RENAME TO interfaces;
    """,
  ]

  /// The oldest schema a reader can read (older ones lack the session): readers never upgrade,
  /// so they read what is there and take the defaults for tables added since.
  static let oldestReadableSchema: Int64 = 2
}
