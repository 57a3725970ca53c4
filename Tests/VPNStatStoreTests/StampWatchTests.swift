import Foundation
import Testing
import VPNStatModel
import VPNStatStore
import VPNStatSystem

@testable import VPNStatTestSupport

/// A watched stamp (`Store.watchStamp()`): the version a recorder asks for every second is read
/// from the files only after something wrote them, and is then what an unwatched read of the
/// same files says, whoever wrote them and however.
struct StampWatchTests {
  let clock = ManualTimeSource()

  /// A database with a session, the writer that made it (watching its stamp), and a reader that
  /// does not watch: what the files say at each moment.
  func watched(_ directory: TemporaryDirectory) throws -> (StoreLocation, Store, Store) {
    let location = StoreLocation(path: directory.file("w.db"))
    let writer = try #require(try Store.open(location, intent: .write))
    try writer.updateSession { $0.tunnel = InterfaceName("tun0") }
    writer.watchStamp()
    let truth = try #require(try Store.open(location, intent: .read))
    return (location, writer, truth)
  }

  func openWindow(_ store: Store) throws {
    try store.updateSession { record in
      record.window = SessionWindow.open(at: clock.now().wall, lengths: .release)
    }
  }

  @Test(
    "watched, the stamp is read once between writes and again after each: another writer's commit, a new mode, the file replaced"
  )
  func readAfterEachWrite() throws {
    let directory = try TemporaryDirectory("stampwatch")
    let (location, watcher, truth) = try watched(directory)
    var seen = [try watcher.dataVersion()]
    let reads = watcher.stampReads
    for _ in 0..<5 { #expect(try watcher.dataVersion() == seen[0]) }
    #expect(watcher.stampReads == reads, "nothing was written, yet the stamp was read again")
    #expect(try truth.dataVersion() == seen[0])

    func expectNewVersion(after what: String, _ write: () throws -> Void) throws {
      let before = watcher.stampReads
      try write()
      let version = try watcher.dataVersion()
      #expect(version == (try truth.dataVersion()), "after \(what) the watched version is not the file's")
      #expect(!seen.contains(version), "after \(what) the version did not move")
      #expect(watcher.stampReads == before + 1, "after \(what)")
      #expect(try watcher.dataVersion() == version)
      #expect(watcher.stampReads == before + 1, "after \(what), read again with nothing written since")
      seen.append(version)
    }
    let other = try #require(try Store.open(location, intent: .write))
    try expectNewVersion(after: "another writer's commit") { try openWindow(other) }
    try expectNewVersion(after: "a chmod") {
      try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: location.path)
    }
    try expectNewVersion(after: "the file replaced by a rename") {
      let copy = directory.file("w.db.copy")
      try FileManager.default.copyItem(atPath: location.path, toPath: copy)
      #expect(rename(copy, location.path) == 0)
    }
    try expectNewVersion(after: "the log deleted") {
      try FileManager.default.removeItem(atPath: location.path + "-wal")
    }
  }

  @Test("a watch that is lost (its directory moved) reads the stamp at every call, and still sees every commit")
  func lostWatchReadsEveryTime() throws {
    let directory = try TemporaryDirectory("stamplost")
    let (location, watcher, truth) = try watched(directory)
    let first = try watcher.dataVersion()
    // Moved away and back: the path names the same files, but the watch no longer says so.
    let moved = directory.path + ".moved"
    #expect(rename(directory.path, moved) == 0)
    #expect(rename(moved, directory.path) == 0)
    #expect(try watcher.dataVersion() == first)
    let reads = watcher.stampReads
    #expect(try watcher.dataVersion() == first)
    #expect(try watcher.dataVersion() == first)
    #expect(watcher.stampReads == reads + 2, "a lost watch still answered for the files")
    let other = try #require(try Store.open(location, intent: .write))
    try openWindow(other)
    let version = try watcher.dataVersion()
    #expect(version != first)
    #expect(version == (try truth.dataVersion()))
  }

  @Test("unwatched, every call reads the stamp")
  func unwatchedReadsEveryTime() throws {
    let directory = try TemporaryDirectory("stampplain")
    let location = StoreLocation(path: directory.file("p.db"))
    let store = try #require(try Store.open(location, intent: .write))
    let reads = store.stampReads
    let version = try store.dataVersion()
    #expect(try store.dataVersion() == version)
    #expect(store.stampReads == reads + 2)
  }
}
