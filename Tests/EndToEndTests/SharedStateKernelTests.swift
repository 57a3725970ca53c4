import Foundation
import Testing

@testable import VPNStatTestSupport

/// The system's state for everyone, for real: root's enforcer keeps the pause in the system's
/// database, and `nobody`, with no `--db` anywhere, sees it. `/var/lib` is the test's own
/// directory in a private mount namespace, so the machine's `/var/lib/vpnstat` is never touched.
@Suite(.enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
struct SharedStateKernelTests {
  /// A mount namespace of the test's own, inside the network namespace `ns` (with its /sys, as
  /// `ip netns exec` mounts it), where `/var/lib` is `directory/lib`; commands join both through
  /// nsenter and the holder's namespaces, so nothing needs to find the namespace by name again.
  final class PrivateVarLib: @unchecked Sendable {
    let directory: TemporaryDirectory
    let holder: BackgroundProcess

    init(_ directory: TemporaryDirectory, in ns: TestNamespace) throws {
      self.directory = directory
      let lib = directory.file("lib")
      try FileManager.default.createDirectory(atPath: lib, withIntermediateDirectories: true)
      chmod(lib, 0o755)
      holder = try ns.start(
        "/usr/bin/unshare",
        [
          "--mount", "--propagation", "private", "/bin/sh", "-c",
          "mount --bind \"$0\" /var/lib && echo ready && exec sleep 600", lib,
        ])
      try holder.waitFor("ready")
    }

    /// `command` inside both namespaces, as root or (through setpriv) as nobody. `ip netns exec`,
    /// `unshare` and the shell each exec the next: the holder's pid is the one in both namespaces.
    func command(_ command: [String], asNobody: Bool = false) -> [String] {
      let user = asNobody ? ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] : []
      // --root: entering a mount namespace moves a process to that namespace's root, which in a
      // chroot (fresh-ci) is not the holder's.
      let pid = holder.pid
      return ["--root=/proc/\(pid)/root", "--mount=/proc/\(pid)/ns/mnt", "--net=/proc/\(pid)/ns/net", "--"] + user
        + command
    }

    deinit { holder.stop(SIGKILL) }
  }

  /// No database named anywhere: no --db, no VPNSTAT_DB, no configuration file.
  static let environment = [
    "VPNSTAT_DB": "", "VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config", "HOME": "/nonexistent",
  ]

  @Test(
    "as nobody, with root's enforcer holding a pause in the system's database: the gate says 75, session paused, watch counts down"
  )
  func nobodySeesRootsPause() throws {
    try Tool.require("/usr/bin/nsenter")
    try Tool.require("/usr/bin/unshare")
    let ns = try TestNamespace("shared")
    let owner = try ns.peer("tun", "tun9", "--echo")
    defer { owner.stop() }
    try owner.waitFor("ready")
    let directory = try TemporaryDirectory("varlib")
    let varLib = try PrivateVarLib(directory, in: ns)
    let vpnstat = try vpnstatForOtherUsers(in: directory)

    // Root's enforcer, on the system's database (the default), with a 1-second session.
    let enforcer = try BackgroundProcess(
      "/usr/bin/nsenter",
      varLib.command([vpnstat, "enforce", "tun9", "--session-length", "1s", "--pause-length", "10m"]),
      environment: Self.environment)
    defer { enforcer.stop() }
    try enforcer.waitForError("enforcing the free plan")
    try ns.ip("link", "set", "tun9", "up")
    try enforcer.waitForError("free session over: disconnected", timeout: 20)
    #expect(FileManager.default.fileExists(atPath: directory.file("lib/vpnstat/vpnstat.db")))

    func asNobody(_ arguments: [String]) throws -> CommandResult {
      try run(
        "/usr/bin/nsenter", varLib.command([vpnstat] + arguments, asNobody: true), environment: Self.environment)
    }
    let gate = try asNobody(["session", "check"])
    #expect(gate.status == 75, "\(gate.output)\(gate.errors)")
    #expect(gate.errors.contains("free plan pause: you can reconnect in "), "\(gate.errors)")
    let session = try asNobody(["session", "--json"])
    #expect(session.status == 0, "\(session.errors)")
    let object = try JSONSerialization.jsonObject(with: session.stdout) as? [String: Any]
    let state = (object?["session"] as? [String: Any])?["state"] as? String
    #expect(state == "paused", "\(session.output)")
    #expect(session.errors.isEmpty, "warnings for a reader of the system's database: \(session.errors)")
    let watch = try asNobody(["watch", "--count", "1", "--interval", "100ms"])
    #expect(watch.status == 0, "\(watch.errors)")
    #expect(watch.output.contains("free plan · paused · reconnect in "), "\(watch.output)")
    #expect(watch.errors.isEmpty, "\(watch.errors)")
    // Reading is all nobody may do there: a writer says why it cannot and changes nothing.
    let plan = try asNobody(["plan", "premium"])
    #expect(plan.status == 77, "\(plan.errors)")
    #expect(plan.errors.contains("/var/lib/vpnstat/vpnstat.db") && plan.errors.contains("--db"), "\(plan.errors)")
    #expect(try asNobody(["session", "check"]).status == 75)
  }

  @Test(
    "as nobody and as root, one after the other with a recorder running: the same figures in status, report, history, session and alert"
  )
  func nobodyReadsRootsFigures() throws {
    try Tool.require("/usr/bin/nsenter")
    try Tool.require("/usr/bin/unshare")
    let ns = try TestNamespace("figures")
    let owner = try ns.echoTunnel("tun44", local: "169.254.44.1", peer: "169.254.44.2")
    defer { owner.stop() }
    let directory = try TemporaryDirectory("figures")
    let varLib = try PrivateVarLib(directory, in: ns)
    let vpnstat = try vpnstatForOtherUsers(in: directory)
    // Root's recorder on the system's database, saving every second; traffic booked through it.
    let recorder = try BackgroundProcess(
      "/usr/bin/nsenter",
      varLib.command([vpnstat, "record", "--interval", "200ms", "--save-interval", "1s"]),
      environment: Self.environment)
    defer { recorder.stop() }
    let db = directory.file("lib/vpnstat/vpnstat.db")
    _ = try waitUntil(timeout: 10) { try storedEntry(db, "tun44") != nil }
    let first = try #require(try storedEntry(db, "tun44"), "the recorder saved nothing")
    try ns.peerRun("udp-send", "169.254.44.2", "9744", "200", "700", "--gap-us", "200")
    // Saved (every second) with everything the kernel counted.
    let sent = try ns.settledCounters("tun44").txBytes - first.baseline.counters.txBytes
    let saved = try waitUntil(timeout: 10) { try storedEntry(db, "tun44")?.totals.traffic.txBytes == sent }
    #expect(saved != nil, "the recorder did not save the traffic: \(recorder.errors)")
    func run(_ arguments: [String], asNobody: Bool) throws -> CommandResult {
      try VPNStatTestSupport.run(
        "/usr/bin/nsenter", varLib.command([vpnstat] + arguments, asNobody: asNobody), environment: Self.environment)
    }
    /// The output with what is not a figure of the database taken out: when it was made (and
    /// what follows from the moment: a period's elapsed time, its projection, rates between
    /// samples a few milliseconds apart), an empty class's first sighting (now), and who manages
    /// a tunnel (root may look at other users' processes, nobody may not). JSON compared as
    /// values, text line by line.
    func figures(_ output: String) -> String {
      if let object = try? JSONSerialization.jsonObject(with: Data(output.utf8)) {
        let moments: Set<String> = ["generated_at", "now", "elapsed_seconds", "manager"]
        func strip(_ value: Any) -> Any {
          if var dictionary = value as? [String: Any] {
            if (dictionary["interfaces"] as? NSNumber)?.intValue == 0 { dictionary["first_seen_at"] = nil }
            return dictionary.filter {
              !moments.contains($0.key) && !$0.key.hasSuffix("_per_second") && !$0.key.hasPrefix("projected_")
            }.mapValues(strip)
          }
          if let array = value as? [Any] { return array.map(strip) }
          return value
        }
        let data = try? JSONSerialization.data(withJSONObject: strip(object), options: [.sortedKeys])
        return data.map { String(decoding: $0, as: UTF8.self) } ?? output
      }
      return output.split(separator: "\n").filter { !$0.contains("saved at") && !$0.contains("/s") }
        .joined(separator: "\n")
    }
    let commands: [[String]] = [
      ["status", "--json", "-i", "tun44"], ["report"], ["history", "--json", "--hours", "2"], ["session", "--json"],
      ["alert", "-i", "tun44", "--limit", "1GB"],
    ]
    for command in commands {
      // The recorder saves every second: a save may fall between the two, so each pair is read
      // again until both come from one save (the figures are then equal, or the test fails).
      var pair: (root: CommandResult, nobody: CommandResult)?
      _ = try waitUntil(timeout: 10) {
        let root = try run(command, asNobody: false)
        let nobody = try run(command, asNobody: true)
        pair = (root, nobody)
        return figures(root.output) == figures(nobody.output)
      }
      let (root, nobody) = try #require(pair)
      #expect(root.status == nobody.status, "\(command): \(root.status) \(nobody.status) \(nobody.errors)")
      #expect(nobody.errors.isEmpty, "\(command): \(nobody.errors)")
      #expect(
        figures(root.output) == figures(nobody.output), "\(command)\nroot:\n\(root.output)\nnobody:\n\(nobody.output)")
      #expect(!figures(nobody.output).isEmpty)
    }
    // Traffic was booked, and nobody sees it.
    let status = try run(["status", "--json", "-i", "tun44"], asNobody: true)
    let object = try JSONSerialization.jsonObject(with: status.stdout) as? [String: Any]
    let interfaces = object?["interfaces"] as? [[String: Any]] ?? []
    #expect(((interfaces.first?["total_tx_bytes"] as? NSNumber)?.intValue ?? 0) > 100_000, "\(status.output)")
  }
}
