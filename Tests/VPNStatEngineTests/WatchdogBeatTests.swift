import Testing

@testable import VPNStatEngine
@testable import VPNStatModel

/// The watchdog's rhythm as the work loop keeps it: `alive()` at half the supervisor's interval,
/// and no wait longer than until the next one is due.
struct WatchdogBeatTests {
  final class Heard: ServiceSupervisor, @unchecked Sendable {
    let watchdogInterval: Duration?
    var beats = 0
    init(_ interval: Duration?) { watchdogInterval = interval }
    func ready(status: String) {}
    func status(_ text: String) {}
    func alive() { beats += 1 }
    func stopping() {}
  }

  @Test("WATCHDOG=1 on the first turn, then every half interval; the wait is bounded by the next beat")
  func halfInterval() {
    let supervisor = Heard(.seconds(20))
    var beat = WatchdogBeat(supervisor)
    #expect(beat.timeout(monotonic: 0) == .zero)
    beat.turn(supervisor, monotonic: 0)
    #expect(supervisor.beats == 1)
    #expect(beat.timeout(monotonic: 0) == .seconds(10))
    beat.turn(supervisor, monotonic: 3_000_000_000)
    #expect(supervisor.beats == 1, "a turn before the beat is due says nothing")
    #expect(beat.timeout(monotonic: 3_000_000_000) == .seconds(7))
    beat.turn(supervisor, monotonic: 10_000_000_000)
    #expect(supervisor.beats == 2)
    #expect(beat.timeout(monotonic: 25_000_000_000) == .zero, "overdue: no wait at all")
  }

  @Test("no watchdog: never alive(), and the loop may wait forever")
  func unwatched() {
    let supervisor = Heard(nil)
    var beat = WatchdogBeat(supervisor)
    beat.turn(supervisor, monotonic: 0)
    #expect(supervisor.beats == 0)
    #expect(beat.timeout(monotonic: 0) == nil)
  }
}
