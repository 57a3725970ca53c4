import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// What a Notify call carried, as `dbus-monitor` saw it on the bus, and when.
struct SeenNotify: CustomStringConvertible {
  var time: Date
  var replaces: UInt32
  var summary: String
  var body: String
  var urgency: Int

  var description: String { "\(String(format: "%.3f", time.timeIntervalSince1970)) [\(urgency)] \(summary)" }

  /// The Notify calls in `dbus-monitor --monitor`'s text: each message's header line
  /// (`method call time=… member=Notify`), then its arguments three spaces in.
  static func parse(_ text: String) -> [SeenNotify] {
    var result: [SeenNotify] = []
    let lines = text.components(separatedBy: "\n")
    func isHeader(_ line: String) -> Bool {
      ["method call ", "method return ", "signal ", "error "].contains { line.hasPrefix($0) }
    }
    var index = 0
    while index < lines.count {
      let line = lines[index]
      index += 1
      guard line.hasPrefix("method call time="), line.contains("member=Notify"),
        let seconds = Double(line.dropFirst("method call time=".count).prefix { $0 != " " })
      else { continue }
      var block: [String] = []
      while index < lines.count, !isHeader(lines[index]) {
        block.append(lines[index])
        index += 1
      }
      let strings = block.indices.filter { block[$0].hasPrefix("   string \"") }
      guard strings.count >= 4 else { continue }
      func quoted(_ text: String) -> String {
        guard let first = text.firstIndex(of: "\"") else { return text }
        return String(text[text.index(after: first)...])
      }
      var body = quoted(block[strings[3]])
      var next = strings[3]
      while !body.hasSuffix("\""), next + 1 < block.count {
        next += 1
        body += "\n" + block[next]
      }
      body = String(body.dropLast())
      let summary = String(quoted(block[strings[2]]).dropLast())
      let replaces =
        block.first { $0.hasPrefix("   uint32 ") }.flatMap { UInt32($0.split(separator: " ").last ?? "") } ?? 0
      var urgency = -1
      if let at = block.firstIndex(where: { $0.contains("string \"urgency\"") }), at + 1 < block.count {
        urgency = Int(block[at + 1].split(separator: " ").last ?? "") ?? -1
      }
      result.append(
        SeenNotify(
          time: Date(timeIntervalSince1970: seconds), replaces: replaces, summary: summary, body: body, urgency: urgency
        ))
    }
    return result
  }
}

/// `vpnstat notify` against the real parts: a real enforcer on a tun in a namespace, a real
/// `dbus-daemon --session` and dunst (`PrivateDesktop`), the calls seen on the bus by
/// `dbus-monitor` with their times, and what dunst shows.
@Suite(.enabled(if: Privilege.isRoot, "needs root: namespaces, a tun, and the desktop's own namespaces"))
struct NotifyKernelTests {
  /// The desktop, a monitor on its bus (ready once it saw a call), and `vpnstat notify` on
  /// `db` with `extra` options, started and ready.
  final class Agent {
    let desktop: PrivateDesktop
    let monitor: BackgroundProcess
    let agent: BackgroundProcess

    init(_ label: String, db: String, _ extra: [String]) throws {
      try Tool.require("/usr/bin/dbus-monitor")
      desktop = try PrivateDesktop(label, notificationServer: true)
      monitor = try desktop.start("/usr/bin/dbus-monitor", ["--monitor"])
      let connection = try DesktopBusConnection.connect(
        to: try DesktopBusAddress.find(environment: desktop.environment))
      let deadline = Date().addingTimeInterval(10)
      while monitor.child.stdoutData.isEmpty {
        guard Date() < deadline else { throw TestSetupError("dbus-monitor saw nothing: \(monitor.errors)") }
        _ = try connection.call(
          BusMethodCall(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "GetId"))
        usleep(20_000)
      }
      agent = try desktop.start(Built.vpnstat, ["notify", "--db", db] + extra)
      try agent.waitForError("notifying through dunst")
    }

    var seen: [SeenNotify] { SeenNotify.parse(monitor.output) }
    /// What was seen, and what the agent said: for a failure's message.
    var diagnostics: String { "\(seen); agent: \(agent.errors)" }

    /// Waits until a Notify whose summary starts with `prefix` was seen after `after`.
    func waitFor(_ prefix: String, after: Date = .distantPast, timeout: TimeInterval = 15) -> SeenNotify? {
      let deadline = Date().addingTimeInterval(timeout)
      repeat {
        // Only a call dbus-monitor has written out to its hints (the urgency comes after the body):
        // one caught half-written read as urgency -1.
        if let found = seen.first(where: { $0.summary.hasPrefix(prefix) && $0.time >= after && $0.urgency >= 0 }) {
          return found
        }
        usleep(20_000)
      } while Date() < deadline
      return nil
    }

    deinit {
      agent.stop()
      monitor.stop(SIGKILL)
    }
  }

  @Test(
    "a 3 s session and a 10 s pause: warnings 2 s and 1 s before the end, the urgent stop within 1 s of it, a refusal after an up and a gate check in the pause; dunst shows one"
  )
  func sessionWindow() throws {
    let t = try EnforcedTunnel("ntfy")
    let desktop = try Agent("ntfy", db: t.db, ["--warn-before", "2s,1s"])
    try t.up()
    // Link-down: what is measured is the agent, not how long finding a manager takes on a loaded
    // machine (EnforceKernelTests and the manager tests measure the takedown).
    let enforcer = try t.startEnforcer(["--action", "link-down"], session: "3s", pause: "10s")
    let session = try t.openedWindow()
    let ends = try #require(instant(session["session_ends_at"]))
    let pauseEnds = try #require(instant(session["pause_ends_at"]))
    let first = try #require(desktop.waitFor("VPN session ends in 2 s"), "no first warning: \(desktop.diagnostics)")
    let second = try #require(desktop.waitFor("VPN session ends in 1 s"), "no second warning: \(desktop.diagnostics)")
    let stop = try #require(desktop.waitFor("VPN disconnected: free session over"), "no stop: \(desktop.diagnostics)")
    // The warnings come when they are due (their timer), before the deadline; the stop when the
    // enforcer records it.
    let warned = (ends.timeIntervalSince(first.time), ends.timeIntervalSince(second.time))
    #expect(warned.0 > 1.5 && warned.0 <= 2.05, "first warning \(warned.0) s before the end")
    #expect(warned.1 > 0.5 && warned.1 <= 1.05, "second warning \(warned.1) s before the end")
    let late = stop.time.timeIntervalSince(ends)
    #expect(late >= 0 && late < 1.0, "stop notice \(late) s after the deadline")
    #expect(stop.urgency == 2)
    #expect(first.urgency == 1)
    #expect(stop.body.contains("The next session can start at "), "\(stop.body)")
    #expect(first.body.contains("tun9 is disconnected then"), "\(first.body)")
    // In the pause: brought up by hand (the enforcer undoes it), then the gate asked.
    let up = Date()
    try t.up()
    let undone = try #require(
      desktop.waitFor("VPN refused: the free plan's pause ends at ", after: up),
      "no refusal after the up: \(desktop.diagnostics)")
    #expect(undone.body.contains("taken down at once by the enforcer"), "\(undone.body)")
    let checked = Date()
    let gate = try t.ns.vpnstat("session", "check", "--db", t.db)
    #expect(gate.status == 75)
    #expect(!gate.errors.contains("not recorded"), "\(gate.errors)")
    let refused = try #require(
      desktop.waitFor("VPN refused: the free plan's pause ends at ", after: checked),
      "no refusal after the check: \(desktop.diagnostics)")
    #expect(refused.body.contains("by the connect gate"), "\(refused.body)")
    #expect(refused.summary.contains("(in "), "\(refused.summary)")
    // session --json shows it too.
    let last = try #require(try t.session()["last_refusal"] as? [String: Any])
    #expect(last["by"] as? String == "gate")
    #expect(instant(last["until"]).map { abs($0.timeIntervalSince(pauseEnds)) < 0.01 } == true)
    // One notification on the screen: each replaced the one before.
    let seen = desktop.seen
    #expect(seen.count == 5, "\(seen)")
    #expect(
      Set(seen.dropFirst().map(\.replaces)).count == 1 && seen.dropFirst().allSatisfy { $0.replaces != 0 }, "\(seen)")
    try desktop.desktop.waitUntilDisplayed(1)
    #expect(enforcer.stop() == 0)
    print(
      "notify: warnings \(String(format: "%.3f", warned.0)) s and \(String(format: "%.3f", warned.1)) s before the end;"
        + " stop notice \(String(format: "%.3f", late)) s after it; refusal \(String(format: "%.3f", undone.time.timeIntervalSince(up))) s after the up,"
        + " \(String(format: "%.3f", refused.time.timeIntervalSince(checked))) s after the check")
  }

  @Test("a 5 MB cap: the 80 % and 100 % notices as real bytes cross them, then the stop; the 80 % one is not urgent")
  func dataCap() throws {
    let t = try EnforcedTunnel("ncap")
    try t.ns.ip("addr", "add", "10.214.0.1", "peer", "10.214.0.2", "dev", t.tunnel)
    let plan = try t.ns.vpnstat("plan", "free", "--data-cap", "5MB", "--per", "day", "--db", t.db)
    try #require(plan.status == 0, "\(plan.errors)")
    let desktop = try Agent("ncap", db: t.db, [])
    try t.up()
    // The agent reads what the enforcer books: it saves at every sample (each second) here, and
    // the traffic (about 0.65 MB/s both ways) crosses 80 % and 100 % in different seconds.
    let enforcer = try t.startEnforcer(
      ["--interval", "1s", "--save-interval", "500ms", "--action", "link-down"], session: "10m", pause: "10m")
    let base = try t.ns.kernelCounters(t.tunnel)
    let sender = try t.ns.peer("udp-send", "10.214.0.2", "9", "100000", "972", "--gap-us", "3000")
    defer { sender.stop() }
    let eighty = try #require(
      desktop.waitFor("VPN data cap: 80 % used", timeout: 30), "no 80 %: \(desktop.diagnostics)")
    let atEighty = try t.ns.kernelCounters(t.tunnel)
    let reached = try #require(desktop.waitFor("VPN data cap reached", timeout: 30), "no 100 %: \(desktop.diagnostics)")
    let stop = try #require(desktop.waitFor("VPN disconnected: data cap reached"), "no stop: \(desktop.diagnostics)")
    let moved = (atEighty.rxBytes + atEighty.txBytes) - (base.rxBytes + base.txBytes)
    #expect(moved >= 4_000_000, "80 % told after only \(moved) bytes")
    #expect(eighty.urgency == 1 && reached.urgency == 2 && stop.urgency == 2)
    #expect(eighty.body.contains("≈ ") && eighty.body.contains("of 5.00 MB this day ("), "\(eighty.body)")
    #expect(reached.body.contains("Connecting is refused until the day rolls over"), "\(reached.body)")
    // The cap's notices replace each other; the stop has its own.
    #expect(reached.replaces != 0 && stop.replaces != reached.replaces, "\(desktop.diagnostics)")
    #expect(enforcer.stop() == 0)
    print(
      "notify: data cap 80 % at \(String(format: "%.3f", eighty.time.timeIntervalSince1970)), 100 % \(String(format: "%.3f", reached.time.timeIntervalSince(eighty.time))) s later"
    )
  }

  @Test("without a session bus, or with one that has no notification server, notify exits 69 and says why")
  func noBus() throws {
    let directory = try TemporaryDirectory("nobus")
    let result = try run(
      Built.vpnstat, ["notify", "--db", directory.file("v.db")],
      environment: ["DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": directory.path])
    #expect(result.status == 69)
    #expect(result.errors.contains("vpnstat notify runs in a desktop session"), "\(result.errors)")
    let desktop = try PrivateDesktop("noserver", notificationServer: false)
    let alone = try desktop.run(Built.vpnstat, ["notify", "--db", directory.file("v.db")])
    #expect(alone.status == 69)
    #expect(alone.errors.contains("no notification server on the session bus"), "\(alone.errors)")
  }

  @Test("the gate run as a user refuses and says it could not record the refusal; root's gate records it")
  func gateAsUser() throws {
    let directory = try TemporaryDirectory("gateuser")
    let db = directory.file("v.db")
    do {
      let store = try #require(try Store.open(StoreLocation(path: db), intent: .write))
      try store.updateSession { record in
        record.window = SessionWindow.open(
          at: SystemTimeSource().now().wall - .seconds(660),
          lengths: SessionLengths(session: .seconds(600), pause: .seconds(600)))
      }
    }
    let user = try runAsNobody(Built.vpnstat, ["session", "check", "--db", db])
    #expect(user.status == 75)
    #expect(user.errors.contains("free plan pause: you can reconnect in "), "\(user.errors)")
    #expect(user.errors.contains("the refusal is not recorded"), "\(user.errors)")
    let before = try run(Built.vpnstat, ["session", "--json", "--db", db])
    #expect(before.output.contains("\"last_refusal\":null"), "\(before.output)")
    let root = try run(Built.vpnstat, ["session", "check", "--caller", "dispatcher", "--db", db])
    #expect(root.status == 75)
    #expect(!root.errors.contains("not recorded"), "\(root.errors)")
    let after = try run(Built.vpnstat, ["session", "--json", "--db", db])
    let object = try JSONSerialization.jsonObject(with: after.stdout) as? [String: Any]
    let refusal = try #require((object?["session"] as? [String: Any])?["last_refusal"] as? [String: Any])
    #expect(refusal["by"] as? String == "dispatcher")
    #expect(refusal["reason"] as? String == "pause")
    let text = try run(Built.vpnstat, ["session", "--db", db])
    #expect(text.output.contains("last refusal: pause at "), "\(text.output)")
  }
}
