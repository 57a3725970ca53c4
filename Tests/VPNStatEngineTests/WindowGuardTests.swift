import Testing

@testable import VPNStatEngine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The enforcer's rule alone (`WindowGuard`): a session record and a trusted "now" in, a verdict
/// out. 15 minutes connected, then a 45-minute pause.
struct WindowGuardTests {
  let rules = WindowGuard(lengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)))
  let opened = Timestamp(seconds: 1_800_000_000)
  var window: SessionWindow { SessionWindow.open(at: opened, lengths: rules.lengths) }
  var running: SessionRecord { SessionRecord(plan: .free, window: window) }

  @Test("a session never read: held down as unknown, and the data cap is not even asked")
  func unknown() {
    var asked = false
    let up = rules.tunnelUp(
      nil,
      capReached: {
        asked = true
        return true
      }(), at: opened)
    #expect(up == .unknown)
    #expect(!asked)
  }

  @Test("no window: one opens at now, for the session's length, the record carrying it")
  func opens() throws {
    guard case .open(let window, let record) = rules.tunnelUp(SessionRecord(), capReached: false, at: opened) else {
      throw TestSetupError("no window opened")
    }
    #expect(window.openedAt == opened && window.sessionEndsAt == opened + .seconds(900))
    #expect(record.window == window)
  }

  @Test("inside the window: resumed, same deadline; at the deadline exactly: the limit; in the pause: the pause")
  func windowAndPause() {
    #expect(rules.tunnelUp(running, capReached: false, at: opened + .seconds(100)) == .resume(window))
    #expect(rules.tunnelUp(running, capReached: false, at: window.sessionEndsAt) == .disconnect(.freeLimit))
    #expect(rules.tunnelUp(running, capReached: false, at: window.sessionEndsAt + .seconds(1)) == .disconnect(.pause))
    guard case .open(let next, _) = rules.tunnelUp(running, capReached: false, at: window.pauseEndsAt) else {
      Issue.record("no new window once the pause is over")
      return
    }
    #expect(next.openedAt == window.pauseEndsAt)
  }

  @Test("a reached data cap refuses whatever the window says; premium has no window at all")
  func capAndPremium() {
    #expect(rules.tunnelUp(running, capReached: true, at: opened + .seconds(100)) == .disconnect(.dataCap))
    #expect(rules.tunnelUp(SessionRecord(plan: .premium), capReached: false, at: opened) == .unlimited)
  }

  @Test("the check: a session never read asks for the up rule only while a device is up; a read one is the watchdog's")
  func check() {
    #expect(rules.check(nil, at: opened, linkUp: true, armed: nil) == .tunnelUp)
    #expect(rules.check(nil, at: opened, linkUp: false, armed: nil) == .wait)
    #expect(
      rules.check(running, at: window.sessionEndsAt, linkUp: true, armed: window.sessionEndsAt) == .disconnect)
    #expect(
      rules.check(running, at: opened, linkUp: true, armed: nil) == .arm(window.sessionEndsAt))
  }

  @Test(
    "down by something else: 'vanished' when the device went, 'user' when it was taken down; nothing outside a running session"
  )
  func stopWhenDown() {
    let inside = opened + .seconds(60)
    #expect(rules.stopWhenDown(gone: true, running, at: inside) == .vanished)
    #expect(rules.stopWhenDown(gone: false, running, at: inside) == .user)
    #expect(rules.stopWhenDown(gone: true, running, at: window.sessionEndsAt) == nil)
    #expect(rules.stopWhenDown(gone: true, SessionRecord(plan: .premium, window: window), at: inside) == nil)
    #expect(rules.stopWhenDown(gone: true, nil, at: inside) == nil)
  }

  @Test("the pause holds from the deadline itself until its end, and only on the free plan")
  func pause() {
    #expect(rules.pause(running, at: window.sessionEndsAt - .seconds(1)) == nil)
    #expect(rules.pause(running, at: window.sessionEndsAt) == window)
    #expect(rules.pause(running, at: window.pauseEndsAt - .seconds(1)) == window)
    #expect(rules.pause(running, at: window.pauseEndsAt) == nil)
    #expect(rules.pause(SessionRecord(plan: .premium, window: window), at: window.sessionEndsAt) == nil)
    #expect(rules.pause(nil, at: window.sessionEndsAt) == nil)
  }
}

/// The enforcer's clocks alone: the trusted "now" it decides with, sleep, and an alarm armed in
/// trusted time on a wall clock that can be set.
struct EnforcerClockTests {
  func reading(wall: Int64, boottime: Int64, monotonic: Int64) -> ClockReading {
    ClockReading(wall: Timestamp(seconds: wall), boottime: boottime, monotonic: monotonic, bootID: "boot-a")
  }

  @Test("trusted now: a wall clock set back an hour does not take it back; set forward, it is believed")
  func trustedNow() {
    var session = SessionMemory()
    let start = reading(wall: 1_800_000_000, boottime: 10_000_000_000, monotonic: 10_000_000_000)
    #expect(session.now(start) == start.wall)
    let setBack = reading(wall: 1_800_000_000 - 3600 + 60, boottime: 70_000_000_000, monotonic: 70_000_000_000)
    #expect(session.now(setBack) == start.wall + .seconds(60))
    let setForward = reading(wall: 1_800_010_000, boottime: 80_000_000_000, monotonic: 80_000_000_000)
    #expect(session.now(setForward) == setForward.wall)
  }

  @Test(
    "refreshed from the store: its record and its trusted pair, with a window opened here and not yet written taken as its write will take it"
  )
  func refresh() throws {
    let directory = try TemporaryDirectory("memory")
    let store = try #require(
      try Store.open(StoreLocation(path: directory.file("v.db")), intent: .write, calendar: FixedOffsetCalendar.utc))
    let clock = ManualTimeSource()
    // Another process trusted a time an hour ahead of this wall clock, in this boot.
    var later = clock.now()
    later.wall = later.wall + .seconds(3600)
    _ = try store.trustedNow(later, writing: true)
    let stored = SessionRecord(plan: .premium)
    _ = try store.updateSession { $0 = stored }
    var session = SessionMemory()
    try session.refresh(from: store, clock: clock, pending: nil)
    #expect(session.record == stored)
    #expect(session.now(clock.now()) == later.wall)
    let window = SessionWindow.open(at: clock.now().wall, lengths: .release)
    let mine = PendingWrites.Window(window: window, tunnel: InterfaceName("wg0"), usageBase: .zero)
    // Premium takes no window: the stored record stands, as the write would leave it.
    try session.refresh(from: store, clock: clock, pending: mine)
    #expect(session.record == stored)
    // A free record without a window takes it, with its tunnel.
    _ = try store.updateSession { $0 = SessionRecord(plan: .free) }
    try session.refresh(from: store, clock: clock, pending: mine)
    #expect(session.record?.window == window && session.record?.tunnel == InterfaceName("wg0"))
    // Another process opened a window since: the write will not take this one, nor does memory.
    let theirs = SessionWindow.open(at: clock.now().wall - .seconds(60), lengths: .release)
    _ = try store.updateSession { $0.window = theirs }
    try session.refresh(from: store, clock: clock, pending: mine)
    #expect(session.record?.window == theirs)
  }

  @Test("sleep: said when boottime ran ahead of monotonic by more than half a second, once")
  func sleep() {
    var detector = SleepDetector()
    detector.start(reading(wall: 0, boottime: 1_000_000_000, monotonic: 1_000_000_000))
    #expect(detector.slept(reading(wall: 10, boottime: 11_000_000_000, monotonic: 11_000_000_000)) == nil)
    #expect(detector.slept(reading(wall: 20, boottime: 21_400_000_000, monotonic: 21_000_000_000)) == nil)
    #expect(detector.slept(reading(wall: 90, boottime: 91_400_000_000, monotonic: 21_000_000_000)) == 70_000_000_000)
    #expect(detector.slept(reading(wall: 91, boottime: 92_400_000_000, monotonic: 22_000_000_000)) == nil)
  }

  @Test("an alarm in trusted time: set where the instant falls on the wall clock; moved when the wall clock was set")
  func alarm() throws {
    let recorded = RecordedAlarm()
    var alarm = TrustedAlarm(alarm: recorded)
    let deadline = Timestamp(seconds: 1_800_000_900)
    // The wall clock was set back an hour: trusted time runs an hour ahead of it.
    let wall = TrustedAlarm.wall(
      of: deadline, trustedNow: Timestamp(seconds: 1_800_000_000), wallNow: Timestamp(seconds: 1_799_996_400))
    #expect(wall == deadline - .seconds(3600))
    try alarm.arm(deadline, wall: wall)
    #expect(alarm.armed == deadline && recorded.armed == wall)
    #expect(!alarm.moved(wall))
    #expect(alarm.moved(deadline))
    try alarm.arm(nil, wall: nil)
    #expect(alarm.armed == nil && recorded.armed == nil)
  }
}
