import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// What the database has not taken yet, alone (`PendingWrites`): a database in a temporary file,
/// held by another connection when a test says so, and the spool beside it.
struct PendingWritesTests {
  final class Place {
    let directory: TemporaryDirectory
    let location: StoreLocation
    let store: Store
    let log = CapturedLog()
    init(_ label: String) throws {
      directory = try TemporaryDirectory(label)
      location = StoreLocation(path: directory.file("v.db"))
      store = try #require(try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc))
      store.setBusyTimeout(milliseconds: 0)
    }
    var spool: EnforcerSpool { EnforcerSpool(location: location) }
    var spooled: [SpooledRecord] {
      SpooledRecord.parse(
        String(decoding: FileManager.default.contents(atPath: spool.path) ?? Data(), as: UTF8.self)
      ).records
    }
    /// Another writer's transaction, until `release`.
    func hold() throws -> HeldWriterLock { try HeldWriterLock(location) }
  }

  func stop(_ seconds: Int64, _ reason: StopReason = .freeLimit) -> StopRecord {
    StopRecord(at: Timestamp(seconds: 1_800_000_000 + seconds), interface: InterfaceName("wg0"), reason: reason)
  }

  @Test("the database answers: written at once, nothing kept, the spool untouched")
  func written() throws {
    let place = try Place("pw-written")
    var pending = PendingWrites(spool: place.spool, log: place.log)
    var outage = DatabaseOutage(log: place.log)
    pending.add(stop(1))
    _ = pending.flush(to: place.store, trusted: nil, outage: &outage)
    #expect(pending.isEmpty)
    #expect(try place.store.stops(limit: 5) == [stop(1)])
    #expect(!FileManager.default.fileExists(atPath: place.spool.path))
    #expect(place.log.lines.isEmpty)
  }

  @Test(
    "refused by a held database: kept, in the spool at once, the outage said once; written when the lock goes, said, the spool emptied"
  )
  func refusedThenWritten() throws {
    let place = try Place("pw-refused")
    var pending = PendingWrites(spool: place.spool, log: place.log)
    var outage = DatabaseOutage(log: place.log)
    let other = try place.hold()
    pending.add(stop(1))
    _ = pending.flush(to: place.store, trusted: nil, outage: &outage)
    pending.add(stop(2, .pause))
    _ = pending.flush(to: place.store, trusted: nil, outage: &outage)
    #expect(pending.stops == [stop(1), stop(2, .pause)])
    #expect(place.spooled == [.stop(stop(1)), .stop(stop(2, .pause))])
    #expect(outage.problem != nil)
    #expect(place.log.lines.filter { $0.hasPrefix("database:") }.count == 1)
    other.release()
    _ = pending.flush(to: place.store, trusted: nil, outage: &outage)
    #expect(pending.isEmpty)
    #expect(try place.store.stops(limit: 5) == [stop(2, .pause), stop(1)])
    #expect(!FileManager.default.fileExists(atPath: place.spool.path))
    #expect(outage.problem == nil)
    #expect(place.log.contains("everything kept was written"))
    #expect(pending.leftAtStop(problem: nil) == nil)
  }

  @Test("no database yet: kept in the spool; stopping now says where, and that the next enforcer writes it")
  func noDatabase() throws {
    let place = try Place("pw-nodb")
    var pending = PendingWrites(spool: place.spool, log: place.log)
    var outage = DatabaseOutage(log: place.log)
    pending.add(stop(1, .undecided))
    _ = pending.flush(to: nil, trusted: nil, outage: &outage)
    #expect(place.spooled == [.stop(stop(1, .undecided))])
    #expect(
      pending.leftAtStop(problem: "locked")
        == "stopping with 1 record the database would not take (locked), kept in \(place.spool.path): the next enforcer to start writes it"
    )
    // Without a spool the same records are lost, and that is said.
    var memoryOnly = PendingWrites(spool: nil, log: place.log)
    memoryOnly.add(stop(1, .undecided))
    _ = memoryOnly.flush(to: nil, trusted: nil, outage: &outage)
    #expect(memoryOnly.leftAtStop(problem: nil)?.hasSuffix("could not be kept (no spool): they are lost") == true)
  }

  @Test(
    "the spool taken in before what is newer, a stop offered twice recorded once, the spool emptied and that said")
  func takenIn() throws {
    let place = try Place("pw-spool")
    var outage = DatabaseOutage(log: place.log)
    var earlier = PendingWrites(spool: place.spool, log: place.log)
    earlier.add(stop(1, .undecided))
    _ = earlier.flush(to: nil, trusted: nil, outage: &outage)
    var next = PendingWrites(spool: place.spool, log: place.log)
    next.add(stop(1, .undecided))
    next.add(stop(2))
    _ = next.takeSpool(into: place.store, trusted: nil, outage: &outage)
    #expect(next.isEmpty)
    #expect(try place.store.stops(limit: 5) == [stop(2), stop(1, .undecided)])
    #expect(!FileManager.default.fileExists(atPath: place.spool.path))
    #expect(place.log.contains("wrote what \(place.spool.path) kept (1 record)"))
  }

  @Test(
    "a window is written only where the stored record would open one: another process's window is followed, and its deadline given to arm"
  )
  func windowFollowsTheStoredOne() throws {
    let place = try Place("pw-window")
    var outage = DatabaseOutage(log: place.log)
    let lengths = SessionLengths(session: .seconds(900), pause: .seconds(2700))
    let theirs = SessionWindow.open(at: Timestamp(seconds: 1_800_000_000), lengths: lengths)
    let mine = SessionWindow.open(at: Timestamp(seconds: 1_800_000_060), lengths: lengths)
    var pending = PendingWrites(spool: place.spool, log: place.log)
    pending.open(PendingWrites.Window(window: mine, tunnel: InterfaceName("wg0"), usageBase: .zero))
    _ = try place.store.updateSession { $0.window = theirs }
    let written = pending.flush(to: place.store, trusted: nil, outage: &outage)
    #expect(written.adopted?.window == theirs)
    #expect(written.rearm == theirs.sessionEndsAt)
    #expect(try place.store.sessionRecord().window == theirs)
    #expect(place.log.contains("another process changed the session meanwhile"))
    // With nothing stored, it is written as opened.
    let empty = try Place("pw-window2")
    var alone = PendingWrites(spool: empty.spool, log: empty.log)
    alone.open(PendingWrites.Window(window: mine, tunnel: InterfaceName("wg0"), usageBase: .zero))
    let first = alone.flush(to: empty.store, trusted: nil, outage: &outage)
    #expect(first.adopted?.window == mine && first.rearm == nil)
    #expect(try empty.store.sessionRecord().tunnel == InterfaceName("wg0"))
  }
}
