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
}
