import Foundation
import Testing

@testable import VPNStatDesktop
@testable import VPNStatEngine
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// A notification server that remembers what it was given, numbering like a real one.
final class RecordingNotifications: DesktopNotifications {
  var shown: [(id: DesktopNotification.ID, notification: DesktopNotification)] = []
  var next: UInt32 = 1

  func notify(_ notification: DesktopNotification) throws(NotificationFailure) -> DesktopNotification.ID {
    let id = notification.replaces ?? DesktopNotification.ID(next)
    if notification.replaces == nil { next += 1 }
    shown.append((id, notification))
    return id
  }

  func close(_ id: DesktopNotification.ID) throws(NotificationFailure) {}
}

/// `NotifyAgent` on a real database with a manual clock: what it reads, what it sends, and that
/// notices replace each other.
struct NotifyAgentTests {
  let t0 = Timestamp(seconds: 1_799_913_600)

  @Test("the agent reads the database read-only and sends each notice in the place of the last of its slot")
  func replacesAndReads() throws {
    let directory = try TemporaryDirectory("agent")
    let location = StoreLocation(path: directory.file("v.db"))
    let server = RecordingNotifications()
    var agent = NotifyAgent(
      notifications: server, settings: .standard, options: DisplayOptions(calendar: FixedOffsetCalendar.utc))
    func look(_ at: Timestamp) throws -> Timestamp? {
      let reading = ClockReading(wall: at, boottime: 0, monotonic: 0, bootID: "b")
      let observation = try NotifyAgent.look(location, reading: reading, calendar: FixedOffsetCalendar.utc)
      return try agent.observe(observation, now: observation.at)
    }
    // No database yet: nothing to say, nothing created.
    #expect(try look(t0) == nil)
    #expect(!FileManager.default.fileExists(atPath: location.path))
    let store = try #require(try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc))
    let window = SessionWindow.open(at: t0, lengths: .release)
    try store.updateSession {
      $0.window = window
      $0.tunnel = InterfaceName("wg0")
      $0.dataCap = DataCap(limitBytes: 5_000_000, period: UsagePeriod(.day))
    }
    #expect(try look(t0 + .seconds(1)) == window.sessionEndsAt - .seconds(600))
    #expect(server.shown.isEmpty)
    let before = contents(location.path)
    #expect(try look(window.sessionEndsAt - .seconds(600)) == window.sessionEndsAt - .seconds(120))
    #expect(try look(window.sessionEndsAt - .seconds(120)) == window.sessionEndsAt - .seconds(30))
    #expect(try look(window.sessionEndsAt - .seconds(30)) == nil)
    #expect(contents(location.path) == before, "the agent wrote the database")
    try store.recordStop(StopRecord(at: window.sessionEndsAt, interface: InterfaceName("wg0"), reason: .freeLimit))
    _ = try look(window.sessionEndsAt + .milliseconds(300))
    try store.recordStop(
      StopRecord(at: window.sessionEndsAt + .seconds(60), interface: InterfaceName("wg0"), reason: .pause))
    _ = try look(window.sessionEndsAt + .seconds(61))
    try #require(server.shown.count == 5, "\(server.shown.map(\.notification.summary))")
    #expect(
      server.shown.map(\.notification.summary) == [
        "VPN session ends in 10 min (at 08:15:00)", "VPN session ends in 2 min (at 08:15:00)",
        "VPN session ends in 30 s (at 08:15:00)",
        "VPN disconnected: free session over", "VPN refused: the free plan's pause ends at 09:00:00 (in 43 min 59 s)",
      ])
    #expect(server.shown.map(\.notification.urgency) == [.normal, .normal, .normal, .critical, .normal])
    // One notification all along: each replaced the one before.
    #expect(server.shown.map(\.notification.replaces) == [nil, .init(1), .init(1), .init(1), .init(1)])
    #expect(Set(server.shown.map(\.id)) == [.init(1)])
  }

  @Test(
    "the agent's own look does not wake it: only a writer's commit does (as root, SQLite opens the -wal read-write)")
  func ownLookIsQuiet() throws {
    let directory = try TemporaryDirectory("quiet")
    let location = StoreLocation(path: directory.file("v.db"))
    let store = try #require(try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc))
    try store.updateSession { $0.window = SessionWindow.open(at: t0, lengths: .release) }
    let changes = try FileChanges(directory: SystemPath(directory.path), names: ["v.db", "v.db-wal"])
    #expect(!changes.consume())
    for _ in 0..<3 {
      _ = try NotifyAgent.look(location, reading: SystemTimeSource().now(), calendar: FixedOffsetCalendar.utc)
      #expect(!changes.consume(), "a read woke the agent")
    }
    // Another file of the directory: not ours.
    #expect(FileManager.default.createFile(atPath: directory.file("other"), contents: Data([1])))
    #expect(!changes.consume())
    try store.updateSession { $0.plan = .premium }
    #expect(changes.consume(), "a commit did not wake the agent")
    #expect(!changes.consume())
  }
}
