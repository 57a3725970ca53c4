import Foundation
import Testing

@testable import VPNStatTestSupport

/// What the tests start ends with the test process, however it ends (`TestProcessReaper`): a
/// timed-out run killed with SIGKILL once left a real OpenVPN pair running on the machine. A
/// second test process runs `probe`, which starts what tests start — a background process, a
/// daemon that left its parent (as wireguard-go, dbus-daemon --fork and tmux do), a process that
/// became nobody, a namespace with a tun owner in it — and is then killed.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct TestProcessReaperTests {
  /// Where `probe` writes what it started; set only in the test process the test starts.
  static let probeDirectory = ProcessInfo.processInfo.environment["VPNSTAT_REAPER_PROBE"]

  /// Whether `pid` still runs (a zombie has ended: only its parent's wait is missing).
  static func isRunning(_ pid: pid_t) -> Bool {
    guard kill(pid, 0) == 0 else { return false }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return false }
    return !stat[stat.index(after: close)...].hasPrefix(" Z")
  }

  @Test(
    "a test process killed with SIGKILL leaves nothing running: its background processes, a daemon they forked, a process run as nobody and its namespaces' processes are gone, its namespaces removed"
  )
  func killedTestProcessLeavesNothing() throws {
    #expect(TestProcessReaper.pid.map(Self.isRunning) == true, "this test process has no reaper")
    let directory = try TemporaryDirectory("reaper")
    let testProcess = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
    let probe = try BackgroundProcess(
      testProcess, ["--testing-library", "swift-testing", "--filter", "TestProcessReaperTests/probe"],
      environment: ["VPNSTAT_REAPER_PROBE": directory.path])
    defer { probe.stop(SIGKILL) }
    let started = directory.file("started")
    #expect(waitUntil(timeout: 120) { FileManager.default.fileExists(atPath: started) || !probe.isRunning } != nil)
    let lines = try String(contentsOfFile: started, encoding: .utf8).split(separator: "\n")
    let pids = lines.compactMap { line in line.split(separator: " ").first.flatMap { pid_t($0) } }
    let namespaces = lines.filter { $0.hasPrefix("namespace ") }.map { "/run/netns/" + $0.dropFirst(10) }
    try #require(pids.count >= 3 && namespaces.count == 1, "the probe said: \(lines) \(probe.output)")
    for (pid, line) in zip(pids, lines) { #expect(Self.isRunning(pid), "not running before the kill: \(line)") }

    kill(probe.pid, SIGKILL)
    probe.child.wait(timeout: 30)
    let killed = Date()
    // A state, not a speed: the bound is for a reaper that never acts (under load: 10–170 ms).
    let cleared = waitUntil(timeout: 10) {
      !pids.contains(where: Self.isRunning) && !namespaces.contains { FileManager.default.fileExists(atPath: $0) }
    }
    let left = zip(pids, lines).filter { Self.isRunning($0.0) }.map(\.1)
    #expect(cleared != nil, "still running after the test process was killed: \(left); namespaces: \(namespaces)")
    if let cleared {
      print("test-process reaper: all gone \(Int(cleared.timeIntervalSince(killed) * 1000)) ms after the kill")
    }
  }

  /// Started by `killedTestProcessLeavesNothing` in a second test process: starts what tests
  /// start, says so in `started` (one line each: `PID what`), then waits to be killed.
  @Test(
    .enabled(
      if: probeDirectory != nil, "the probe runs only in the test process killedTestProcessLeavesNothing starts"))
  func probe() throws {
    let directory = try #require(Self.probeDirectory)
    var started: [String] = []
    let background = try BackgroundProcess("/bin/sleep", ["1000"])
    started.append("\(background.pid) background process")
    // A daemon: its parent exits at once, so it is no child of this process any more.
    let daemon = try run("/bin/sh", ["-c", "setsid /bin/sleep 1001 < /dev/null > /dev/null 2>&1 & echo $!"])
    let daemonPID = try #require(pid_t(daemon.output.trimmingCharacters(in: .whitespacesAndNewlines)))
    started.append("\(daemonPID) daemon")
    let ns = try TestNamespace("probe")
    let owner = try ns.peer("tun", "tunR")
    try owner.waitFor("ready")
    started.append("\(owner.pid) tun owner in the namespace")
    if Privilege.canRunAsNobody {
      let nobody = try ns.startAsNobody("/bin/sleep", ["1002"])
      started.append("\(nobody.pid) nobody's process in the namespace")
    }
    started.append("namespace \(ns.name)")
    try Data((started.joined(separator: "\n") + "\n").utf8).write(
      to: URL(fileURLWithPath: directory + "/started.tmp"))
    try FileManager.default.moveItem(atPath: directory + "/started.tmp", toPath: directory + "/started")
    // Killed here; a probe nobody kills fails.
    sleep(300)
    Issue.record("the probe was never killed")
    withExtendedLifetime((background, owner, ns)) {}
  }
}
