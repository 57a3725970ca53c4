import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// A tunnel under the free plan's limit, for real: its own namespace, a tun with a process on
/// it, a database, and `vpnstat enforce` with short lengths.
final class EnforcedTunnel: @unchecked Sendable {
  let ns: TestNamespace
  let directory: TemporaryDirectory
  let db: String
  let tunnel = "tun9"
  var owner: BackgroundProcess?
  var enforcer: BackgroundProcess?

  init(_ label: String) throws {
    ns = try TestNamespace(label)
    directory = try TemporaryDirectory(label)
    db = directory.file("v.db")
    try createTunnel()
  }

  func createTunnel() throws {
    let owner = try ns.peer("tun", tunnel, "--echo")
    try owner.waitFor("ready")
    self.owner = owner
  }

  func up() throws { try ns.ip("link", "set", tunnel, "up") }

  func isUp() throws -> Bool {
    let shown = try ns.ip("-j", "link", "show", tunnel)
    let links = try JSONSerialization.jsonObject(with: shown.stdout) as? [[String: Any]]
    return (links?.first?["flags"] as? [String])?.contains("UP") == true
  }

  func exists() -> Bool { (try? ns.ip("link", "show", tunnel)) != nil }

  func startEnforcer(_ extra: [String] = [], session: String = "2s", pause: String = "3s") throws -> BackgroundProcess {
    let process = try ns.start(
      Built.vpnstat, ["enforce", tunnel, "--db", db, "--session-length", session, "--pause-length", pause] + extra)
    try process.waitForError("enforcing the free plan")
    enforcer = process
    return process
  }

  func session() throws -> [String: Any] {
    let result = try ns.vpnstat("session", "--json", "--db", db)
    let object = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
    return object?["session"] as? [String: Any] ?? [:]
  }

  func lastStop() throws -> [String: Any]? { try session()["last_stop"] as? [String: Any] }

  /// The session once the enforcer's first look at an up tunnel has opened its window: the
  /// enforcer says it enforces before it looks, so a read at once may come before the window.
  func openedWindow() throws -> [String: Any] {
    var session: [String: Any] = [:]
    _ = try waitUntil(timeout: 30) {
      session = try self.session()
      return session["session_ends_at"] is String
    }
    return session
  }

  deinit {
    enforcer?.stop()
    owner?.stop()
  }
}

func instant(_ value: Any?) -> Date? {
  guard let text = value as? String, let parsed = Timestamp(rfc3339: text) else { return nil }
  return Date(timeIntervalSince1970: parsed.secondsDouble)
}

@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct EnforceKernelTests {
  @Test("the deadline takes the tunnel down within 1 s, the pause gates and undoes a manual up, then a new window")
  func fullCycle() throws {
    let t = try EnforcedTunnel("enf")
    try t.up()
    let enforcer = try t.startEnforcer(session: "3s", pause: "4s")
    let session = try t.openedWindow()
    #expect(session["state"] as? String == "active")
    let ends = try #require(instant(session["session_ends_at"]))
    let pauseEnds = try #require(instant(session["pause_ends_at"]))
    #expect(try t.ns.vpnstat("session", "check", "--db", t.db).status == 0)
    let down = try #require(try waitUntil(timeout: 6) { try !t.isUp() }, "never taken down")
    let latency = down.timeIntervalSince(ends)
    #expect(latency < 1.0, "deadline → down took \(latency) s")
    #expect(latency > -0.05, "taken down before the deadline: \(latency) s")
    // The stop is recorded after the link is cut and the manager step is done: waited for.
    #expect(try waitUntil(timeout: 30) { try t.lastStop()?["reason"] as? String == "free-limit" } != nil)
    // The gate refuses during the pause and says how long and until when.
    let gate = try t.ns.vpnstat("session", "check", "--db", t.db)
    #expect(gate.status == 75)
    #expect(gate.errors.contains("free plan pause: you can reconnect in "), "\(gate.errors)")
    #expect(gate.errors.contains("(at "))
    // Brought up by hand during the pause: undone at once.
    try t.up()
    let undone = try waitUntil(timeout: 1) { try !t.isUp() }
    #expect(undone != nil, "a manual up during the pause stayed up")
    #expect(try waitUntil(timeout: 30) { try t.lastStop()?["reason"] as? String == "pause" } != nil)
    // After the pause the gate opens, and the next up opens a new window.
    _ = waitUntil(timeout: 8) { Date() > pauseEnds.addingTimeInterval(0.2) }
    #expect(try t.ns.vpnstat("session", "check", "--db", t.db).status == 0)
    try t.up()
    #expect(try holdsThroughout(0.3) { try t.isUp() }, "an up after the pause was undone")
    let next = try t.session()
    #expect(next["state"] as? String == "active")
    #expect(try #require(instant(next["opened_at"])) > pauseEnds)
    #expect(enforcer.stop() == 0)
  }

  @Test("restarting the enforcer does not extend the window")
  func restartKeepsWindow() throws {
    let t = try EnforcedTunnel("rst")
    try t.up()
    var enforcer = try t.startEnforcer(session: "30s", pause: "30s")
    let first = try #require(t.openedWindow()["session_ends_at"] as? String)
    #expect(enforcer.stop() == 0)
    #expect(try t.lastStop()?["reason"] as? String == "stopped")
    sleep(1)
    enforcer = try t.startEnforcer(session: "30s", pause: "30s")
    #expect(try t.session()["session_ends_at"] as? String == first)
    #expect(enforcer.errors.contains("inside the window"))
    enforcer.stop()
  }

  @Test("a tunnel deleted before its deadline gets no disconnect action afterwards")
  func deletedBeforeDeadline() throws {
    let t = try EnforcedTunnel("del")
    try t.up()
    let marker = t.directory.file("action-ran")
    _ = try t.startEnforcer(["--exec", "/bin/sh", "-c", "touch \(marker)"], session: "2s", pause: "2s")
    let ends = try #require(instant(try t.openedWindow()["session_ends_at"]))
    t.owner?.stop()
    _ = waitUntil(timeout: 2) { !t.exists() }
    #expect(!t.exists())
    _ = waitUntil(timeout: 5) { Date() > ends.addingTimeInterval(1.5) }
    #expect(!FileManager.default.fileExists(atPath: marker), "the action ran after the tunnel was gone")
    #expect(try t.lastStop()?["reason"] as? String == "vanished")
  }

  @Test("a second enforcer for the same tunnel refuses, naming the holder")
  func secondEnforcer() throws {
    let t = try EnforcedTunnel("two")
    let first = try t.startEnforcer(session: "60s", pause: "60s")
    let second = try t.ns.vpnstat("enforce", t.tunnel, "--db", t.db)
    #expect(second.status == 75, "\(second.errors)")
    #expect(second.errors.contains("vpnstat enforce \(t.tunnel) (pid \(first.pid))"), "\(second.errors)")
    first.stop()
  }

  @Test("--exec runs exactly the argv given: spaces, quotes and $(…) arrive untouched, nothing is evaluated")
  func execArgv() throws {
    let t = try EnforcedTunnel("argv")
    try t.up()
    let out = t.directory.file("argv")
    let pwned = t.directory.file("pwned")
    let script =
      "printf '%s\\n' \"$@\" > \(out); echo \"$VPNSTAT_INTERFACE $VPNSTAT_REASON\" >> \(out); ip link set \(t.tunnel) down"
    let arguments = ["a b", "'single'", "\"double\"", "$(touch \(pwned))", "`touch \(pwned)`", "*"]
    _ = try t.startEnforcer(["--exec", "/bin/sh", "-c", script, "sh"] + arguments, session: "1s", pause: "2s")
    let down = try waitUntil(timeout: 4) { try !t.isUp() }
    #expect(down != nil)
    // The link is cut first and the command runs after it; the stop is recorded once the
    // command exited (and the kernel confirmed), so then all it wrote is there.
    _ = try waitUntil(timeout: 30) { try t.lastStop() != nil }
    let written = String(decoding: contents(out) ?? Data(), as: UTF8.self)
    #expect(written == (arguments + ["\(t.tunnel) free-limit"]).joined(separator: "\n") + "\n")
    #expect(!FileManager.default.fileExists(atPath: pwned))
    let stop = try #require(try t.lastStop())
    #expect(stop["reason"] as? String == "free-limit")
    #expect(stop["detail"] is NSNull, "a working action records no failure: \(stop)")
  }

  @Test("--exec -- CMD ARGS runs CMD: the -- ends vpnstat's options and is not the program's name")
  func execAfterDoubleDash() throws {
    let t = try EnforcedTunnel("dd")
    try t.up()
    let marker = t.directory.file("ran")
    _ = try t.startEnforcer(
      ["--exec", "--", "/bin/sh", "-c", "touch \(marker); ip link set \(t.tunnel) down"], session: "1s", pause: "2s")
    #expect(try waitUntil(timeout: 4) { try !t.isUp() } != nil)
    _ = try waitUntil(timeout: 30) { try t.lastStop() != nil }
    #expect(FileManager.default.fileExists(atPath: marker), "the command never ran")
    let stop = try #require(try t.lastStop())
    #expect(stop["reason"] as? String == "free-limit")
    #expect(stop["detail"] is NSNull, "the command failed and link-down took over: \(stop)")
  }

  // A command that does nothing and says it worked cannot be told from one that worked: the
  // link was cut before it ran.
  @Test(
    "--exec failures are detected and recorded; the link was cut before the command ran",
    arguments: [
      ("exit3", ["/bin/sh", "-c", "exit 3"], "exited with status 3"),
      ("hang", ["/bin/sleep", "30"], "timed out"),
      ("nope", ["/nonexistent/disconnect"], "could not be started"),
    ])
  func execFailures(label: String, command: [String], fragment: String) throws {
    let t = try EnforcedTunnel("x" + label)
    try t.up()
    let enforcer = try t.startEnforcer(["--exec-timeout", "500ms", "--exec"] + command, session: "1s", pause: "3s")
    let down = try waitUntil(timeout: 6) { try !t.isUp() }
    #expect(down != nil, "the link was not cut")
    _ = try waitUntil(timeout: 30) { (try t.lastStop()?["detail"] as? String) != nil }
    let detail = try #require(try t.lastStop()?["detail"] as? String)
    #expect(detail.contains(fragment), "\(detail)")
    #expect(detail.hasPrefix("down by link-down; exec "), "\(detail)")
    #expect(enforcer.errors.contains("is down (link-down, confirmed by the kernel), but exec "))
  }

  @Test(
    "an unprivileged user reads the state, gets 77 from session reset and plan; the database is unchanged",
    .enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
  func unprivileged() throws {
    let t = try EnforcedTunnel("nob")
    try t.up()
    let enforcer = try t.startEnforcer(session: "60s", pause: "60s")
    enforcer.stop()
    let binary = try vpnstatForOtherUsers(in: t.directory)
    let before = contents(t.db)
    let read = try runAsNobody(binary, ["session", "--json", "--db", t.db])
    #expect(read.status == 0, "\(read.errors)")
    #expect(read.output.contains("\"plan\":\"free\""))
    let gate = try runAsNobody(binary, ["session", "check", "--db", t.db])
    #expect(gate.status == 0, "\(gate.errors)")
    for command in [["session", "reset"], ["plan", "premium"]] {
      let result = try runAsNobody(binary, command + ["--db", t.db])
      #expect(result.status == 77, "\(command): \(result.errors)")
      #expect(result.errors.contains(t.db) && result.errors.contains("cannot write"), "\(command): \(result.errors)")
    }
    #expect(contents(t.db) == before)
    #expect(try t.session()["state"] as? String == "active")
  }

  @Test(
    "the enforcer as nobody exits 77 at once, naming CAP_NET_ADMIN, before it makes anything",
    .enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
  func withoutCapability() throws {
    let t = try EnforcedTunnel("cap")
    let binary = try vpnstatForOtherUsers(in: t.directory)
    let db = t.directory.file("nobody.db")
    let started = Date()
    let result = try runAsNobody(binary, ["enforce", t.tunnel, "--db", db])
    #expect(result.status == 77, "\(result.errors)")
    #expect(result.errors.contains("CAP_NET_ADMIN"), "\(result.errors)")
    #expect(Date().timeIntervalSince(started) < 5)
    #expect(!FileManager.default.fileExists(atPath: db))
  }

  @Test(
    "session --json shows the running enforcer (pid, since, action) and null once it stops or dies; the texts say what happens without one"
  )
  func presence() throws {
    let t = try EnforcedTunnel("pres")
    try t.up()
    let before = Date()
    var enforcer = try t.startEnforcer(["--action", "delete"], session: "60s", pause: "60s")
    let shown = try #require(try t.session()["enforcer"] as? [String: Any], "no enforcer shown")
    #expect(uint(shown["pid"]) == UInt64(enforcer.pid))
    #expect(shown["action"] as? String == "delete")
    let since = try #require(instant(shown["since"]))
    #expect(since >= before.addingTimeInterval(-1) && since <= Date())
    let text = try t.ns.vpnstat("session", "--db", t.db)
    #expect(text.output.contains("enforcer: pid \(enforcer.pid) since "), "\(text.output)")
    #expect(enforcer.stop() == 0)
    #expect(try t.session()["enforcer"] is NSNull)
    let without = try t.ns.vpnstat("session", "--db", t.db).output
    #expect(without.contains("enforcer: none running"), "\(without)")
    // Killed without a word: its presence file stays, but its process is gone, so it is not shown.
    enforcer = try t.startEnforcer(session: "60s", pause: "60s")
    #expect(try t.session()["enforcer"] is [String: Any])
    enforcer.stop(SIGKILL)
    #expect(try t.session()["enforcer"] is NSNull)
    // No window and no enforcer: connecting opens nothing, and the texts do not pretend it does.
    #expect(try t.ns.vpnstat("session", "reset", "--db", t.db).status == 0)
    let none = try t.ns.vpnstat("session", "--db", t.db).output
    #expect(none.contains("no enforcer running, so connecting opens no session"), "\(none)")
    #expect(!none.contains("connecting opens a"))
  }

  @Test("a name that does not exist: the enforcer says it waits for it, and enforces it once it appears")
  func waitsForName() throws {
    let ns = try TestNamespace("wait")
    let directory = try TemporaryDirectory("wait")
    let db = directory.file("v.db")
    let enforcer = try ns.start(
      Built.vpnstat, ["enforce", "tunw", "--db", db, "--session-length", "60s", "--pause-length", "60s"])
    defer { enforcer.stop() }
    try enforcer.waitForError("tunw does not exist (yet): waiting for it to appear")
    let owner = try ns.echoTunnel("tunw", local: "169.254.107.1", peer: "169.254.107.2")
    defer { owner.stop() }
    try enforcer.waitForError("tunw up: opened a window", timeout: 5)
  }

  @Test("--action delete removes the tunnel at the deadline, whoever holds it")
  func deleteAction() throws {
    let t = try EnforcedTunnel("delact")
    try t.up()
    _ = try t.startEnforcer(["--action", "delete"], session: "2s", pause: "3s")
    let ends = try #require(instant(try t.openedWindow()["session_ends_at"]))
    let gone = try #require(waitUntil(timeout: 5) { !t.exists() }, "never deleted")
    #expect(gone.timeIntervalSince(ends) < 1.0)
    _ = try waitUntil(timeout: 3) { try t.lastStop() != nil }
    let stop = try #require(try t.lastStop())
    #expect(stop["reason"] as? String == "free-limit")
    #expect(stop["detail"] is NSNull, "\(stop)")
  }

  @Test("premium: the enforcer only records usage; plan free again starts clean")
  func premiumOnlyRecords() throws {
    let t = try EnforcedTunnel("prem")
    let plan = try t.ns.vpnstat("plan", "premium", "--db", t.db)
    #expect(plan.status == 0, "\(plan.errors)")
    try t.up()
    let enforcer = try t.startEnforcer(session: "1s", pause: "1s")
    #expect(try holdsThroughout(1.8) { try t.isUp() }, "a premium plan's tunnel was stopped: \(enforcer.errors)")
    #expect(try t.session()["state"] as? String == "unlimited")
    #expect(try t.ns.vpnstat("session", "check", "--db", t.db).status == 0)
    enforcer.stop()
  }
}
