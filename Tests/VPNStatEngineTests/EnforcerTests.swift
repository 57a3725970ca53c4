import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The enforcer's state machine, every transition, in-process: a fake kernel, a manual clock, a
/// database in a temporary file and a captured log. No root, no real time.
struct EnforcerTests {
  /// wg0 exists and is up, the enforcer starts: a window opens.
  func started(_ bench: EnforcerBench) throws -> (index: Int32, window: SessionWindow) {
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let window = try #require(try bench.stored().window, "no window was written")
    return (try #require(bench.kernel.index(of: "wg0")), window)
  }

  @Test("up with no window: a window opens at once, is written, and the alarm is armed for its end")
  func opens() throws {
    let bench = try EnforcerBench("open")
    let (_, window) = try started(bench)
    #expect(window.openedAt == bench.clock.now().wall)
    #expect(window.sessionEndsAt == window.openedAt + .seconds(900))
    #expect(window.pauseEndsAt == window.sessionEndsAt + .seconds(2700))
    #expect(bench.alarm.armed == window.sessionEndsAt)
    #expect(try bench.stored().tunnel == InterfaceName("wg0"))
    #expect(bench.log.contains("opened a window"))
  }

  @Test("the alarm at the deadline takes the link down, then records free-limit; the alarm is disarmed")
  func deadline() throws {
    let bench = try EnforcerBench("deadline")
    let (index, window) = try started(bench)
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.freeLimit])
    #expect(bench.alarm.armed == nil)
  }

  @Test(
    "the journal's events: a window opened, the session ended and a refusal in the pause each carry their kind, the tunnel, the reason and until when; the status line follows the phase"
  )
  func eventKindsAndStatusLine() throws {
    let bench = try EnforcerBench("kinds")
    let (index, window) = try started(bench)
    let opened = try #require(bench.log.entries.first { $0.kind == .windowOpened })
    #expect(opened.interface == InterfaceName("wg0"))
    #expect(opened.until == window.sessionEndsAt)
    let active = bench.enforcer.statusLine()
    #expect(active.hasPrefix("active · 15:00 left on wg0 (until "), "\(active)")
    try bench.alarmFires(at: window.sessionEndsAt)
    let ended = try #require(bench.log.entries.first { $0.kind == .sessionEnded })
    #expect(ended.reason == "free-limit")
    #expect(ended.until == window.pauseEndsAt)
    bench.clock.advance(.seconds(60))
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    let refused = try #require(bench.log.entries.first { $0.kind == .connectRefused })
    #expect(refused.reason == "pause")
    #expect(refused.until == window.pauseEndsAt)
    let paused = bench.enforcer.statusLine()
    #expect(paused.hasPrefix("pause until ") && paused.hasSuffix(" · wg0 held down"), "\(paused)")
    // Lines that are no such event carry no kind: the journal gets them as plain messages.
    #expect(bench.log.entries.contains { $0.kind == nil && $0.text.contains("enforcing the free plan") })
  }

  @Test("a tick before the deadline does nothing; the alarm stays where it was")
  func tickBeforeDeadline() throws {
    let bench = try EnforcerBench("tick")
    let (index, window) = try started(bench)
    bench.clock.advance(.seconds(300))
    try bench.handle(.tick)
    #expect(bench.kernel.isUp(index))
    #expect(bench.alarm.armed == window.sessionEndsAt)
    #expect(try bench.stops().isEmpty)
  }

  @Test("up during the pause: down at once, recorded as pause; at pause_ends_at exactly: a new window")
  func pauseAndItsEnd() throws {
    let bench = try EnforcerBench("pause")
    let (index, window) = try started(bench)
    try bench.alarmFires(at: window.sessionEndsAt)
    bench.clock.advance(.seconds(60))
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.pause, .freeLimit])
    // Exactly when the pause ends, connecting is allowed and the enforcer agrees: it reopens.
    bench.clock.advance(window.pauseEndsAt - bench.clock.now().wall)
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(bench.kernel.isUp(index))
    let next = try #require(try bench.stored().window)
    #expect(next.openedAt == window.pauseEndsAt)
    #expect(try bench.stops() == [.pause, .freeLimit])
  }

  @Test(
    "an up in the pause is decided on the session held while nothing says the database changed: no read in that path; once told, read"
  )
  func pauseDecidedOnWhatIsHeld() throws {
    let told = ToldChanges()
    let bench = try EnforcerBench("held", changes: .told(told))
    let (index, window) = try started(bench)
    try bench.alarmFires(at: window.sessionEndsAt)
    // Another process switches to premium; the watch has not said so (yet).
    let other = try #require(try Store.open(bench.location, intent: .write, calendar: FixedOffsetCalendar.utc))
    _ = try other.updateSession { $0 = $0.switching(to: .premium) }
    bench.clock.advance(.seconds(60))
    let asked = told.asked
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(told.asked > asked)
    #expect(!bench.kernel.isUp(index), "decided on the free plan held: the database was not read")
    // Told: the next up is decided on what the database says now.
    told.changed = true
    bench.clock.advance(.seconds(1))
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(bench.kernel.isUp(index), "\(bench.log.lines)")
    #expect(bench.enforcer.record?.plan == .premium)
  }

  @Test("with the kernel watching the database, another process's switch to premium in the pause lets the next up stay")
  func pauseSeesOtherWriters() throws {
    let bench = try EnforcerBench("watched", changes: .inotify)
    let (index, window) = try started(bench)
    try bench.alarmFires(at: window.sessionEndsAt)
    bench.clock.advance(.seconds(30))
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(!bench.kernel.isUp(index))
    let other = try #require(try Store.open(bench.location, intent: .write, calendar: FixedOffsetCalendar.utc))
    _ = try other.updateSession { $0 = $0.switching(to: .premium) }
    bench.clock.advance(.seconds(30))
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(bench.kernel.isUp(index), "\(bench.log.lines)")
    #expect(try bench.stops() == [.pause, .freeLimit])
  }

  @Test("a reconnect inside the window resumes it: the same deadline, no extension")
  func reconnectInsideWindow() throws {
    let bench = try EnforcerBench("resume")
    let (index, window) = try started(bench)
    bench.clock.advance(.seconds(100))
    try bench.handle(.link(bench.kernel.set(index, up: false)))
    #expect(try bench.stops() == [.user])
    bench.clock.advance(.seconds(100))
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(try bench.stored().window == window)
    #expect(bench.alarm.armed == window.sessionEndsAt)
    #expect(bench.log.contains("up inside the window"))
  }

  @Test("recreated with a new ifindex inside the window: still the same window")
  func recreated() throws {
    let bench = try EnforcerBench("recreate")
    let (index, window) = try started(bench)
    try bench.handle(.link(bench.kernel.delete(index)))
    #expect(try bench.stops() == [.vanished])
    bench.clock.advance(.seconds(10))
    try bench.handle(.link(bench.kernel.add("wg0", up: true)))
    #expect(try bench.stored().window == window)
    #expect(bench.alarm.armed == window.sessionEndsAt)
  }

  @Test("a device deleted before its deadline gets no action; the stop is 'vanished'")
  func vanished() throws {
    let bench = try EnforcerBench("vanish", action: .takesDown)
    let (index, window) = try started(bench)
    try bench.handle(.link(bench.kernel.delete(index)))
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(bench.action?.calls == 0)
    #expect(try bench.stops() == [.vanished])
  }

  @Test("slept through the window and its pause: on waking a new window opens, as when connecting after the pause")
  func sleptThroughWindowAndPause() throws {
    let bench = try EnforcerBench("sleep")
    let (index, window) = try started(bench)
    bench.clock.suspend(.seconds(3700))
    try bench.handle(.tick)
    #expect(bench.kernel.isUp(index))
    let next = try #require(try bench.stored().window)
    #expect(next.openedAt == bench.clock.now().wall && next.openedAt > window.pauseEndsAt)
    #expect(bench.alarm.armed == next.sessionEndsAt)
    #expect(bench.log.contains("woke from 1 h 01 min of sleep"))
  }

  @Test("slept past the deadline but not the pause: down at once on waking, recorded free-limit")
  func sleptIntoPause() throws {
    let bench = try EnforcerBench("sleep2")
    let (index, _) = try started(bench)
    bench.clock.suspend(.seconds(1200))
    try bench.handle(.tick)
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.freeLimit])
    #expect(bench.log.contains("woke from"))
  }

  @Test("the wall clock set back an hour: the deadline is still when it was (the alarm moves earlier)")
  func clockSetBack() throws {
    let bench = try EnforcerBench("setback")
    let (index, window) = try started(bench)
    bench.clock.advance(.seconds(60))
    bench.clock.setWall(by: .seconds(-3600))
    try bench.handle(.alarm)  // the timerfd reports the clock change
    #expect(bench.alarm.armed == window.sessionEndsAt - .seconds(3600))
    bench.clock.advance(.seconds(840))
    try bench.handle(.alarm)
    #expect(!bench.kernel.isUp(index))
    #expect(try bench.stops() == [.freeLimit])
  }

  @Test("premium: no window, no alarm; switching to premium while up disarms at the next tick")
  func premium() throws {
    let bench = try EnforcerBench("premium")
    _ = try bench.store.updateSession { $0 = $0.switching(to: .premium) }
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    #expect(try bench.stored().window == nil)
    #expect(bench.alarm.armed == nil)

    let other = try EnforcerBench("premium2")
    let (index, _) = try started(other)
    _ = try other.store.updateSession { $0 = $0.switching(to: .premium) }
    try other.handle(.tick)
    #expect(other.alarm.armed == nil)
    try other.alarmFires(at: other.clock.now().wall + .seconds(3600))
    #expect(other.kernel.isUp(index))
  }

  @Test("a window reset by another process while up: the next tick opens a new one")
  func resetWhileUp() throws {
    let bench = try EnforcerBench("reset")
    let (_, window) = try started(bench)
    _ = try bench.store.updateSession { $0.window = nil }
    bench.clock.advance(.seconds(30))
    try bench.handle(.tick)
    let next = try #require(try bench.stored().window)
    #expect(next.openedAt > window.openedAt)
    #expect(bench.alarm.armed == next.sessionEndsAt)
  }

  @Test("renamed: the deadline still takes it down, and the rename is logged")
  func renamed() throws {
    let bench = try EnforcerBench("rename")
    let (index, window) = try started(bench)
    try bench.handle(.link(bench.kernel.rename(index, to: "wg9")))
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(!bench.kernel.isUp(index))
    #expect(bench.log.contains("was renamed wg9"))
  }

  @Test("moved to another namespace: recorded as escaped, said in the log")
  func escaped() throws {
    let bench = try EnforcerBench("escape")
    let (index, _) = try started(bench)
    try bench.handle(.link(bench.kernel.delete(index, movedTo: 3)))
    #expect(try bench.stops() == [.escaped])
    #expect(bench.log.contains("out of reach"))
    #expect(bench.alarm.armed == nil)
  }

  @Test("another device named like the tunnel comes up in the pause: down at once")
  func sameNameNewDevice() throws {
    let bench = try EnforcerBench("samename")
    let (index, window) = try started(bench)
    try bench.alarmFires(at: window.sessionEndsAt)
    try bench.handle(.link(bench.kernel.delete(index)))
    bench.clock.advance(.seconds(1))
    try bench.handle(.link(bench.kernel.add("wg0", up: true)))
    #expect(!bench.kernel.isUp(try #require(bench.kernel.index(of: "wg0"))))
    let stops = try bench.stops()
    #expect(stops.first == .pause, "\(stops) \(bench.log.lines)")
  }

  @Test(
    "an action that fails: the link was cut first, down all the same, and the failure is recorded; in the pause, the link cut and the action not run again"
  )
  func uselessAction() throws {
    let bench = try EnforcerBench("useless", action: .fails)
    let (index, window) = try started(bench)
    bench.clock.advance(window.sessionEndsAt - bench.clock.now().wall)
    let before = bench.clock.now().monotonic
    try bench.handle(.alarm)
    #expect(!bench.kernel.isUp(index))
    #expect(bench.clock.now().monotonic - before < 100_000_000, "the failure was waited out")
    let stop = try #require(try bench.store.stops(limit: 1).first)
    #expect(stop.reason == .freeLimit && stop.detail == "down by link-down; scripted failed (exit 3)", "\(stop)")
    let calls = bench.action?.calls ?? 0
    bench.clock.advance(.seconds(1))
    let waited = bench.clock.now().monotonic
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(!bench.kernel.isUp(index))
    #expect(bench.action?.calls == calls, "the failed action was run again in the pause")
    #expect(bench.clock.now().monotonic - waited < 100_000_000)
  }

  @Test("link-down refused as well: the stop says both failed and the log says FAILED")
  func nothingWorks() throws {
    let bench = try EnforcerBench("refused", action: .fails)
    let (index, window) = try started(bench)
    bench.kernel.refuseSetDown = true
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(bench.kernel.isUp(index))
    let stop = try #require(try bench.store.stops(limit: 1).first)
    #expect(stop.detail?.contains("which failed too") == true)
    #expect(bench.log.contains("FAILED"))
  }

  @Test("stopped while the session runs: recorded as stopped; the alarm disarmed")
  func stopped() throws {
    let bench = try EnforcerBench("stop")
    _ = try started(bench)
    try bench.handle(.stop)
    #expect(try bench.stops() == [.stopped])
    #expect(bench.alarm.armed == nil)
    #expect(bench.log.contains("stopped enforcing"))
  }

  @Test("notifications lost: the enforcer looks again and sees the tunnel came up in the pause")
  func resynchronises() throws {
    let bench = try EnforcerBench("resync")
    let (index, window) = try started(bench)
    try bench.alarmFires(at: window.sessionEndsAt)
    _ = bench.kernel.set(index, up: true)  // its notification is lost
    try bench.handle(.notificationsLost)
    #expect(!bench.kernel.isUp(index))
  }

  @Test(
    "no database it could read: a tunnel that comes up is held down as undecided; the stop is written once it can be")
  func undecided() throws {
    let bench = try EnforcerBench("nodb", store: false)
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let index = try #require(bench.kernel.index(of: "wg0"))
    #expect(!bench.kernel.isUp(index))
    #expect(bench.enforcer.pendingStops.map(\.reason) == [.undecided])
    #expect(bench.log.contains("holding it down"))
  }

  @Test(
    "the database locked by another process: the deadline still disconnects; the stop is written when the lock goes")
  func lockedDatabase() throws {
    let bench = try EnforcerBench("locked")
    let (index, window) = try started(bench)
    bench.store.setBusyTimeout(milliseconds: 0)
    let other = try HeldWriterLock(bench.location)
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(!bench.kernel.isUp(index))
    #expect(bench.enforcer.pendingStops.map(\.reason) == [.freeLimit])
    #expect(bench.log.contains("enforcing from memory"))
    other.release()
    try bench.handle(.tick)
    #expect(bench.enforcer.pendingStops.isEmpty)
    #expect(try bench.stops() == [.freeLimit])
    #expect(bench.log.contains("everything kept was written"))
  }

  @Test(
    "no database at the start: the tunnel held down as undecided, the stop in the spool at once; stopped, it says so; the next enforcer writes it and empties the spool"
  )
  func spoolAcrossStarts() throws {
    let bench = try EnforcerBench("spool", store: false, spool: true)
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let index = try #require(bench.kernel.index(of: "wg0"))
    #expect(!bench.kernel.isUp(index))
    // In the spool before anything else happens: a kill -9 now loses nothing.
    let kept = try #require(FileManager.default.contents(atPath: bench.spoolPath))
    let records = SpooledRecord.parse(String(decoding: kept, as: UTF8.self)).records
    #expect(records.count == 1)
    guard case .stop(let stop)? = records.first else { throw TestSetupError("not a stop: \(records)") }
    #expect(stop.reason == .undecided && stop.interface == InterfaceName("wg0"))
    var info = stat()
    // Written by this user alone, readable by whoever may read the database (readers show it);
    // its writers' lock beside it is private.
    #expect(lstat(bench.spoolPath, &info) == 0 && info.st_mode & 0o777 == 0o644 && info.st_uid == geteuid())
    #expect(lstat(bench.spoolPath + ".lock", &info) == 0 && info.st_mode & 0o777 == 0o600)
    try bench.handle(.stop)
    #expect(bench.log.contains("stopping with 1 record the database would not take"))
    #expect(bench.log.contains("kept in \(bench.spoolPath): the next enforcer to start writes it"))
    #expect(!bench.log.contains("lost"))
    #expect(try bench.stops().isEmpty)

    let next = try EnforcerBench("spool2", kernel: bench.kernel, directory: bench.directory, spool: true)
    try next.handle(.started)
    #expect(try next.stops() == [.undecided])
    #expect(try next.store.stops().first == stop)
    #expect(!FileManager.default.fileExists(atPath: bench.spoolPath))
    #expect(next.log.contains("wrote what \(bench.spoolPath) kept (1 record)"))
    // Offered again (a spool written back after a crash): recorded once.
    try next.store.recordStop(stop)
    #expect(try next.stops() == [.undecided])
  }

  @Test(
    "a window the database refused is kept in the spool too: the next enforcer writes it, and a tunnel up inside it resumes it rather than opening another"
  )
  func spooledWindow() throws {
    let bench = try EnforcerBench("spoolw", spool: true)
    bench.store.setBusyTimeout(milliseconds: 0)
    let other = try HeldWriterLock(bench.location)
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let index = try #require(bench.kernel.index(of: "wg0"))
    #expect(bench.kernel.isUp(index))
    let window = try #require(bench.enforcer.record?.window)
    try bench.handle(.stop)
    other.release()
    #expect(try bench.stored().window == nil)
    let kept = SpooledRecord.parse(
      String(decoding: FileManager.default.contents(atPath: bench.spoolPath) ?? Data(), as: UTF8.self))
    #expect(kept.records.map(\.isWindow) == [true, false], "\(kept)")

    bench.clock.advance(.seconds(60))
    let next = try EnforcerBench("spoolw2", kernel: bench.kernel, directory: bench.directory, spool: true)
    next.clock.advance(bench.clock.now().wall - next.clock.now().wall)
    try next.handle(.started)
    #expect(try next.stored().window == window)
    #expect(next.alarm.armed == window.sessionEndsAt)
    #expect(next.log.contains("up inside the window"))
    #expect(try next.stops() == [.stopped])
    #expect(!FileManager.default.fileExists(atPath: bench.spoolPath))
  }

  @Test("a spool that others may write is refused and said: never read, nothing kept in it")
  func untrustedSpool() throws {
    let bench = try EnforcerBench("spoolbad", store: false, spool: true)
    let planted = SpooledRecord.stop(
      StopRecord(at: bench.clock.now().wall, interface: InterfaceName("wg0"), reason: .user))
    #expect(FileManager.default.createFile(atPath: bench.spoolPath, contents: Data((planted.line + "\n").utf8)))
    chmod(bench.spoolPath, 0o664)
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    #expect(bench.log.contains("refusing the spool \(bench.spoolPath): others may write it (mode 664)"))
    let next = try EnforcerBench("spoolbad2", kernel: bench.kernel, directory: bench.directory, spool: true)
    try next.handle(.started)
    #expect(try next.stops().isEmpty, "a record from a spool others may write was believed")
    #expect(next.log.contains("refusing the spool"))
    #expect(
      String(decoding: FileManager.default.contents(atPath: bench.spoolPath) ?? Data(), as: UTF8.self)
        == planted.line + "\n", "the refused spool was changed")
  }

  @Test(
    "the database handed over while running (its lock gone): the session is read, what was kept is written, the spool emptied"
  )
  func handedOver() throws {
    final class Flag { var value = false }
    let ready = Flag()
    let directory = try TemporaryDirectory("handover")
    let location = StoreLocation(path: directory.file("v.db"))
    let bench = try EnforcerBench(
      "handover", store: false, directory: directory, spool: true,
      openStore: { ready.value ? try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc) : nil })
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let index = try #require(bench.kernel.index(of: "wg0"))
    #expect(!bench.kernel.isUp(index))
    try bench.handle(.tick)
    #expect(FileManager.default.fileExists(atPath: bench.spoolPath))
    ready.value = true
    try bench.handle(.tick)
    #expect(try bench.stops() == [.undecided])
    #expect(bench.enforcer.record != nil)
    #expect(!FileManager.default.fileExists(atPath: bench.spoolPath))
    // Now decided: an up opens a window.
    try bench.handle(.link(bench.kernel.set(index, up: true)))
    #expect(bench.kernel.isUp(index))
    #expect(try bench.stored().window != nil)
  }

  @Test(
    "usage: the window's base is the tunnel's ledger total when it opened; the ledger follows the traffic in memory and is saved every save interval"
  )
  func usageBase() throws {
    let bench = try EnforcerBench("usage")
    let (index, _) = try started(bench)
    bench.kernel.carry(index, rx: 5000, tx: 7000)
    bench.clock.advance(.seconds(5))
    try bench.handle(.tick)
    #expect(bench.enforcer.tunnelTotals.rxBytes == 5000 && bench.enforcer.tunnelTotals.txBytes == 7000)
    #expect(try bench.store.tunnelTotals() == .zero)
    #expect(try bench.stored().usageBase == .zero)
    bench.clock.advance(Recorder.defaultSaveInterval)
    try bench.handle(.tick)
    let totals = try bench.store.tunnelTotals()
    #expect(totals.rxBytes == 5000 && totals.txBytes == 7000)
  }

  @Test(
    "tunnels only: a device that bears the name but is no tunnel (a veth) is left alone, said once, even in the pause; a tun then is taken down"
  )
  func notATunnelLeftAlone() throws {
    let bench = try EnforcerBench("notatunnel")
    let (index, window) = try started(bench)
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(!bench.kernel.isUp(index))
    try bench.handle(.link(bench.kernel.delete(index)))
    bench.clock.advance(.seconds(60))
    // In the pause a veth named wg0 appears, up: not a tunnel, not touched.
    let veth = bench.kernel.add("wg0", up: true, kind: "veth")
    try bench.handle(.link(veth))
    try bench.handle(.link(bench.kernel.set(veth.record.index, up: true)))
    try bench.handle(.tick)
    try bench.handle(.notificationsLost)
    #expect(bench.kernel.isUp(veth.record.index))
    #expect(bench.enforcer.devices[veth.record.index] == nil)
    #expect(bench.log.lines.filter { $0.contains("wg0 is of class other (by its link kind), not a tunnel") }.count == 1)
    try bench.handle(.link(bench.kernel.delete(veth.record.index)))
    // A tun of that name is the tunnel: down at once, as ever.
    let tun = bench.kernel.add("wg0", up: true)
    try bench.handle(.link(tun))
    #expect(!bench.kernel.isUp(tun.record.index))
    #expect(try bench.stops().first == .pause)
  }
}

extension SpooledRecord {
  var isWindow: Bool {
    if case .window = self { return true }
    return false
  }
}

/// Issue 38: the spool is part of every decision. While a window or a stop waits there, the gate,
/// `session`, `notify` and a starting enforcer decide and show from it as if it were written.
struct SpoolDecisionTests {
  let t0 = Timestamp(seconds: 1_800_000_000)
  let lengths = SessionLengths(session: .seconds(900), pause: .seconds(2700))

  /// A database with no window, and a spool holding one opened at `t0` and its deadline's stop,
  /// as an enforcer leaves them when the database refused both.
  func spooledPause(_ label: String) throws -> (TemporaryDirectory, StoreLocation, SessionWindow) {
    let directory = try TemporaryDirectory(label)
    let location = StoreLocation(path: directory.file("v.db"))
    _ = try #require(try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc))
    let window = SessionWindow.open(at: t0, lengths: lengths)
    let spool = EnforcerSpool(location: location)
    try spool.keep(.window(window, tunnel: InterfaceName("wg0"), usageBase: .zero))
    try spool.keep(.stop(StopRecord(at: window.sessionEndsAt, interface: InterfaceName("wg0"), reason: .freeLimit)))
    return (directory, location, window)
  }

  func reading(_ at: Timestamp) -> ClockReading { ClockReading(wall: at, boottime: 0, monotonic: 0, bootID: "b") }

  @Test(
    "the rule: a spooled window taken where the record would open one; the last stop spooled; a pause stop its refusal")
  func rule() {
    let window = SessionWindow.open(at: t0, lengths: lengths)
    let stop = StopRecord(at: window.sessionEndsAt, interface: InterfaceName("wg0"), reason: .freeLimit)
    let undone = StopRecord(at: window.sessionEndsAt + .seconds(60), interface: InterfaceName("wg0"), reason: .pause)
    let records: [SpooledRecord] = [
      .window(window, tunnel: InterfaceName("wg0"), usageBase: .zero), .stop(stop), .stop(undone),
    ]
    let free = SpooledSession(record: SessionRecord(), lastStop: nil, lastRefusal: nil).applying(records)
    #expect(free.record.window == window && free.record.tunnel == InterfaceName("wg0"))
    #expect(free.lastStop == undone)
    #expect(
      free.lastRefusal
        == Refusal(at: undone.at, interface: undone.interface, by: .enforcer, reason: .pause, until: window.pauseEndsAt)
    )
    // Premium, or a window of another process's running: the record stands, as the write leaves it.
    let premium = SpooledSession(record: SessionRecord(plan: .premium), lastStop: nil, lastRefusal: nil).applying(
      records)
    #expect(premium.record.window == nil)
    let theirs = SessionWindow.open(at: t0 - .seconds(60), lengths: lengths)
    let running = SpooledSession(record: SessionRecord(window: theirs), lastStop: nil, lastRefusal: nil).applying(
      records)
    #expect(running.record.window == theirs)
  }

  @Test("the gate and `session` read a spooled window's pause as written: refused in it, allowed after it")
  func gate() throws {
    let (directory, location, window) = try spooledPause("spool-gate")
    _ = directory
    let kernel = FakeKernel()
    func gate(at now: Timestamp) throws -> SessionReport {
      try SessionView.gate(
        location, timeout: .seconds(1), reading: reading(now), nextLengths: lengths,
        sampler: fakeSampler(kernel, ManualTimeSource()), calendar: FixedOffsetCalendar.utc)
    }
    let paused = try gate(at: window.sessionEndsAt + .seconds(60))
    #expect(paused.state == .paused, "\(paused.state)")
    #expect(!paused.canConnect)
    #expect(paused.lastStop?.reason == .freeLimit)
    #expect(try gate(at: window.pauseEndsAt + .seconds(1)).canConnect)
    // The database itself holds no window: the spool decided.
    #expect(try Store.open(location, intent: .read)?.sessionRecord().window == nil)
  }

  @Test("notify's look shows a spooled window and the refusal of a spooled stop in the pause")
  func notify() throws {
    let (directory, location, window) = try spooledPause("spool-notify")
    _ = directory
    try EnforcerSpool(location: location).keep(
      .stop(StopRecord(at: window.sessionEndsAt + .seconds(30), interface: InterfaceName("wg0"), reason: .pause)))
    let observation = try NotifyAgent.look(
      location, reading: reading(window.sessionEndsAt + .seconds(60)), calendar: FixedOffsetCalendar.utc)
    #expect(observation.window == window)
    #expect(observation.lastStop?.reason == .pause)
    #expect(observation.lastRefusal?.until == window.pauseEndsAt)
  }

  @Test(
    "an enforcer that starts without its store, in a pause only the spool holds: an up is taken down as the pause, no window opened, and what the spool kept is written once the store opens"
  )
  func enforcerStartsFromSpool() throws {
    let (directory, location, window) = try spooledPause("spool-enforcer")
    final class Flag { var value = false }
    let ready = Flag()
    let bench = try EnforcerBench(
      "spool-enforcer", store: false, directory: directory, spool: true, view: true,
      openStore: { ready.value ? try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc) : nil })
    bench.clock.advance(window.sessionEndsAt + .seconds(60) - bench.clock.now().wall)
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let index = try #require(bench.kernel.index(of: "wg0"))
    #expect(!bench.kernel.isUp(index), "an up in the spooled pause stayed up")
    #expect(bench.enforcer.record?.window == window)
    #expect(!bench.log.contains("opened a window"))
    #expect(!bench.log.contains("cannot be read"), "held down as undecided, not as the pause")
    #expect(bench.enforcer.pendingStops.last?.reason == .pause)
    // The store opens: the window and the stops are written, in order, and the spool emptied.
    ready.value = true
    try bench.handle(.tick)
    #expect(try bench.stored().window == window)
    #expect(try bench.stops() == [.pause, .freeLimit])
    #expect(!FileManager.default.fileExists(atPath: bench.spoolPath))
  }
}
