import Foundation
import Testing
import VPNStatSystem

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The enforcer disconnecting through a tunnel's manager, in-process: NetworkManager and wg-quick
/// played on the fake kernel (their command lines answered as the real programs answer), the
/// real detector and controls, a manual clock and a database in a temporary file.
struct ManagerEnforcerTests {
  static let uuid = "f2e6ce48-0c5f-4b7e-9d7e-3d2b1f0a9c11"

  /// An enforcer with --action auto over a fake NetworkManager whose connection `vpnt` (autoconnect
  /// on) drives device wg0; the real detector finds it through `nmcli … device`.
  func networkManagerBench(
    _ label: String, presence: Bool = false, kind: TunnelManager.Kind? = nil,
    saveInterval: Duration = Recorder.defaultSaveInterval
  ) throws -> (EnforcerBench, FakeNetworkManager) {
    let kernel = FakeKernel()
    let nm = FakeNetworkManager(kernel)
    // The bench's directory stands for /run/NetworkManager (NetworkManager runs) and for
    // /etc/wireguard; /proc and systemd are absent.
    let directory = try TemporaryDirectory(label)
    let detector = ManagerDetector(
      runner: nm, wgQuickDirectories: [directory.path], procRoot: SystemPath(directory.file("no-proc")),
      networkManagerDirectory: directory.path, systemdDirectory: directory.file("no-systemd"))
    let bench = try EnforcerBench(
      label, kernel: kernel, directory: directory, manager: (kind, detector, nm), presence: presence,
      saveInterval: saveInterval)
    nm.add(uuid: Self.uuid, name: "vpnt", device: "wg0", autoconnect: true)
    return (bench, nm)
  }

  @Test(
    "auto, NetworkManager: at the deadline the link cut at once, then deactivated through nmcli (never a bare link-down alone), autoconnect held off for the pause, an up in the pause undone, autoconnect given back when the pause ends"
  )
  func networkManagerCycle() throws {
    let (bench, nm) = try networkManagerBench("nmcycle")
    try bench.handle(.link(nm.up(Self.uuid)))
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    try bench.alarmFires(at: window.sessionEndsAt)
    // The link cut first, then deactivated the way NetworkManager expects: its device went with it.
    #expect(!nm.isActive(Self.uuid))
    #expect(bench.kernel.index(of: "wg0") == nil)
    #expect(bench.kernel.setDownCalls == 1)
    #expect(nm.commands.contains(["nmcli", "--wait", "10", "connection", "down", "uuid", Self.uuid]))
    let stop = try #require(try bench.store.stops(limit: 1).first)
    #expect(stop.reason == .freeLimit)
    #expect(stop.detail == "stopped through networkmanager 'vpnt' (\(Self.uuid))", "\(stop)")
    // Held off for the pause, and the alarm now waits for the pause's end.
    #expect(!nm.autoconnect(Self.uuid))
    #expect(bench.enforcer.holds.map(\.id) == [Self.uuid])
    #expect(bench.alarm.armed == window.pauseEndsAt)
    // `nmcli connection up` in the pause: undone at once, through NetworkManager again.
    bench.clock.advance(.seconds(60))
    try bench.handle(.link(nm.up(Self.uuid)))
    #expect(!nm.isActive(Self.uuid))
    #expect(bench.kernel.index(of: "wg0") == nil)
    #expect(try bench.stops() == [.pause, .freeLimit])
    #expect(!nm.autoconnect(Self.uuid), "the hold was given back inside the pause")
    #expect(bench.enforcer.holds.count == 1, "held twice: the second would remember 'no' as the user's value")
    // The pause ends: the user's autoconnect is back, and nothing is armed any more.
    try bench.alarmFires(at: window.pauseEndsAt)
    #expect(nm.autoconnect(Self.uuid))
    #expect(bench.enforcer.holds.isEmpty)
    #expect(bench.alarm.armed == nil)
    #expect(bench.log.contains("gave back networkmanager"))
  }

  @Test(
    "through NetworkManager with an hour between checkpoints: the device its deactivation deletes is saved at once, and so is the window opened after the pause"
  )
  func networkManagerCheckpoints() throws {
    let (bench, nm) = try networkManagerBench("nmsave", saveInterval: .seconds(3600))
    try bench.handle(.link(nm.up(Self.uuid)))
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    let first = try #require(bench.kernel.index(of: "wg0"))
    bench.kernel.carry(first, rx: 5000, tx: 7000)
    bench.clock.advance(.seconds(5))
    try bench.handle(.tick)
    #expect(try bench.store.tunnelTotals() == .zero, "saved before the interval")
    // The deadline: nmcli deletes the device; its last notification carries the final counters.
    try bench.alarmFires(at: window.sessionEndsAt)
    let deleted = try #require(bench.kernel.deletions.last)
    try bench.handle(.link(deleted))
    #expect(try bench.store.tunnelTotals().rxBytes == 5000)
    #expect(try bench.stops() == [.freeLimit])
    // After the pause the user connects again, with traffic the enforcer has not sampled yet
    // when the notification arrives: the window opens on the totals before it, and is saved at
    // once with the ledger, that traffic included (an hour before the interval would).
    try bench.alarmFires(at: window.pauseEndsAt)
    let change = nm.up(Self.uuid)
    let second = try #require(bench.kernel.index(of: "wg0"))
    bench.kernel.carry(second, rx: 300, tx: 400)
    try bench.handle(.link(change))
    let reopened = try bench.stored()
    #expect(reopened.window != window && reopened.window != nil)
    #expect(reopened.usageBase.rxBytes == 5000 && reopened.usageBase.txBytes == 7000, "\(reopened.usageBase)")
    let stored = try bench.store.tunnelTotals()
    #expect(stored.rxBytes == 5300 && stored.txBytes == 7400, "\(stored)")
  }

  @Test("NetworkManager refuses to deactivate: the link is down all the same, at once, and the stop says why")
  func networkManagerRefuses() throws {
    let (bench, nm) = try networkManagerBench("nmrefuse")
    nm.refusesDown = true
    let change = nm.up(Self.uuid)
    try bench.handle(.link(change))
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    bench.clock.advance(window.sessionEndsAt - bench.clock.now().wall)
    let before = bench.clock.now().monotonic
    try bench.handle(.alarm)
    #expect(!bench.kernel.isUp(change.record.index))
    #expect(bench.kernel.setDownCalls == 1)
    // A refusal is not waited out: link-down follows at once.
    #expect(bench.clock.now().monotonic - before < 1_000_000_000)
    let stop = try #require(try bench.store.stops(limit: 1).first)
    #expect(stop.detail?.contains("not authorized to deactivate connections") == true, "\(stop)")
    #expect(stop.detail?.hasPrefix("down by link-down; networkmanager") == true, "\(stop)")
    #expect(bench.enforcer.holds.isEmpty)
  }

  @Test("the device went, but NetworkManager still lists the connection active: recorded, not taken for success")
  func networkManagerHalfDown() throws {
    let (bench, nm) = try networkManagerBench("nmhalf")
    nm.staysActive = true
    try bench.handle(.link(nm.up(Self.uuid)))
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    try bench.alarmFires(at: window.sessionEndsAt)
    let stop = try #require(try bench.store.stops(limit: 1).first)
    #expect(stop.detail?.contains("its manager does not say it stopped") == true, "\(stop)")
    #expect(bench.log.contains("does not say it stopped"))
  }

  @Test("stopped during the pause: the held autoconnect is given back at once, the presence file removed")
  func stopGivesBack() throws {
    let (bench, nm) = try networkManagerBench("nmstop", presence: true)
    try bench.handle(.link(nm.up(Self.uuid)))
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    try bench.alarmFires(at: window.sessionEndsAt)
    let file = EnforcerPresenceFile(location: bench.location, tunnel: InterfaceName("wg0"))
    #expect(file.read()?.holds.map(\.id) == [Self.uuid], "the hold is not where a successor finds it")
    #expect(!nm.autoconnect(Self.uuid))
    try bench.handle(.stop)
    #expect(nm.autoconnect(Self.uuid))
    #expect(file.read() == nil)
  }

  @Test("after a crash in the pause, the next enforcer takes over the hold and gives it back when the pause ends")
  func successorGivesBack() throws {
    let (first, nm) = try networkManagerBench("nmcrash", presence: true)
    try first.handle(.link(nm.up(Self.uuid)))
    try first.handle(.started)
    let window = try #require(try first.stored().window)
    try first.alarmFires(at: window.sessionEndsAt)
    // The first one dies without stopping (kill -9): its file still names its hold, and a pid
    // that is not this process.
    let file = EnforcerPresenceFile(location: first.location, tunnel: InterfaceName("wg0"))
    var left = try #require(file.read())
    left.pid = 999_999
    try file.write(left)
    let second = try EnforcerBench(
      "nmcrash2", kernel: first.kernel, directory: first.directory,
      manager: (
        nil, FixedDetector(manager: TunnelManager(kind: .none, id: nil, foundBy: .nothing, evidence: "test")), nm
      ),
      presence: true)
    second.clock.advance(first.clock.now().wall - second.clock.now().wall + .seconds(30))
    try second.handle(.started)
    #expect(second.enforcer.holds.map(\.id) == [Self.uuid])
    #expect(second.log.contains("taking over what the previous enforcer (pid 999999) held"))
    #expect(!nm.autoconnect(Self.uuid))
    try second.alarmFires(at: window.pauseEndsAt)
    #expect(nm.autoconnect(Self.uuid))
    #expect(file.read()?.holds.isEmpty == true)
  }

  @Test("--action networkmanager on a tunnel NetworkManager does not manage: link-down, and the stop says why")
  func namedManagerMissing() throws {
    let bench = try EnforcerBench(
      "nmmissing",
      manager: (
        .networkManager,
        FixedDetector(
          manager: TunnelManager(kind: .none, id: nil, foundBy: .nothing, evidence: "no process holds wg0")),
        FakeNetworkManager(FakeKernel())
      ))
    bench.kernel.add("wg0", up: true)
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(!bench.kernel.isUp(try #require(bench.kernel.index(of: "wg0"))))
    let stop = try #require(try bench.store.stops(limit: 1).first)
    #expect(stop.detail?.contains("no NetworkManager connection on wg0 (no process holds wg0)") == true, "\(stop)")
  }

  @Test(
    "auto, wg-quick: at the deadline the link cut, then `wg-quick down CONFIG` removes the device; when it fails, the link is down all the same, recorded"
  )
  func wgQuick() throws {
    let config = "/etc/wireguard/wg0.conf"
    let manager = TunnelManager(
      kind: .wgQuick, id: config, foundBy: .holder, evidence: "wireguard-go (pid 9) holds wg0; \(config)")
    for failing in [false, true] {
      let kernel = FakeKernel()
      let wgQuick = FakeWgQuick(kernel)
      wgQuick.fails = failing
      let bench = try EnforcerBench(
        "wgq\(failing)", kernel: kernel, manager: (nil, FixedDetector(manager: manager), wgQuick))
      let index = kernel.add("wg0", up: true).record.index
      try bench.handle(.started)
      let window = try #require(try bench.stored().window)
      try bench.alarmFires(at: window.sessionEndsAt)
      #expect(wgQuick.commands == [["wg-quick", "down", config]])
      let stop = try #require(try bench.store.stops(limit: 1).first)
      if failing {
        #expect(!kernel.isUp(index))
        #expect(stop.detail?.contains("is not a WireGuard interface") == true, "\(stop)")
        #expect(stop.detail?.hasPrefix("down by link-down; wg-quick") == true, "\(stop)")
      } else {
        #expect(kernel.index(of: "wg0") == nil)
        #expect(kernel.setDownCalls == 1)
        #expect(stop.detail == "stopped through wg-quick \(config)")
      }
    }
  }

  /// A detector that names the manager the test says and notes, at each question, how many
  /// link-down requests the kernel had taken by then and whether the device was up.
  final class WatchingDetector: ManagerDetecting, @unchecked Sendable {
    let manager: TunnelManager
    let kernel: FakeKernel
    private(set) var questions: [(setDowns: Int, up: Bool)] = []
    init(manager: TunnelManager, kernel: FakeKernel) {
      self.manager = manager
      self.kernel = kernel
    }
    func managers(of links: [(name: InterfaceName, kind: String?)]) -> [InterfaceName: TunnelManager] {
      for link in links {
        questions.append((kernel.setDownCalls, kernel.index(of: link.name.escaped).map(kernel.isUp) ?? false))
      }
      return Dictionary(uniqueKeysWithValues: links.map { ($0.name, manager) })
    }
  }

  @Test(
    "the deadline and an up in the pause are one link-down request first: no manager looked up or stopped before it; who manages was learned while the window ran, and found again only once the link is down"
  )
  func linkFirst() throws {
    let config = "/etc/wireguard/wg0.conf"
    let manager = TunnelManager(
      kind: .wgQuick, id: config, foundBy: .holder, evidence: "wireguard-go (pid 9) holds wg0; \(config)")
    let kernel = FakeKernel()
    let wgQuick = FakeWgQuick(kernel)
    let detector = WatchingDetector(manager: manager, kernel: kernel)
    let bench = try EnforcerBench("linkfirst", kernel: kernel, manager: (nil, detector, wgQuick))
    let index = kernel.add("wg0", up: true).record.index
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    // Learned while the window runs, with its deadline far away.
    #expect(detector.questions.count == 1 && detector.questions.first?.up == true)
    #expect(bench.enforcer.managers.known(index)?.label == "wg-quick \(config)")
    try bench.alarmFires(at: window.sessionEndsAt)
    let atDeadline = detector.questions.dropFirst()
    #expect(!atDeadline.isEmpty, "the manager was not found again after the cut")
    #expect(
      atDeadline.allSatisfy { $0.setDowns == 1 && !$0.up }, "a manager was looked up before the cut: \(atDeadline)")
    #expect(wgQuick.commands == [["wg-quick", "down", config]])
    #expect(kernel.index(of: "wg0") == nil)
    let stop = try #require(try bench.store.stops(limit: 1).first)
    #expect(stop.detail == "stopped through wg-quick \(config)", "\(stop)")
    #expect(bench.log.contains("wg0: down at once (link-down, confirmed by the kernel), then stopped through wg-quick"))
    // In the pause, `wg-quick up` makes a new wg0, up: cut before anything is asked again.
    bench.clock.advance(.seconds(60))
    let asked = detector.questions.count
    #expect(wgQuick.run(["wg-quick", "up", config], timeout: .seconds(1)).succeeded)
    let again = try #require(kernel.index(of: "wg0"))
    try bench.handle(.link(LinkNotifications.Change(record: try #require(kernel.record(again)), deleted: false)))
    let inPause = detector.questions.dropFirst(asked)
    #expect(!inPause.isEmpty && inPause.allSatisfy { $0.setDowns == 2 && !$0.up }, "\(inPause)")
    #expect(wgQuick.commands.last == ["wg-quick", "down", config])
    #expect(kernel.index(of: "wg0") == nil)
    #expect(try bench.stops() == [.pause, .freeLimit])
  }

  @Test(
    "who manages a device is kept while it lives: forgotten when the process it was found through exits (a pidfd in the loop's wait, no /proc), when it is renamed or goes, and learned again"
  )
  func managerTable() throws {
    let sleeper = Process()
    sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
    sleeper.arguments = ["60"]
    try sleeper.run()
    // SIGKILL: a child of this test process may inherit SIGTERM blocked (another test's
    // `SignalChannel` blocks it for the whole process), and would then sleep its 60 s out.
    defer { if sleeper.isRunning { kill(sleeper.processIdentifier, SIGKILL) } }
    let pid = sleeper.processIdentifier
    let process = TunnelProcess(
      pid: pid, startTime: ProcessTable.startTime(of: pid), command: "openvpn", arguments: ["openvpn"],
      controlGroup: nil, standing: .root)
    let manager = TunnelManager(
      kind: .openVPN, id: "pid \(pid)", foundBy: .holder, evidence: "openvpn (pid \(pid)) holds wg0", process: process)
    let kernel = FakeKernel()
    let detector = WatchingDetector(manager: manager, kernel: kernel)
    let bench = try EnforcerBench(
      "mtable", kernel: kernel, manager: (nil, detector, FakeWgQuick(kernel)), processExits: PidfdExitWatching())
    let index = kernel.add("wg0", up: true).record.index
    try bench.handle(.started)
    #expect(detector.questions.count == 1)
    let notices = bench.enforcer.exitNotices
    #expect(notices.count == 1)
    // Kept: nothing asks again while it holds.
    bench.clock.advance(.seconds(5))
    try bench.handle(.tick)
    #expect(detector.questions.count == 1)
    #expect(notices.allSatisfy { !ProcessTable.hasExited($0) })
    kill(pid, SIGKILL)
    sleeper.waitUntilExit()
    #expect(notices.allSatisfy(ProcessTable.hasExited), "the pidfd did not say the process exited")
    try bench.handle(.managerExited)
    #expect(bench.log.contains("openvpn (pid \(pid)), which manages wg0, exited"))
    #expect(detector.questions.count == 2, "not learned again")
    #expect(bench.enforcer.exitNotices.isEmpty, "a process that is gone is watched")
    // Renamed: forgotten, learned again at the next tick.
    try bench.handle(.link(kernel.rename(index, to: "wg1")))
    #expect(bench.enforcer.managers.known(index) == nil)
    bench.clock.advance(.seconds(5))
    try bench.handle(.tick)
    #expect(detector.questions.count == 3)
    // Gone: forgotten.
    try bench.handle(.link(kernel.delete(index)))
    #expect(bench.enforcer.managers.entries.isEmpty)
  }

  @Test(
    "who manages is looked for once more shortly before the deadline, and the deadline and every up in the pause act on that while it is current: no walk of /proc at each; a holder coming or going (the carrier), 90 s, or a rename looks again"
  )
  func linkDownsActOnWhatIsCurrent() throws {
    let kernel = FakeKernel()
    let nobody = TunnelManager(kind: .none, id: nil, foundBy: .nothing, evidence: "no manager found for wg0")
    let detector = WatchingDetector(manager: nobody, kernel: kernel)
    let bench = try EnforcerBench("current", kernel: kernel, manager: (nil, detector, FakeWgQuick(kernel)))
    let index = kernel.add("wg0", up: true).record.index
    try bench.handle(.started)
    let window = try #require(try bench.stored().window)
    #expect(detector.questions.count == 1)
    func tick(before deadline: Timestamp, _ left: Duration) throws {
      bench.clock.advance(deadline - left - bench.clock.now().wall)
      try bench.handle(.tick)
    }
    // Ticks through the window: looked at again once, in the 30 s before the learning margin.
    try tick(before: window.sessionEndsAt, .seconds(100))
    #expect(detector.questions.count == 1, "looked at again long before the deadline")
    try tick(before: window.sessionEndsAt, .seconds(55))
    #expect(detector.questions.count == 2, "not looked at again ahead of the deadline")
    try tick(before: window.sessionEndsAt, .seconds(50))
    try tick(before: window.sessionEndsAt, .seconds(29))
    #expect(detector.questions.count == 2, "looked at more than once ahead of the deadline, or inside its margin")
    #expect(detector.questions.allSatisfy { $0.up })
    // The deadline: the link cut, and what was found 55 s before acted on, with no walk.
    try bench.alarmFires(at: window.sessionEndsAt)
    #expect(!kernel.isUp(index))
    #expect(detector.questions.count == 2, "the deadline looked again though what it knew was current")
    func upInPause() throws {
      bench.clock.advance(.seconds(1))
      try bench.handle(.link(kernel.set(index, up: true)))
      #expect(!kernel.isUp(index), "an up in the pause stayed up")
    }
    for _ in 0..<5 { try upInPause() }
    #expect(detector.questions.count == 2, "looked again at an up in the pause with nothing changed")
    // A process attached the tun (its carrier came): who holds it is looked at again, once.
    try bench.handle(.link(kernel.carrierChanged(index)))
    try upInPause()
    try upInPause()
    #expect(detector.questions.count == 3, "a holder came and was not looked for (or looked for twice)")
    // What no notification tells is looked at again once it is 90 s old.
    bench.clock.advance(ManagerTable.trustedFor)
    try upInPause()
    try upInPause()
    #expect(detector.questions.count == 4, "not looked at again after \(ManagerTable.trustedFor)")
    // Renamed: forgotten, so the next up looks.
    try bench.handle(.link(kernel.rename(index, to: "wg1")))
    try upInPause()
    #expect(detector.questions.count == 5, "a renamed device was taken for what was learned")
    #expect(detector.questions.dropFirst(2).allSatisfy { !$0.up }, "looked before the cut: \(detector.questions)")
    #expect(try bench.stops() == Array(repeating: .pause, count: 10) + [.freeLimit])
    // The next window with no tick before its deadline: what is known is old, so the deadline
    // looks — after the cut.
    try bench.alarmFires(at: window.pauseEndsAt)
    try bench.handle(.link(kernel.set(index, up: true)))
    let next = try #require(try bench.stored().window)
    #expect(next.sessionEndsAt > window.pauseEndsAt)
    let before = detector.questions.count
    try bench.alarmFires(at: next.sessionEndsAt)
    #expect(!kernel.isUp(index))
    #expect(
      detector.questions.count == before + 1,
      "the deadline acted on what was found \(next.sessionEndsAt - window.pauseEndsAt) before")
    #expect(detector.questions.last?.up == false)
  }

  @Test("the enforcer says it runs (pid, since, action) beside the database, readers find it, and it goes at stop")
  func presence() throws {
    let bench = try EnforcerBench("presence", presence: true)
    #expect(EnforcerPresenceFile.running(on: bench.location).isEmpty)
    try bench.handle(.started)
    let running = EnforcerPresenceFile.running(on: bench.location)
    #expect(running.map(\.pid) == [ProcessTable.currentID])
    #expect(running.first?.action == "link-down")
    #expect(running.first?.tunnel == InterfaceName("wg0"))
    #expect(running.first?.since == bench.clock.now().wall)
    try bench.handle(.stop)
    #expect(EnforcerPresenceFile.running(on: bench.location).isEmpty)
  }

  @Test("a presence file whose process is gone, or was replaced by another with the same pid, is not believed")
  func stalePresence() throws {
    let bench = try EnforcerBench("stale")
    let file = EnforcerPresenceFile(location: bench.location, tunnel: InterfaceName("wg0"))
    let me = ProcessTable.currentID
    let start = try #require(ProcessTable.startTime(of: me))
    let base = EnforcerPresence(
      pid: me, startTime: start, since: bench.clock.now().wall, action: "auto", tunnel: .init("wg0"))
    try file.write(base)
    #expect(EnforcerPresenceFile.running(on: bench.location).count == 1)
    var reused = base
    reused.startTime = start + 1
    try file.write(reused)
    #expect(EnforcerPresenceFile.running(on: bench.location).isEmpty)
    var gone = base
    gone.pid = Int32.max
    try file.write(gone)
    #expect(EnforcerPresenceFile.running(on: bench.location).isEmpty)
    try Data("garbage\n".utf8).write(to: URL(fileURLWithPath: file.path))
    #expect(EnforcerPresenceFile.running(on: bench.location).isEmpty)
  }

  @Test("a name that does not exist yet: the enforcer says it waits for it, and enforces when it comes")
  func waitsForName() throws {
    let bench = try EnforcerBench("wait")
    try bench.handle(.started)
    #expect(bench.log.contains("wg0 does not exist (yet): waiting for it to appear"))
    try bench.handle(.link(bench.kernel.add("wg0", up: true)))
    #expect(try bench.stored().window != nil)
  }
}

/// What `status` asks /proc: one walk for WireGuard's reader and the manager detector together.
struct TunProcessSurveyTests {
  @Test(
    "one walk of /proc answers both: wireguard-go's tun for WireGuard's reader, every tun's holder for the managers"
  )
  func oneWalk() throws {
    let proc = try ProcFixture()
    try proc.process(
      10, command: "wireguard-go", arguments: ["wireguard-go", "wg0"], tuns: [3: "wg0"], otherFiles: [4: "socket:[9]"])
    try proc.process(12, command: "openvpn", arguments: ["openvpn", "--dev", "tun7"], tuns: [3: "tun7"])
    try proc.process(13, command: "openvpn", arguments: ["openvpn"], namespace: "net:[4026532458]", tuns: [3: "tun8"])
    try proc.process(14, command: "bash", arguments: ["bash"], otherFiles: [0: "/dev/pts/0"])
    let config = try TemporaryDirectory("survey")
    #expect(FileManager.default.createFile(atPath: config.file("wg0.conf"), contents: Data()))
    let survey = TunProcessSurvey(procRoot: SystemPath(proc.root), attachments: proc.attachments)
    // /run/wireguard exists: the reader looks for wireguard-go (its socket is not there).
    var reader = WireGuardReader(
      procRoot: SystemPath(proc.root), runDirectory: SystemPath(proc.directory.path), useNetlink: false,
      survey: survey, attachments: proc.attachments)
    let statuses = reader.read([
      WireGuardCandidate(name: InterfaceName("wg0"), index: 5, implementation: .tun),
      WireGuardCandidate(name: InterfaceName("tun7"), index: 6, implementation: .tun),
    ])
    #expect(statuses[0]?.evidence == .wireguardGo)
    #expect(statuses[1] == nil)
    let detector = ManagerDetector(
      runner: FakeNetworkManager(FakeKernel()), wgQuickDirectories: [config.path], procRoot: SystemPath(proc.root),
      attachments: proc.attachments, networkManagerDirectory: config.file("no-nm"),
      systemdDirectory: config.file("no-systemd"), survey: survey)
    let found = detector.managers(of: [
      (InterfaceName("wg0"), "tun"), (InterfaceName("tun7"), "tun"), (InterfaceName("tun8"), "tun"),
    ])
    #expect(found[InterfaceName("wg0")]?.kind == .wgQuick && found[InterfaceName("wg0")]?.process?.pid == 10)
    #expect(found[InterfaceName("tun7")]?.kind == .openVPN && found[InterfaceName("tun7")]?.process?.pid == 12)
    #expect(found[InterfaceName("tun8")]?.kind == TunnelManager.Kind.none, "a holder in another namespace")
    #expect(survey.walks == 1)
    // Without a survey (the enforcer), each question walks again and sees /proc as it is now.
    var alone = detector
    alone.survey = nil
    try proc.process(15, command: "openvpn", arguments: ["openvpn"], tuns: [3: "tun9"])
    #expect(alone.manager(of: InterfaceName("tun9"), kind: "tun").process?.pid == 15)
    #expect(detector.manager(of: InterfaceName("tun9"), kind: "tun").kind == TunnelManager.Kind.none)
    #expect(survey.walks == 1)
  }
}

/// Who has standing to be taken for a tunnel's manager, as the detector decides from a /proc
/// fixture, NetworkManager's and systemd's answers.
struct ManagerStandingTests {
  static let vpn = "6a1b2c3d-0000-4000-8000-000000000001"

  /// nmcli and systemctl as the test says: one active NetworkManager VPN, a MainPID per unit.
  final class Machine: ProgramRunner, @unchecked Sendable {
    var mainPIDs: [String: Int32] = [:]
    private(set) var asked: [[String]] = []
    func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
      asked.append(arguments)
      switch arguments {
      case NetworkManagerControl.devices: return ProgramRun(outcome: .exited(0), output: "")
      case NetworkManagerControl.activeConnectionTypes:
        return ProgramRun(outcome: .exited(0), output: "\(ManagerStandingTests.vpn):vpn:work\n")
      case _ where arguments.starts(with: ["systemctl", "show", "--property=Id,MainPID", "--"]):
        let blocks = arguments.dropFirst(4).map { "MainPID=\(mainPIDs[$0] ?? 0)\nId=\($0)\n" }
        return ProgramRun(outcome: .exited(0), output: blocks.joined(separator: "\n"))
      case _ where arguments.starts(with: ["systemctl", "is-active", "--"]):
        return ProgramRun(outcome: .exited(3), output: arguments.dropFirst(3).map { _ in "inactive\n" }.joined())
      default: return ProgramRun(outcome: .exited(1), errors: "unexpected \(arguments)\n")
      }
    }
  }

  @Test(
    "standing: root's processes, a service's main process, NetworkManager's plugin's child; never another user's, whatever it says"
  )
  func standing() throws {
    let proc = try ProcFixture()
    let plugin = ["openvpn", "--dev", "tun8", "--management", "/var/run/NetworkManager/nm-openvpn-\(Self.vpn)", "unix"]
    // nobody's process, named and argued as NetworkManager's openvpn, holding a tun it owns.
    try proc.process(30, command: "openvpn", arguments: plugin, tuns: [3: "tunU"], uid: 65534)
    // NetworkManager's plugin (root) and the openvpn it started, which dropped to nm-openvpn.
    try proc.process(
      31, command: "nm-openvpn-serv", arguments: [], executable: "/usr/lib/NetworkManager/nm-openvpn-service")
    try proc.process(32, command: "openvpn", arguments: plugin, tuns: [3: "tun8"], uid: 104, parent: 31)
    // The same child of a plugin-named program outside NetworkManager's directory: nobody's.
    try proc.process(35, command: "nm-openvpn-serv", arguments: [], uid: 65534, executable: "/tmp/nm-openvpn-service")
    try proc.process(36, command: "openvpn", arguments: plugin, tuns: [3: "tun5"], uid: 65534, parent: 35)
    // NetworkManager's own plugin program, run by nobody (it is not setuid), and its child.
    try proc.process(
      37, command: "nm-openvpn-serv", arguments: [], uid: 65534,
      executable: "/usr/lib/NetworkManager/nm-openvpn-service")
    try proc.process(38, command: "openvpn", arguments: plugin, tuns: [3: "tun4"], uid: 65534, parent: 37)
    // A service's main process that dropped root, and a job cron started as a user.
    try proc.process(
      33, command: "openvpn", arguments: ["openvpn"], tuns: [3: "tun7"], uid: 104,
      controlGroup: "/system.slice/openvpn-client@work.service")
    try proc.process(
      34, command: "openvpn", arguments: ["openvpn"], tuns: [3: "tun6"], uid: 1000,
      controlGroup: "/system.slice/cron.service")
    let directory = try TemporaryDirectory("standing")
    let machine = Machine()
    machine.mainPIDs = ["openvpn-client@work.service": 33, "cron.service": 999]
    let detector = ManagerDetector(
      runner: machine, wgQuickDirectories: [directory.path], procRoot: SystemPath(proc.root),
      attachments: proc.attachments, networkManagerDirectory: directory.path, systemdDirectory: directory.path)
    let found = detector.managers(
      of: ["tunU", "tun8", "tun5", "tun4", "tun7", "tun6"].map { (InterfaceName($0), "tun") })
    #expect(
      found[InterfaceName("tunU")]?.kind == TunnelManager.Kind.none,
      "\(String(describing: found[InterfaceName("tunU")]))")
    #expect(found[InterfaceName("tun8")]?.kind == .networkManager && found[InterfaceName("tun8")]?.id == Self.vpn)
    #expect(found[InterfaceName("tun5")]?.kind == TunnelManager.Kind.none)
    #expect(found[InterfaceName("tun4")]?.kind == TunnelManager.Kind.none)
    #expect(
      found[InterfaceName("tun7")]?.kind == .systemd
        && found[InterfaceName("tun7")]?.id == "openvpn-client@work.service")
    #expect(found[InterfaceName("tun6")]?.kind == TunnelManager.Kind.none)
    // Nothing was ever asked about the impostor's claimed connection beyond NetworkManager's own list.
    #expect(!machine.asked.joined().contains { $0.contains("down") })
  }
}

/// The managers' command lines and what their answers mean, as values.
struct ManagerCommandTests {
  @Test("the command lines each manager is driven with")
  func commandLines() {
    #expect(
      NetworkManagerControl.deactivate("U") == ["nmcli", "--wait", "10", "connection", "down", "uuid", "U"])
    #expect(
      NetworkManagerControl.setAutoconnect("U", "no") == [
        "nmcli", "connection", "modify", "--temporary", "uuid", "U", "connection.autoconnect", "no",
      ])
    // Names go after `--`: a unit name systemd accepts may start with a dash.
    #expect(
      SystemdUnitControl.stopCommand("wg-quick@wg0.service") == ["systemctl", "stop", "--", "wg-quick@wg0.service"])
    #expect(
      SystemdUnitControl.stateCommand(["a.service", "b.service"]) == [
        "systemctl", "is-active", "--", "a.service", "b.service",
      ])
    #expect(WgQuickControl.downCommand("/etc/wireguard/wg0.conf") == ["wg-quick", "down", "/etc/wireguard/wg0.conf"])
  }

  @Test("OpenVPN's management answer: SUCCESS is taken, ERROR refused, a greeting alone is no answer yet")
  func managementVerdict() {
    let greeting = ">INFO:OpenVPN Management Interface Version 5 -- type 'help' for more info\r\n"
    #expect(OpenVPNControl.verdict(Array(greeting.utf8)) == nil)
    #expect(OpenVPNControl.verdict(Array((greeting + "SUCCESS: signal SIGTERM thrown\r\n").utf8)) == true)
    #expect(OpenVPNControl.verdict(Array((greeting + "ERROR: signal not recognised\r\n").utf8)) == false)
    #expect(OpenVPNControl.verdict(Array("ENTER PASSWORD:".utf8)) == nil)
  }

  @Test(
    "OpenVPN's management socket is signalled only when the kernel says the holder serves it: another's is asked nothing"
  )
  func managementPeer() throws {
    let directory = try TemporaryDirectory("ovpnpeer")
    let path = directory.file("management.sock")
    let server = try FakeControlSocket(
      path: path, behaviour: .answerLine(Array("SUCCESS: signal SIGTERM thrown\r\n".utf8)))
    defer { server.stop() }
    // This process serves it; as the socket of pid 1 (whose arguments might name this path), no.
    guard case .failure(let why) = OpenVPNControl.signal(paths: [path], served: 1) else {
      Issue.record("a socket pid 1 does not serve was signalled")
      return
    }
    #expect(why.contains("served by pid \(getpid()), not by pid 1"), "\(why)")
    guard case .success = OpenVPNControl.signal(paths: [path], served: getpid()) else {
      Issue.record("the serving process's socket was not signalled")
      return
    }
    #expect(server.requests.filter { $0.contains("signal") } == ["signal SIGTERM\n"])
    // A socket in a directory others may write is not used at all.
    chmod(directory.path, 0o777)
    defer { chmod(directory.path, 0o700) }
    guard case .failure(let open) = OpenVPNControl.signal(paths: [path], served: getpid()) else {
      Issue.record("a socket in an open directory was signalled")
      return
    }
    #expect(open.contains("is writable by other users"), "\(open)")
    #expect(server.requests.filter { $0.contains("signal") }.count == 1)
  }

  @Test(
    "an enforcer without CAP_NET_ADMIN, or without NetworkManager's permission for its connection, is refused at start")
  func requirements() throws {
    final class Permissions: ProgramRunner, @unchecked Sendable {
      var value = "yes"
      func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
        ProgramRun(
          outcome: .exited(0),
          output: "org.freedesktop.NetworkManager.enable-disable-network:yes\n"
            + "org.freedesktop.NetworkManager.network-control:\(value)\n")
      }
    }
    let permissions = Permissions()
    #expect(throws: Never.self) { try EnforcerRequirements.check(hasNetAdmin: true, runner: permissions) }
    do {
      try EnforcerRequirements.check(hasNetAdmin: false, runner: permissions)
      Issue.record("no CAP_NET_ADMIN, yet accepted")
    } catch {
      #expect(error.description.contains("CAP_NET_ADMIN"))
    }
    #expect(throws: Never.self) {
      try EnforcerRequirements.check(hasNetAdmin: true, networkManager: true, runner: permissions)
    }
    for refused in ["no", "auth"] {
      permissions.value = refused
      do {
        try EnforcerRequirements.check(hasNetAdmin: true, networkManager: true, runner: permissions)
        Issue.record("network-control \(refused), yet accepted")
      } catch {
        #expect(error.description.contains("network-control"))
      }
    }
  }

  static let deviceUUID = "f2e6ce48-0c5f-4b7e-9d7e-3d2b1f0a9c11"

  @Test("nmcli -t lines: colons in values are escaped, empty fields are nil, a UUID is one")
  func terseDevices() {
    let devices = NetworkManagerControl.parseDevices(
      "nmtun0:connected:\(Self.deviceUUID):vpn\\:work\nlo:connected (externally):1234:lo\nveth0:disconnected::\n")
    #expect(devices.count == 3)
    #expect(
      devices[0]
        == NetworkManagerDevice(
          device: .init("nmtun0"), state: "connected", connection: "vpn:work", uuid: Self.deviceUUID))
    #expect(devices[1].isExternal && !devices[0].isExternal)
    #expect(devices[1].uuid == nil, "not a UUID: never handed to nmcli")
    #expect(devices[2].connection == nil && devices[2].uuid == nil)
  }

  @Test(
    "a name with a newline (nmcli does not escape it) stays one name: it neither starts a record nor ends one early"
  )
  func terseNewlines() {
    let other = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    // The connection `evil⏎work-vpn:1a2b:vpn`, then `work` — as nmcli prints them.
    let output = "\(Self.deviceUUID):tun:evil\nwork-vpn\\:1a2b\\:vpn\n\(other):vpn:work\n"
    let records = NetworkManagerControl.terseRecords(output, fields: 3)
    #expect(records == [[Self.deviceUUID, "tun", "evil\nwork-vpn:1a2b:vpn"], [other, "vpn", "work"]])
    // A name that ends in a newline keeps it; the output's own last newline is not a name's.
    #expect(NetworkManagerControl.terseRecords("\(other):vpn:work\n\n", fields: 3) == [[other, "vpn", "work\n"]])
    // `connection show` details: blank lines between connections are not values.
    #expect(
      NetworkManagerControl.terseRecords("GENERAL.IP-IFACE:tun8\n\nGENERAL.UUID:x\n", fields: 2, continuing: false)
        == [["GENERAL.IP-IFACE", "tun8"], ["GENERAL.UUID", "x"]])
    // A name first would split: the parser is only ever given listings with the name last.
    let devices = NetworkManagerControl.parseDevices("nmtun0:connected:\(Self.deviceUUID):evil\nwork\\:x\n")
    #expect(devices.count == 1 && devices[0].connection == "evil\nwork:x")
  }

  @Test(
    "where systemd runs, a unit is asked about by name (the configured one first) and counts only when active")
  func systemdDetection() throws {
    final class Systemd: ProgramRunner, @unchecked Sendable {
      var active: Set<String> = []
      private(set) var asked: [[String]] = []
      func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
        asked.append(arguments)
        guard arguments.starts(with: ["systemctl", "is-active", "--"]) else { return ProgramRun(outcome: .exited(1)) }
        let states = arguments.dropFirst(3).map { active.contains($0) ? "active\n" : "inactive\n" }
        return ProgramRun(outcome: .exited(0), output: states.joined())
      }
    }
    let directory = try TemporaryDirectory("systemd")
    let systemd = Systemd()
    let detector = ManagerDetector(
      runner: systemd, wgQuickDirectories: [directory.path], units: [.init("wg0"): "my-vpn.service"],
      procRoot: SystemPath(directory.file("no-proc")), networkManagerDirectory: directory.file("no-nm"),
      systemdDirectory: directory.path)
    #expect(detector.manager(of: .init("wg0"), kind: "wireguard").kind == .none)
    #expect(
      systemd.asked.last == [
        "systemctl", "is-active", "--", "my-vpn.service", "wg-quick@wg0.service", "openvpn-client@wg0.service",
        "openvpn@wg0.service",
      ])
    systemd.active = ["wg-quick@wg0.service"]
    #expect(detector.manager(of: .init("wg0"), kind: "wireguard").id == "wg-quick@wg0.service")
    systemd.active = ["wg-quick@wg0.service", "my-vpn.service"]
    let configured = detector.manager(of: .init("wg0"), kind: "wireguard")
    #expect(configured.kind == .systemd && configured.id == "my-vpn.service" && configured.foundBy == .unit)
    // Without systemd, nobody asks it.
    let count = systemd.asked.count
    var without = detector
    without.systemdDirectory = directory.file("no-systemd")
    #expect(without.manager(of: .init("wg0"), kind: "wireguard").kind == .none)
    #expect(systemd.asked.count == count)
  }

  @Test("a systemd unit is stopped when is-active says so, and only then")
  func systemdState() {
    final class Answer: ProgramRunner, @unchecked Sendable {
      var state = "active"
      func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
        ProgramRun(outcome: .exited(state == "active" ? 0 : 3), output: state + "\n")
      }
    }
    let answer = Answer()
    let control = SystemdUnitControl(unit: "wg-quick@wg0.service", runner: answer)
    #expect(control.isStopped(.init("wg0"), deviceGone: true) == false)
    answer.state = "inactive"
    #expect(control.isStopped(.init("wg0"), deviceGone: true) == true)
    answer.state = "deactivating"
    #expect(control.isStopped(.init("wg0"), deviceGone: true) == false)
  }

  @Test("programs run as children: their output is kept, a daemon they leave holding the pipe does not hold us up")
  func childRunner() {
    let runner = ChildProgramRunner()
    let printed = runner.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"], timeout: .seconds(10))
    #expect(printed.outcome == .exited(3))
    #expect(printed.output == "out\n" && printed.errors == "err\n")
    #expect(printed.failure == "exited with status 3: err")
    let started = ContinuousClock.now
    let daemon = runner.run(["/bin/sh", "-c", "sleep 5 & echo started $!"], timeout: .seconds(10))
    // The daemon is this test's to end, not left to the test process's reaper.
    let daemonID = daemon.output.split(separator: " ").last.flatMap { Int32($0.dropLast()) }
    defer { if let daemonID { kill(daemonID, SIGKILL) } }
    #expect(daemon.succeeded && daemon.output.hasPrefix("started ") && daemonID != nil, "\(daemon.output)")
    #expect(ContinuousClock.now - started < .seconds(3), "waited for the daemon's end of the pipe")
    let slow = runner.run(["/bin/sleep", "10"], timeout: .milliseconds(300))
    #expect(slow.outcome == .timedOut)
    #expect(runner.run(["/nonexistent/nmcli"], timeout: .seconds(1)).outcome == .failedToStart(.noSuchFile))
  }
}
