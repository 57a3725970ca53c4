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
}
