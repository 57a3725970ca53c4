import CSQLite
import VPNStatModel
import VPNStatSystem

/// An error from SQLite, with its result code and message, mapped to how vpnstat reports it.
package struct SQLiteError: Error, CustomStringConvertible {
  package var code: Int32
  package var message: String
  package var description: String { message }

  /// The primary result code (the low byte of an extended code).
  package var primary: Int32 { code & 0xFF }
  package var isBusy: Bool { primary == SQLITE_BUSY || primary == SQLITE_LOCKED }
  package var isCorrupt: Bool { primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB }
  package var isReadOnly: Bool { primary == SQLITE_READONLY || primary == SQLITE_PERM || primary == SQLITE_AUTH }
  package var isCannotOpen: Bool { primary == SQLITE_CANTOPEN }
  package var isFull: Bool { primary == SQLITE_FULL }
}

/// One SQLite connection: the thin layer over the C API that the Store speaks SQL through.
/// Not thread-safe; one per process and thread.
final class SQLiteConnection {
  private(set) var handle: OpaquePointer?
  /// The statements prepared so far, each with its SQL: a few, looked up by a linear search.
  /// A table keyed by the text cost a reader more than the search (its first hashed `String` key
  /// makes the runtime look up the conformance, some 150,000 instructions).
  private var statements: [PreparedStatement] = []

  /// Opens `uri` (a `file:` URI, so read-only and immutable modes can be asked for).
  init(uri: String, readOnly: Bool, create: Bool) throws {
    Self.configureOnce
    var flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
    flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE
    if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
    var db: OpaquePointer?
    let rc = sqlite3_open_v2(uri, &db, flags, nil)
    if rc != SQLITE_OK {
      let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
      sqlite3_close_v2(db)
      throw SQLiteError(code: rc, message: message)
    }
    handle = db
    sqlite3_extended_result_codes(db, 1)
  }

  /// SQLite's process-wide settings, made before its first use (`csqlite_configure`): without
  /// memory statistics unless `memoryStatistics` (a test of what SQLite allocates, in a process of
  /// its own). Only the first call counts; opening a connection makes it if none did.
  static func configureProcess(memoryStatistics: Bool = false) {
    _ = csqlite_configure(memoryStatistics ? 1 : 0)
  }
  private static let configureOnce: Void = { configureProcess() }()

  /// The largest single allocation SQLite made in this process since the last call (the high
  /// mark of `SQLITE_STATUS_MALLOC_SIZE`, reset): a test tells a block of pages from one page.
  static func largestAllocationSinceLastAsked() -> Int {
    var current: Int64 = 0
    var highest: Int64 = 0
    sqlite3_status64(SQLITE_STATUS_MALLOC_SIZE, &current, &highest, 1)
    return Int(highest)
  }

  deinit {
    for statement in statements { sqlite3_finalize(statement.handle) }
    sqlite3_close_v2(handle)
    compilationCount?.deallocate()
  }

  var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }

  /// Frees what the page cache holds (`sqlite3_db_release_memory`).
  func releaseMemory() { sqlite3_db_release_memory(handle) }

  /// Closing this connection checkpoints nothing (see `csqlite_no_checkpoint_on_close`).
  func skipCheckpointOnClose() { _ = csqlite_no_checkpoint_on_close(handle) }

  /// Fires no trigger from here on (a writer's own rows; see `Store.openWriter`).
  func disableTriggers() throws {
    let rc = csqlite_without_triggers(handle)
    if rc != SQLITE_OK { throw error(rc) }
  }

  /// The bytes the page cache holds now (`SQLITE_DBSTATUS_CACHE_USED`).
  var cacheUsed: Int {
    var current: Int32 = 0
    var highest: Int32 = 0
    sqlite3_db_status(handle, SQLITE_DBSTATUS_CACHE_USED, &current, &highest, 0)
    return Int(current)
  }

  private func error(_ rc: Int32) -> SQLiteError {
    SQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)))
  }

  /// The rows the last INSERT, UPDATE or DELETE changed.
  var changes: Int { Int(sqlite3_changes(handle)) }

  /// Runs SQL that returns no rows (several statements allowed).
  func execute(_ sql: String) throws {
    var message: UnsafeMutablePointer<CChar>?
    let rc = sqlite3_exec(handle, sql, nil, nil, &message)
    if rc != SQLITE_OK {
      let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
      sqlite3_free(message)
      throw SQLiteError(code: rc, message: text)
    }
  }

  /// Runs one statement with `bindings`, calling `row` for each result row.
  func query(_ sql: String, _ bindings: [SQLiteValue] = [], row: (SQLiteRow) throws -> Void = { _ in }) throws {
    try run(try prepared(sql), bindings, row: row)
  }

  /// Runs one statement (one that returns no rows) once for each set of bindings `each` hands to
  /// its argument: a save's thousands of rows. The statement is looked up once, not per row —
  /// hashing its text for every row cost a save more than SQLite's own work on some rows.
  func repeatedly(_ sql: String, _ each: (_ run: ([SQLiteValue]) throws -> Void) throws -> Void) throws {
    let statement = try prepared(sql)
    try each { bindings in try self.run(statement, bindings, row: { _ in }) }
  }

  private func run(_ statement: OpaquePointer?, _ bindings: [SQLiteValue], row: (SQLiteRow) throws -> Void) throws {
    var boundBlob = false
    defer {
      sqlite3_reset(statement)
      // Bindings a next run might not replace go back to NULL; where every parameter is bound,
      // each run replaces them all anyway. A blob goes at once: SQLite keeps its copy of a bound
      // value until the statement's next run, and the ledger's snapshot is the whole ledger.
      if boundBlob || bindings.count < sqlite3_bind_parameter_count(statement) { sqlite3_clear_bindings(statement) }
    }
    for (i, value) in bindings.enumerated() {
      let index = Int32(i + 1)
      let rc: Int32
      switch value {
      case .null: rc = sqlite3_bind_null(statement, index)
      case .integer(let v): rc = sqlite3_bind_int64(statement, index, v)
      case .text(let v): rc = sqlite3_bind_text(statement, index, v, -1, transientDestructor)
      case .blob(let v):
        boundBlob = true
        rc = v.withUnsafeBytes {
          sqlite3_bind_blob(
            statement, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), transientDestructor)
        }
      }
      if rc != SQLITE_OK { throw error(rc) }
    }
    while true {
      let rc = sqlite3_step(statement)
      if rc == SQLITE_DONE { return }
      if rc != SQLITE_ROW { throw error(rc) }
      try row(SQLiteRow(statement: statement!))
    }
  }

  /// Hands `body` the size of the blob in `column` of the row `rowid` of `table`, and a function
  /// that copies its bytes from an offset into a buffer (`sqlite3_blob_read`): a blob read in
  /// pieces, never whole (`sqlite3_column_blob` makes one allocation of the blob's size and copies
  /// it there). What `body` returns; nil when there is no such row, or no such table or column
  /// (SQLite tells them apart by message only).
  func withBlob<T>(
    table: String, column: String, rowid: Int64,
    _ body: (_ count: Int, _ read: (UnsafeMutableRawBufferPointer, Int) -> Bool) throws -> T?
  ) throws -> T? {
    var blob: OpaquePointer?
    let rc = sqlite3_blob_open(handle, "main", table, column, rowid, 0, &blob)
    defer { sqlite3_blob_close(blob) }
    if rc == SQLITE_ERROR { return nil }
    if rc != SQLITE_OK { throw error(rc) }
    return try body(Int(sqlite3_blob_bytes(blob))) { buffer, offset in
      guard let base = buffer.baseAddress, let count = Int32(exactly: buffer.count), let at = Int32(exactly: offset)
      else { return buffer.isEmpty }
      return sqlite3_blob_read(blob, base, count, at) == SQLITE_OK
    }
  }

  /// The first column of the first row, as an integer.
  func scalar(_ sql: String, _ bindings: [SQLiteValue] = []) throws -> Int64? {
    var result: Int64?
    try query(sql, bindings) { row in if result == nil { result = row.optionalInteger(0) } }
    return result
  }

  private func prepared(_ sql: String) throws -> OpaquePointer? {
    if let cached = statements.first(where: { $0.sql == sql }) { return cached.handle }
    var statement: OpaquePointer?
    let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
    if rc != SQLITE_OK { throw error(rc) }
    guard let statement else { return nil }  // only comments or white space: nothing to run
    statements.append(PreparedStatement(sql: sql, handle: statement))
    return statement
  }

  /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
  /// `immediate` takes the write lock at once, so two writers serialise instead of deadlocking.
  /// Its statements are prepared once, as every other: `execute` would compile them at each
  /// transaction, and a recorder that runs nothing but prepared statements between saves leaves
  /// SQLite's parser — its code and its tables — out of its resident memory.
  func transaction<T>(immediate: Bool = true, _ body: () throws -> T) throws -> T {
    // A read inside a transaction already open is part of it (a report reads in one, and the
    // use cases it calls read in their own); a write never joins one silently: BEGIN fails.
    if !immediate && sqlite3_get_autocommit(handle) == 0 { return try body() }
    try query(immediate ? "BEGIN IMMEDIATE" : "BEGIN")
    do {
      let result = try body()
      try query("COMMIT")
      return result
    } catch {
      try? query("ROLLBACK")
      throw error
    }
  }

  /// Counts from now on what SQLite compiles on this connection, for a test that holds a loop to
  /// statements prepared before it: SQLite asks an authorizer about every statement it compiles
  /// (a few questions each), and about nothing else. Setting one expires the prepared statements,
  /// which are compiled again at their next run.
  func countCompilations() {
    guard compilationCount == nil else { return }
    let count = UnsafeMutablePointer<Int>.allocate(capacity: 1)
    count.initialize(to: 0)
    compilationCount = count
    sqlite3_set_authorizer(
      handle,
      { context, _, _, _, _, _ in
        context?.assumingMemoryBound(to: Int.self).pointee += 1
        return SQLITE_OK
      }, UnsafeMutableRawPointer(count))
  }
  /// The heap the statement prepared for `sql` holds now, its bound values included
  /// (`SQLITE_STMTSTATUS_MEMUSED`); nil when `sql` was never prepared.
  func memoryHeld(by sql: String) -> Int? {
    statements.first { $0.sql == sql }.map { Int(sqlite3_stmt_status($0.handle, SQLITE_STMTSTATUS_MEMUSED, 0)) }
  }

  /// The authorizer's questions since `countCompilations()`; nil before.
  var compilations: Int? { compilationCount?.pointee }
  private var compilationCount: UnsafeMutablePointer<Int>?
}

/// A statement prepared once and kept for the connection's life: its SQL, SQLite's handle.
private struct PreparedStatement {
  let sql: String
  let handle: OpaquePointer
}

private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A value bound to a statement parameter.
enum SQLiteValue {
  case null
  case integer(Int64)
  case text(String)
  case blob([UInt8])

  static func unsigned(_ value: UInt64) -> SQLiteValue { .integer(Int64(bitPattern: value)) }
  /// rx bytes, tx bytes, rx packets, tx packets: the columns' order wherever they are stored.
  static func traffic(_ counts: TrafficCounts) -> [SQLiteValue] {
    [.unsigned(counts.rxBytes), .unsigned(counts.txBytes), .unsigned(counts.rxPackets), .unsigned(counts.txPackets)]
  }
  static func optional(_ value: Int64?) -> SQLiteValue { value.map(SQLiteValue.integer) ?? .null }
}

/// The current row of a query, valid inside the row callback.
struct SQLiteRow {
  let statement: OpaquePointer

  func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }
  func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
  func optionalInteger(_ column: Int32) -> Int64? { isNull(column) ? nil : integer(column) }
  func unsigned(_ column: Int32) -> UInt64 { UInt64(bitPattern: integer(column)) }
  /// Four columns from `column` on, in `SQLiteValue.traffic`'s order.
  func traffic(_ column: Int32) -> TrafficCounts {
    TrafficCounts(
      rxBytes: unsigned(column), txBytes: unsigned(column + 1), rxPackets: unsigned(column + 2),
      txPackets: unsigned(column + 3))
  }
  func text(_ column: Int32) -> String? {
    guard let pointer = sqlite3_column_text(statement, column) else { return nil }
    return String(cString: pointer)
  }
  /// The text, or `previous` (else `other`) itself when it holds the same bytes (a thousand rows
  /// that share a boot id then share one String instead of making a thousand).
  func text(_ column: Int32, reusing previous: String?, or other: String? = nil) -> String? {
    guard let pointer = sqlite3_column_text(statement, column) else { return nil }
    let bytes = UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column)))
    if let previous, Self.same(bytes, previous) { return previous }
    if let other, Self.same(bytes, other) { return other }
    return String(decoding: bytes, as: UTF8.self)
  }
  /// Whether the column holds `text`'s bytes (no String made of it).
  func textEquals(_ column: Int32, _ text: String) -> Bool {
    guard let pointer = sqlite3_column_text(statement, column) else { return false }
    return Self.same(UnsafeBufferPointer(start: pointer, count: Int(sqlite3_column_bytes(statement, column))), text)
  }
  /// Compared eight bytes at a time: a boot id is 36 bytes, compared on each of a thousand
  /// rows, and `elementsEqual` (iterators, a byte at a time) was a third of decoding a row.
  private static func same(_ bytes: UnsafeBufferPointer<UInt8>, _ text: String) -> Bool {
    var text = text
    return text.withUTF8 { utf8 in
      guard utf8.count == bytes.count else { return false }
      guard let a = utf8.baseAddress, let b = bytes.baseAddress else { return true }
      let (left, right) = (UnsafeRawPointer(a), UnsafeRawPointer(b))
      var i = 0
      while i + 8 <= utf8.count {
        let word = left.loadUnaligned(fromByteOffset: i, as: UInt64.self)
        if word != right.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
        i += 8
      }
      while i < utf8.count {
        if a[i] != b[i] { return false }
        i += 1
      }
      return true
    }
  }
  /// The blob's bytes where SQLite holds them, for `body` only (no copy).
  func withBlob<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
    let pointer = sqlite3_column_blob(statement, column)
    return body(
      UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : Int(sqlite3_column_bytes(statement, column))))
  }
  func blob(_ column: Int32) -> [UInt8] {
    let count = Int(sqlite3_column_bytes(statement, column))
    guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
    return Array(UnsafeRawBufferPointer(start: pointer, count: count))
  }
}
