import Foundation
import Testing

@testable import VPNStatStore
@testable import VPNStatTestSupport

/// What a database connection keeps in memory while it stays open.
struct StoreMemoryTests {
  @Test(
    "a writer runs for good with a 512 KiB page cache, not SQLite's 2 MiB; a reader keeps SQLite's (it reads each page once)"
  )
  func writerCache() throws {
    let directory = try TemporaryDirectory("cache")
    let path = directory.file("v.db")
    let writer = try #require(try Store.open(StoreLocation(path: path), intent: .write))
    #expect(try writer.connection.scalar("PRAGMA cache_size") == -Int64(Store.writerCacheKiB))
    #expect(Store.writerCacheKiB == 512)
    let reader = try #require(try Store.open(StoreLocation(path: path), intent: .read))
    #expect(try reader.connection.scalar("PRAGMA cache_size") == -2000)
  }

  @Test("a writer hands its page cache back when asked (the recorder does after every save): it keeps no page")
  func cacheReleased() throws {
    let directory = try TemporaryDirectory("release")
    let writer = try #require(try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write))
    try writer.connection.execute(
      """
      CREATE TABLE filler(x);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
      INSERT INTO filler SELECT randomblob(300) FROM n;
      """)
    #expect(try writer.connection.scalar("SELECT count(*) FROM filler") == 1000)
    let filled = writer.cacheBytes
    #expect(filled > 200 * 1024, "\(filled) bytes")
    writer.releaseCache()
    #expect(writer.cacheBytes < 16 * 1024, "\(writer.cacheBytes) bytes of \(filled)")
    // Still a working writer: the pages come back from the file.
    #expect(try writer.connection.scalar("SELECT count(*) FROM filler") == 1000)
  }

  @Test("a statement keeps no copy of a blob once it has run: the recorder's snapshot is the whole ledger")
  func blobNotKept() throws {
    let directory = try TemporaryDirectory("blob")
    let connection = try SQLiteConnection(uri: "file:" + directory.file("v.db"), readOnly: false, create: true)
    try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB)")
    let insert = "INSERT OR REPLACE INTO t (id, b) VALUES (1, ?)"
    try connection.query(insert, [.blob([UInt8](repeating: 7, count: 100_000))])
    let held = try #require(connection.memoryHeld(by: insert))
    #expect(held < 50_000, "\(held) bytes")
    #expect(try connection.scalar("SELECT length(b) FROM t") == 100_000)
  }

  @Test("a page cache allocates page by page, never SQLite's block of 20 pages that would outlast every release")
  func noBlockOfPages() async {
    // In a process of its own: SQLite's allocation statistics are the process's, and kept only
    // where asked for before its first use.
    await #expect(processExitsWith: .success) {
      SQLiteConnection.configureProcess(memoryStatistics: true)
      let directory = try TemporaryDirectory("block")
      let path = directory.file("v.db")
      let setup = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: true)
      try setup.execute(
        """
        CREATE TABLE filler(x);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
        INSERT INTO filler SELECT randomblob(300) FROM n;
        """)
      // A fresh connection's first read makes its page cache.
      let connection = try SQLiteConnection(uri: "file:" + path, readOnly: false, create: false)
      _ = SQLiteConnection.largestAllocationSinceLastAsked()
      let rows = try connection.scalar("SELECT count(*) FROM filler")
      let largest = SQLiteConnection.largestAllocationSinceLastAsked()
      // Counted at all (statistics kept), and never a block.
      if rows != 200 || largest == 0 || largest > 16 * 1024 { exit(1) }
    }
  }

  @Test(
    "SQLite keeps no allocation statistics unless asked: counting took a process-wide mutex at every malloc and free"
  )
  func noMemoryStatistics() async {
    await #expect(processExitsWith: .success) {
      let directory = try TemporaryDirectory("statistics")
      let connection = try SQLiteConnection(uri: "file:" + directory.file("v.db"), readOnly: false, create: true)
      try connection.execute("CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(5000))")
      _ = try connection.scalar("SELECT count(*) FROM t")
      if SQLiteConnection.largestAllocationSinceLastAsked() != 0 { exit(1) }
    }
  }
}
