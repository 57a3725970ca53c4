import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatTestSupport

/// A tmux server of one test's own, holding one window: how the tests read a full-screen program.
final class TmuxScreen: @unchecked Sendable {
  let socket = "vpnstat-test-\(getpid())-\(UUID().uuidString.prefix(6))"
  /// Where the server and the first client write their logs (`-v`): what a server that died at
  /// its start said, for the failure's message.
  let logs: TemporaryDirectory

  init(_ command: String, columns: Int = 120, rows: Int = 40) throws {
    try Tool.require("/usr/bin/tmux")
    logs = try TemporaryDirectory("tmux")
    let shell = "\(command); echo EXITED $?; stty -a; exec sleep 600"
    let result = try run(
      "/bin/sh",
      [
        "-c", "cd \"$0\" && exec /usr/bin/tmux -v \"$@\"", logs.path, "-L", socket, "-f", "/dev/null", "new-session",
        "-d", "-s", "w", "-x", "\(columns)", "-y", "\(rows)", shell,
      ],
      environment: ["TERM": "xterm-256color"])
    if result.status != 0 {
      let names = (try? FileManager.default.contentsOfDirectory(atPath: logs.path)) ?? []
      let said = names.sorted().map { name in
        "\(name):\n" + String(String(decoding: contents(logs.file(name)) ?? Data(), as: UTF8.self).suffix(1500))
      }
      throw TestSetupError("tmux: \(result.errors)\n" + said.joined(separator: "\n"))
    }
  }

  func capture() -> String {
    (try? run("/usr/bin/tmux", ["-L", socket, "capture-pane", "-p", "-t", "w"]).output) ?? ""
  }

  func send(_ keys: String) {
    _ = try? run("/usr/bin/tmux", ["-L", socket, "send-keys", "-t", "w", keys])
  }

  func format(_ variable: String) -> String {
    // A loaded machine's tmux once answered nothing at all (the fresh-machine run): asked again
    // until it answers, for a few seconds.
    var answer = ""
    _ = waitUntil(timeout: 3, every: 0.1) {
      answer = ((try? run("/usr/bin/tmux", ["-L", socket, "display-message", "-p", "-t", "w", variable]).output) ?? "")
        .trimmingCharacters(in: .whitespacesAndNewlines)
      return !answer.isEmpty
    }
    return answer
  }

  /// Waits until the screen satisfies `condition`; returns that screen.
  @discardableResult
  func waitFor(timeout: TimeInterval = 10, _ what: String, _ condition: (String) -> Bool) throws -> String {
    let deadline = Date().addingTimeInterval(timeout)
    var screen = ""
    while Date() < deadline {
      screen = capture()
      if condition(screen) { return screen }
      usleep(50_000)
    }
    throw TestSetupError("screen never showed \(what):\n\(screen)")
  }

  deinit { _ = try? run("/usr/bin/tmux", ["-L", socket, "kill-server"]) }
}

/// The line of the screen that shows `name` as an interface row.
func row(_ screen: String, _ name: String) -> String? {
  screen.split(separator: "\n").map(String.init).first { $0.hasPrefix("  \(name) ") }
}

@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct WatchKernelTests {
  @Test(
    "under tmux: the tun under tunnel with a moving rate, the countdown ticking, totals kept across a recreation, and the terminal restored after q"
  )
  func liveScreen() throws {
    let t = try EnforcedTunnel("wat")
    try t.ns.ip("addr", "add", "169.254.55.1", "peer", "169.254.55.2", "dev", t.tunnel)
    try t.up()
    let enforcer = try t.startEnforcer(session: "300s", pause: "60s")
    defer { enforcer.stop() }
    let sender = try t.ns.start(
      Built.testPeer, ["udp-send", "169.254.55.2", "9700", "100000", "1000", "--gap-us", "400"])
    defer { sender.stop() }
    let screen = try TmuxScreen(
      "ip netns exec \(t.ns.name) \(Built.vpnstat) watch --db \(t.db) --interval 500ms --session-length 300s --pause-length 60s"
    )
    let first = try screen.waitFor("the tun with a rate") { screen in
      guard let line = row(screen, t.tunnel) else { return false }
      return line.contains("KiB/s") || line.contains("MiB/s")
    }
    #expect(first.contains("tunnel (1)"))
    #expect(first.contains("≈ estimates"))
    #expect(first.contains("session: free plan · active"))
    // The countdown ticks: the "m:ss left" figure changes from one screen to the next.
    func countdown(_ screen: String) -> String? {
      screen.firstMatch(of: /active · ([0-9]+:[0-9]{2}) left/).map { String($0.1) }
    }
    let before = try #require(countdown(first))
    let later = try screen.waitFor(timeout: 4, "the countdown moving") {
      countdown($0) != nil && countdown($0) != before
    }
    #expect(countdown(later) != before)
    // The rate moves while bytes flow: the tun's row changes between refreshes.
    let rowBefore = row(later, t.tunnel)
    try screen.waitFor(timeout: 3, "the rate changing") { row($0, t.tunnel) != rowBefore }

    // Recreate the tun while watching: it comes back with its totals kept and a reset counted.
    sender.stop()
    _ = try t.ns.settledCounters(t.tunnel)
    // watch only reads the ledger; the enforcer keeps it (and books the deleted tun's last bytes).
    func totals() throws -> [String: Any]? {
      interface(try parseStatus(t.ns.vpnstat("status", "--json", "--db", t.db, "-i", t.tunnel)), named: t.tunnel)
    }
    let totalBefore = try #require(uint(try totals()?["total_tx_bytes"]))
    #expect(totalBefore > 100_000)
    t.owner?.stop()
    try screen.waitFor(timeout: 5, "the tun gone") { row($0, t.tunnel) == nil }
    try t.createTunnel()
    try t.ns.ip("addr", "add", "169.254.55.1", "peer", "169.254.55.2", "dev", t.tunnel)
    try t.up()
    try t.ns.peerRun("udp-send", "169.254.55.2", "9700", "200", "1000", "--gap-us", "200")
    let back = try screen.waitFor(timeout: 5, "the tun back with one reset") { screen in
      guard let line = row(screen, t.tunnel) else { return false }
      return line.split(separator: " ").contains("1")
    }
    #expect(row(back, t.tunnel) != nil)
    let totalAfter = try #require(try totals())
    #expect(try #require(uint(totalAfter["total_tx_bytes"])) > totalBefore)
    #expect(try #require(uint(totalAfter["resets"])) >= 1)

    // q: the program ends and the terminal is as it was.
    #expect(screen.format("#{alternate_on}") == "1")
    screen.send("q")
    let after = try screen.waitFor(timeout: 5, "the shell back") { $0.contains("EXITED 0") && $0.contains("icanon") }
    #expect(screen.format("#{alternate_on}") == "0")
    #expect(screen.format("#{cursor_flag}") == "1")
    #expect(after.contains(" icanon") && after.contains(" echo"), "terminal modes not restored:\n\(after)")
  }

  @Test("Ctrl-C and SIGTERM restore the terminal too")
  func signalsRestore() throws {
    let screen = try TmuxScreen("\(Built.vpnstat) watch --interval 200ms --only loopback")
    try screen.waitFor("the view") { $0.contains("loopback") && $0.contains("≈ estimates") }
    screen.send("C-c")
    let after = try screen.waitFor(timeout: 5, "the shell back") { $0.contains("EXITED") && $0.contains("icanon") }
    #expect(screen.format("#{alternate_on}") == "0")
    #expect(after.contains(" icanon"))

    let marker = "\(Int.random(in: 200...999))ms"
    let terminated = try TmuxScreen("\(Built.vpnstat) watch --interval \(marker) --only loopback")
    try terminated.waitFor("the view") { $0.contains("loopback") }
    #expect(terminated.format("#{alternate_on}") == "1")
    // The pane runs sh, whose child is vpnstat: signal only that child.
    _ = try run("/usr/bin/pkill", ["-TERM", "-P", terminated.format("#{pane_pid}")])
    let back = try terminated.waitFor(timeout: 5, "the shell back") { $0.contains("EXITED") && $0.contains("icanon") }
    #expect(terminated.format("#{alternate_on}") == "0")
    #expect(terminated.format("#{cursor_flag}") == "1")
    #expect(back.contains(" icanon") && back.contains(" echo"))
  }

  @Test("watch --json --count 3: three valid JSON lines, each written as it is made")
  func jsonStream() throws {
    let ns = try TestNamespace("wjson")
    let child = try ChildProcess(
      "/usr/sbin/ip",
      ["netns", "exec", ns.name, Built.vpnstat, "watch", "--json", "--count", "3", "--interval", "700ms"])
    // Written as made, not when the program ends: the first line is there while two intervals
    // are still to come.
    let deadline = Date().addingTimeInterval(10)
    while child.output.split(separator: "\n").isEmpty && Date() < deadline { usleep(5_000) }
    #expect(!child.output.isEmpty, "no line within 10 s")
    #expect(child.isRunning, "the first line came only when the program ended")
    #expect(child.wait() == 0)
    let lines = child.output.split(separator: "\n")
    #expect(lines.count == 3)
    var made: [Date] = []
    for line in lines {
      let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      #expect(object?["schema_version"] as? Int == 1)
      #expect(interface(object ?? [:], named: "lo")?["rx_bytes_per_second"] is NSNumber)
      if let at = instant(object?["generated_at"]) { made.append(at) }
    }
    // One an interval, by the program's own clock (not when this test happened to read them).
    #expect(made.count == 3)
    if made.count == 3 {
      #expect(made[1].timeIntervalSince(made[0]) > 0.5, "\(made)")
      #expect(made[2].timeIntervalSince(made[1]) > 0.5, "\(made)")
    }
  }

  @Test("piped: plain lines per interface per interval, no escape codes, --count stops it")
  func plainStream() throws {
    let ns = try TestNamespace("wplain")
    try ns.ip("link", "add", "ifb3", "type", "ifb")
    let result = try ns.vpnstat("watch", "--count", "2", "--interval", "200ms")
    #expect(result.status == 0)
    #expect(!result.stdout.contains(0x1B))
    let lines = result.output.split(separator: "\n")
    #expect(lines.count == 4)
    #expect(lines.allSatisfy { $0.contains(" lo ") || $0.contains(" ifb3 ") })
  }
}
