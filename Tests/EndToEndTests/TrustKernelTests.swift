import Foundation
import Glibc
import Testing

@testable import VPNStatTestSupport

// Issue 19, "Root never acts for another user": what an unprivileged user controls — a process's
// name and arguments, a tun it holds (made in a namespace of its own), a file or directory it can
// write, a name it chose — never decides what root stops, signals, runs or believes. Each test
// stages one attack that worked against vpnstat run as root, for real (NetworkManager, OpenVPN,
// wg-quick and wireguard-go in namespaces, processes run as nobody), and checks that root acted
// on nothing of the attacker's.

// MARK: - The attacker's means

/// nobody's uid and nogroup's gid, for files a test plants as if nobody had written them.
func nobodyOwner() throws -> (uid: uid_t, gid: gid_t) {
  guard let user = getpwnam("nobody") else { throw TestSetupError("no user nobody") }
  let group = getgrnam("nogroup")
  return (user.pointee.pw_uid, group?.pointee.gr_gid ?? user.pointee.pw_gid)
}

/// Makes `path` nobody's, as if nobody had created it.
func giveToNobody(_ path: String) throws {
  let owner = try nobodyOwner()
  guard chown(path, owner.uid, owner.gid) == 0 else {
    throw TestSetupError("chown \(path): \(String(cString: strerror(errno)))")
  }
}

extension TestNamespace {
  /// Starts a program as nobody inside the namespace (`ip netns exec` execs setpriv, which
  /// execs the program: the pid is the program's).
  func startAsNobody(_ executable: String, _ arguments: [String]) throws -> BackgroundProcess {
    try Tool.require("/usr/bin/setpriv")
    return try start(
      "/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", executable] + arguments,
      environment: ["HOME": "/nonexistent"])
  }

  /// Whether the device is gone or its administrative UP flag is cleared: no traffic can use it.
  func isDown(_ device: String) -> Bool {
    guard hasLink(device) else { return true }
    return (try? linkDetails(device).flags.contains("UP")) == false
  }

  /// The IPv4 addresses on a device (`ip -j addr show dev DEV`).
  func addresses(_ device: String) -> [String] {
    guard let shown = try? ip("-4", "-j", "addr", "show", "dev", device),
      let links = try? JSONSerialization.jsonObject(with: shown.stdout) as? [[String: Any]]
    else { return [] }
    return links.flatMap { ($0["addr_info"] as? [[String: Any]] ?? []).compactMap { $0["local"] as? String } }
  }
}

/// The test peer's arguments that make it claim to be an OpenVPN answering on `socket`: its comm
/// becomes `openvpn` and its cmdline holds `--management SOCKET unix`. With a socket named
/// `…/nm-openvpn-UUID` it claims to be NetworkManager's OpenVPN plugin running connection UUID.
func openVPNClaim(managementSocket socket: String) -> [String] {
  ["--comm", "openvpn", "--management", socket, "unix"]
}

// MARK: - Fake managers that record what they were asked

/// Stand-ins for `systemctl` and `wg-quick` that record every argv (one block per call in the
/// file `$FAKE_LOG`: `CALL COUNT PROGRAM`, then each argument on a line) and answer like a
/// systemd whose units are all loaded and active but that refuses every start and stop (and a
/// wg-quick that fails), so a stop falls back to link-down at once. vpnstat runs with them
/// bound over /usr/bin/systemctl and /usr/bin/wg-quick and first in PATH, with a tmpfs on /run
/// holding /run/systemd/system (so it believes systemd runs), all in a mount namespace of its
/// own: the machine's /run and programs are never touched.
final class RecordingManagers: @unchecked Sendable {
  let directory: TemporaryDirectory
  var bin: String { directory.file("bin") }

  init(_ label: String) throws {
    directory = try TemporaryDirectory(label)
    try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
    let record = """
      #!/bin/sh
      # Recorded as one write: two vpnstat processes may run these at once.
      entry=$(printf 'CALL %s %s\\n' "$#" "${0##*/}"; for a in "$@"; do printf '%s\\n' "$a"; done)
      printf '%s\\n' "$entry" >> "${FAKE_LOG:-/dev/null}"

      """
    let systemctl =
      record + """
        verb=
        for a in "$@"; do
          case "$a" in is-active|is-enabled|show|start|stop|restart) verb=$a; break;; esac
        done
        case "$verb" in
          is-active) for a in "$@"; do case "$a" in is-active|--|-*) ;; *) echo active;; esac; done; exit 0;;
          is-enabled) for a in "$@"; do case "$a" in is-enabled|--|-*) ;; *) echo disabled;; esac; done; exit 1;;
          show) echo loaded; exit 0;;
          *) echo "fake systemctl: refusing $verb" >&2; exit 1;;
        esac

        """
    let wgQuick = record + "echo 'fake wg-quick: refusing' >&2\nexit 1\n"
    for (name, text) in [("systemctl", systemctl), ("wg-quick", wgQuick)] {
      try writeExecutable(Data(text.utf8), to: bin + "/" + name)
    }
  }

  /// The mount namespace's set-up, then `exec "$@"`.
  private static let setup = """
    set -e
    mount -t tmpfs fake-run /run
    mkdir -p /run/systemd/system
    for program in systemctl wg-quick; do
      if [ -e "/usr/bin/$program" ]; then mount --bind "$FAKE_BIN/$program" "/usr/bin/$program"; fi
    done
    exec "$@"
    """

  private func wrapped(_ arguments: [String]) -> [String] {
    ["-m", "--propagation", "private", "/bin/sh", "-c", Self.setup, "sh", Built.vpnstat] + arguments
  }

  private func environment(log: String) -> [String: String] {
    ["PATH": bin + ":/usr/sbin:/usr/bin:/sbin:/bin", "FAKE_LOG": log, "FAKE_BIN": bin]
  }

  /// Runs vpnstat in `ns` with the fakes; their calls go to `log`.
  func vpnstat(in ns: TestNamespace, log: String, _ arguments: [String]) throws -> CommandResult {
    try ns.run("/usr/bin/unshare", wrapped(arguments), environment: environment(log: log), timeout: 30)
  }

  /// Starts vpnstat (an enforcer) in `ns` with the fakes.
  func startVpnstat(in ns: TestNamespace, log: String, _ arguments: [String]) throws -> BackgroundProcess {
    try ns.start("/usr/bin/unshare", wrapped(arguments), environment: environment(log: log))
  }

  /// The calls recorded in `log`: the program's name, then its arguments.
  static func calls(_ log: String) -> [[String]] {
    let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)[...]
    var calls: [[String]] = []
    while let line = lines.popFirst() {
      let fields = line.split(separator: " ")
      guard fields.count == 3, fields[0] == "CALL", let count = Int(fields[1]) else { continue }
      calls.append([String(fields[2])] + lines.prefix(count))
      lines = lines.dropFirst(count)
    }
    return calls
  }

  /// The calls (as one line each) in which an argument that came from a name reached the
  /// program as an option: before its first `--`, starting with `-`.
  static func optionsFromNames(_ calls: [[String]], fromName: (String) -> Bool) -> [String] {
    calls.flatMap { call -> [String] in
      let arguments = call.dropFirst()
      let options = arguments.prefix { $0 != "--" }
      return options.filter { $0.hasPrefix("-") && fromName($0) }.map { _ in call.joined(separator: " ") }
    }
  }
}

// MARK: - The tests

@Suite(.enabled(if: Privilege.canRunAsNobody, Privilege.nobodyReason))
struct TrustKernelTests {
  // 1. A holder's arguments choose the NetworkManager connection root takes down.

  @Test(
    "nobody's process named openvpn holding nobody's tun with --management /tmp/nm-openvpn-UUID of an unrelated connection: root's disconnect and the enforcer's deadline leave that connection activated with its address, and take the tun itself down"
  )
  func holderArgumentsChooseNoConnection() throws {
    let nm = try NetworkManagerNamespace("tnm")
    let files = try TemporaryDirectory("tnm")
    let peer = try builtForOtherUsers(Built.testPeer, in: files)
    // The unrelated connection: ethernet on a veth NetworkManager manages, a static address.
    try nm.ns.ip("link", "add", "te0", "type", "veth", "peer", "name", "te1")
    try nm.ns.ip("link", "set", "te1", "up")
    try nm.nmcliChecked(
      "connection", "add", "type", "ethernet", "ifname", "te0", "con-name", "wired", "ipv4.method", "manual",
      "ipv4.addresses", "169.254.131.1/30", "ipv6.method", "disabled", "connection.autoconnect", "no")
    try nm.nmcliChecked("connection", "up", "wired")
    let wired = try nm.nmcliChecked("-g", "connection.uuid", "connection", "show", "wired").output
      .trimmingCharacters(in: .whitespacesAndNewlines)
    func wiredIntact() -> Bool {
      let active = (try? nm.activeConnections().contains { $0.uuid == wired && $0.state == "activated" }) ?? false
      return active && nm.ns.addresses("te0").contains("169.254.131.1")
    }
    try #require(wiredIntact(), "the ethernet connection did not come up")

    // nobody's tun, held by nobody's process that calls itself NetworkManager's OpenVPN plugin
    // running the ethernet connection.
    try nm.ns.ip("tuntap", "add", "mode", "tun", "user", "nobody", "name", "tunU")
    let holder = try nm.ns.startAsNobody(
      peer, ["tun", "tunU"] + openVPNClaim(managementSocket: "/tmp/nm-openvpn-\(wired)"))
    defer { holder.stop(SIGKILL) }
    try holder.waitFor("ready")
    try nm.ns.ip("link", "set", "tunU", "up")

    let stopped = try nm.run(Built.vpnstat, ["disconnect", "tunU", "--db", files.file("d.db"), "--timeout", "3s"])
    #expect(
      wiredIntact(),
      "root's `disconnect tunU` took down the unrelated connection 'wired' (exit \(stopped.status): \(stopped.output) \(stopped.errors))"
    )
    #expect(nm.ns.isDown("tunU"), "tunU is still up after disconnect (\(stopped.status)): \(stopped.errors)")

    // The same at the enforcer's deadline.
    if !wiredIntact() { try nm.nmcliChecked("connection", "up", "wired") }
    try nm.ns.ip("link", "set", "tunU", "up")
    let enforcer = try nm.start(
      Built.vpnstat, ["enforce", "tunU", "--db", files.file("e.db"), "--session-length", "2s", "--pause-length", "60s"])
    defer { enforcer.stop() }
    try enforcer.waitForError("opened a window")
    let down = waitUntil(timeout: 10) { nm.ns.isDown("tunU") || !wiredIntact() }
    #expect(down != nil, "nothing happened at the deadline: \(enforcer.errors)")
    // A stop through a manager (the old code's nmcli) is over within moments: watch for it.
    #expect(
      holdsThroughout(0.5) { wiredIntact() },
      "the enforcer's deadline on tunU took down the unrelated connection 'wired': \(enforcer.errors)")
    _ = waitUntil(timeout: 8) { nm.ns.isDown("tunU") }
    #expect(nm.ns.isDown("tunU"), "tunU stayed up past the deadline: \(enforcer.errors)")
    #expect(enforcer.isRunning, "the enforcer exited: \(enforcer.errors)")
  }

  // 2. The same arguments make root signal any OpenVPN management socket.

  @Test(
    "nobody's process named openvpn holding nobody's tun with --management naming root's OpenVPN's socket (in a 0700 directory): root's disconnect never connects to it, and that OpenVPN keeps running"
  )
  func holderArgumentsSignalNoSocket() throws {
    let pair = try OpenVPNPair("tovs", subnet: 132, device: "tun32")
    let hidden = pair.directory.file("private")
    try FileManager.default.createDirectory(atPath: hidden, withIntermediateDirectories: true)
    chmod(hidden, 0o700)
    let socket = hidden + "/management"
    try pair.startServer()
    try pair.startClient(extra: ["--management", socket, "unix"], management: false)
    let client = try #require(pair.client)
    // Only stat: a connection of the test's own would show in the log checked below.
    try #require(waitUntil(timeout: 10) { FileManager.default.fileExists(atPath: socket) } != nil)
    let reach = try runAsNobody("/usr/bin/test", ["-e", socket])
    try #require(reach.status != 0, "nobody can reach \(socket): the attack would prove nothing")

    let ns = try TestNamespace("tovsu")
    let files = try TemporaryDirectory("tovsu")
    let peer = try builtForOtherUsers(Built.testPeer, in: files)
    try ns.ip("tuntap", "add", "mode", "tun", "user", "nobody", "name", "tunU")
    let holder = try ns.startAsNobody(peer, ["tun", "tunU"] + openVPNClaim(managementSocket: socket))
    defer { holder.stop(SIGKILL) }
    try holder.waitFor("ready")
    try ns.ip("link", "set", "tunU", "up")

    let stopped = try ns.vpnstat("disconnect", "tunU", "--db", files.file("v.db"), "--timeout", "2s")
    // What reached the socket shows in the client's log moments later: watch it for a while.
    #expect(
      holdsThroughout(0.3) { !client.output.contains("MANAGEMENT: Client connected") },
      "root connected to the management socket nobody named: \(client.output.suffix(600))")
    #expect(
      !client.output.contains("MANAGEMENT: CMD"), "root sent a command to it: \(client.output.suffix(600))")
    #expect(
      client.isRunning,
      "root's disconnect tunU stopped the unrelated OpenVPN (exit \(stopped.status): \(stopped.errors))")
    #expect(pair.link.left.hasLink("tun32"))
    #expect(ns.isDown("tunU"), "tunU is still up (\(stopped.status)): \(stopped.errors)")
  }

  // 3. A tun of the same name made in another namespace is not the tunnel.

  enum Impostor: String, CaseIterable, Sendable {
    /// nobody makes tunR in `unshare -Urn` and passes its descriptor (SCM_RIGHTS) to a process of
    /// its own in root's namespace.
    case nobody
    /// root's own process in tunR's namespace holds a tunR made in another namespace.
    case root
  }

  @Test(
    "a tun named tunR made in another namespace and passed by nobody over SCM_RIGHTS to a process in the namespace of root's OpenVPN's tunR: not tunR's holder — status names root's OpenVPN, disconnect stops it",
    .enabled(if: Privilege.canMakeUserNamespaceAsNobody, Privilege.userNamespaceReason))
  func foreignTunPassedByNobody() throws { try foreignTunIsNotTheHolder(.nobody) }

  @Test(
    "a tun named tunR made in another namespace and held by root in the namespace of root's OpenVPN's tunR: not tunR's holder — status names root's OpenVPN, disconnect stops it"
  )
  func foreignTunHeldByRoot() throws { try foreignTunIsNotTheHolder(.root) }

  private func foreignTunIsNotTheHolder(_ impostor: Impostor) throws {
    let subnet = impostor == .nobody ? 133 : 134
    let pair = try OpenVPNPair("tfor\(subnet)", subnet: subnet, device: "tunR")
    try pair.startServer()
    try pair.startClient()
    let client = try #require(pair.client)
    try #require(pair.waitForState("CONNECTED", timeout: 10) != nil, "never CONNECTED: \(client.output)")
    let ns = pair.link.left
    let files = try TemporaryDirectory("tfor\(subnet)")
    let claim = openVPNClaim(managementSocket: "/tmp/nm-openvpn-\(UUID().uuidString.lowercased())")
    var processes: [BackgroundProcess] = []
    defer { for process in processes { process.stop(SIGKILL) } }
    let elsewhere = try TestNamespace("tforx\(subnet)")
    let fake: BackgroundProcess
    switch impostor {
    case .nobody:
      let peer = try builtForOtherUsers(Built.testPeer, in: files)
      let drop = files.file("drop")
      try FileManager.default.createDirectory(atPath: drop, withIntermediateDirectories: true)
      try giveToNobody(drop)
      let socket = drop + "/pass"
      fake = try ns.startAsNobody(peer, ["tun-receive", socket] + claim)
      processes.append(fake)
      try fake.waitFor("listening")
      let sender = try backgroundAsNobody("/usr/bin/unshare", ["-Urn", peer, "tun-pass", "tunR", socket])
      processes.append(sender)
      try sender.waitFor("sent")
      try fake.waitFor("ready")
    case .root:
      fake = try ns.start(Built.testPeer, ["tun-foreign", "tunR", "--netns", "/run/netns/" + elsewhere.name] + claim)
      processes.append(fake)
      try fake.waitFor("ready")
      try #require(elsewhere.hasLink("tunR"), "the impostor's tunR is not in the other namespace")
    }
    // What the old rule saw: a descriptor named tunR held in tunR's namespace.
    let inode = try #require(ns.inode)
    let named = tunHolders(device: "tunR", netnsInode: inode)
    try #require(named.contains { $0.pid == fake.pid }, "the impostor holds no descriptor named tunR: \(named)")
    try #require(named.contains { $0.pid == client.pid }, "root's OpenVPN does not hold tunR: \(named)")

    let db = files.file("v.db")
    let status = try parseStatus(ns.vpnstat("status", "--json", "-i", "tunR", "--db", db))
    let manager = interface(status, named: "tunR")?["manager"] as? [String: Any]
    let evidence = manager?["evidence"] as? String ?? ""
    #expect(manager?["kind"] as? String == "openvpn", "\(String(describing: manager))")
    #expect(manager?["id"] as? String == pair.managementSocket, "\(String(describing: manager))")
    #expect(evidence.contains("pid \(client.pid)"), "\(evidence)")
    #expect(!evidence.contains("pid \(fake.pid)"), "the impostor is named as tunR's holder: \(evidence)")

    let stopped = try ns.vpnstat("disconnect", "tunR", "--db", db, "--timeout", "5s")
    #expect(stopped.status == 0, "\(stopped.status): \(stopped.output) \(stopped.errors)")
    #expect(
      waitUntil(timeout: 5) { !ns.hasLink("tunR") } != nil,
      "root's OpenVPN tunnel tunR is still there: \(stopped.output) \(stopped.errors)")
    #expect(waitUntil(timeout: 5) { !client.isRunning } != nil, "root's OpenVPN still runs")
    if impostor == .root {
      // Alone, with no real holder to win by its pid: a root process holding a foreign tunF is
      // still not the holder of this namespace's tunF.
      try ns.ip("tuntap", "add", "mode", "tun", "name", "tunF")
      let alone = try ns.start(
        Built.testPeer, ["tun-foreign", "tunF", "--netns", "/run/netns/" + elsewhere.name] + claim)
      processes.append(alone)
      try alone.waitFor("ready")
      let seen = try parseStatus(ns.vpnstat("status", "--json", "-i", "tunF", "--db", db))
      let tunF = interface(seen, named: "tunF")?["manager"] as? [String: Any]
      #expect(
        tunF?["kind"] as? String == "none", "a foreign tunF's holder taken for tunF's: \(String(describing: tunF))")
    }
    withExtendedLifetime(elsewhere) {}
  }

  // 4. --wg-quick-dir (and the configuration file) must be root's.

  enum PlantedConfiguration: String, CaseIterable, Sendable {
    /// nobody's wgt0.conf in a directory anyone may write (mode 1777).
    case worldWritableDirectory
    /// nobody's wgt0.conf in root's directory (mode 0755).
    case othersFileInRootsDirectory
    /// root's wgt0.conf that anyone may write (mode 0666), in root's directory.
    case fileWritableByOthers
    /// root's wgt0.conf, mode 0600, with the ACL entry `user:nobody:rw` (`ls -l` shows
    /// `-rw-rw----+`), in root's directory (issue 38: root ran its PostDown).
    case aclOnFile
    /// root's wgt0.conf, mode 0600, in root's directory (0755) with the ACL entry
    /// `user:nobody:rwx`: nobody may swap the file between the check and wg-quick's read.
    case aclOnDirectory

    /// An ACL, not a mode bit, lets nobody write: the refusal names the entry.
    var isACL: Bool { self == .aclOnFile || self == .aclOnDirectory }
  }

  @Test(
    "connect, disconnect and enforce with a --wg-quick-dir whose wgt0.conf others could have written exit 77 naming it; its PreUp/PreDown/PostDown never run",
    arguments: PlantedConfiguration.allCases)
  func untrustedWgQuickDirectory(_ planted: PlantedConfiguration) throws {
    let subnet = 135 + PlantedConfiguration.allCases.firstIndex(of: planted)!
    let pair = try WireGuardPair("twq\(subnet)", subnet: subnet, interface: "wgt0")
    let side = pair.left
    let files = try TemporaryDirectory("twq\(subnet)")
    let directory = files.file("conf")
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    chmod(directory, planted == .worldWritableDirectory ? 0o1777 : 0o755)
    if planted == .aclOnDirectory { try setfacl("-m", "u:nobody:rwx", directory) }
    let config = directory + "/wgt0.conf"
    let trusted = try String(contentsOfFile: side.configPath, encoding: .utf8)
    /// Writes the planted configuration: the real one, with hooks that say who ran them.
    func plant(_ witness: String) throws {
      let hooks = ["PreUp", "PreDown", "PostUp", "PostDown"].map { "\($0) = id >> \(witness)" }
      let text = trusted.replacingOccurrences(
        of: "[Interface]\n", with: "[Interface]\n" + hooks.joined(separator: "\n") + "\n")
      try? FileManager.default.removeItem(atPath: config)
      try Data(text.utf8).write(to: URL(fileURLWithPath: config))
      switch planted {
      case .worldWritableDirectory, .othersFileInRootsDirectory:
        chmod(config, 0o600)
        try giveToNobody(config)
      case .fileWritableByOthers:
        chmod(config, 0o666)
      case .aclOnFile:
        chmod(config, 0o600)
        try setfacl("-m", "u:nobody:rw", config)
      case .aclOnDirectory:
        chmod(config, 0o600)
      }
    }
    func ran(_ witness: String) -> String? {
      FileManager.default.fileExists(atPath: witness)
        ? (try? String(contentsOfFile: witness, encoding: .utf8)) ?? "?" : nil
    }
    /// wgt0 up from the real configuration, wireguard-go holding it, whatever came before.
    func freshTunnel() throws {
      if side.ns.hasLink("wgt0") {
        _ = try side.down()
        if side.ns.hasLink("wgt0") { try side.ns.ip("link", "del", "wgt0") }
      }
      let up = try side.up()
      try #require(up.status == 0, "wg-quick up \(side.configPath): \(up.errors)")
    }
    func refused(_ result: (status: Int32, errors: String), _ command: String) {
      #expect(result.status == 77, "\(command): exit \(result.status): \(result.errors)")
      #expect(result.errors.contains(directory), "\(command) does not name \(directory): \(result.errors)")
      if planted.isACL {
        #expect(result.errors.contains("ACL entry user:nobody"), "\(command) does not name the entry: \(result.errors)")
      }
    }

    let db = files.file("v.db")
    let connectWitness = files.file("ran-by-connect")
    try plant(connectWitness)
    let connect = try side.run(
      Built.vpnstat, ["connect", "wgt0", "--db", db, "--wg-quick-dir", directory, "--timeout", "2s"])
    #expect(ran(connectWitness) == nil, "root's connect ran the planted hook: \(ran(connectWitness) ?? "")")
    refused((connect.status, connect.errors), "connect")

    try freshTunnel()
    let disconnectWitness = files.file("ran-by-disconnect")
    try plant(disconnectWitness)
    let disconnect = try side.run(
      Built.vpnstat, ["disconnect", "wgt0", "--db", db, "--wg-quick-dir", directory, "--timeout", "3s"])
    #expect(
      ran(disconnectWitness) == nil, "root's disconnect ran the planted hook: \(ran(disconnectWitness) ?? "")")
    refused((disconnect.status, disconnect.errors), "disconnect")

    try freshTunnel()
    let enforceWitness = files.file("ran-by-enforce")
    try plant(enforceWitness)
    let enforcer = try side.start(
      Built.vpnstat,
      [
        "enforce", "wgt0", "--db", files.file("e.db"), "--wg-quick-dir", directory, "--session-length", "1s",
        "--pause-length", "60s",
      ])
    defer { enforcer.stop() }
    // Its refusal is read once it exited and all it printed was read: reaped first, the last
    // line could still be in the pipe (stderr was found empty). The wait ends when it exits:
    // 30 s only bound an enforcer that never does.
    _ = waitUntil(timeout: 30) { !enforcer.isRunning || ran(enforceWitness) != nil }
    #expect(ran(enforceWitness) == nil, "root's enforcer ran the planted hook: \(ran(enforceWitness) ?? "")")
    refused((enforcer.ended ?? -1, enforcer.errors), "enforce")
  }

  @Test("VPNSTAT_CONFIG naming a configuration file nobody owns: root refuses to read it, exit 77 naming the file")
  func untrustedConfigurationFile() throws {
    let ns = try TestNamespace("tcfg")
    let files = try TemporaryDirectory("tcfg")
    let config = files.file("vpnstat.conf")
    try Data("# nobody's\n".utf8).write(to: URL(fileURLWithPath: config))
    chmod(config, 0o644)
    try giveToNobody(config)
    for arguments in [
      ["status", "--json"], ["session", "check"], ["disconnect", "wgt0", "--wg-quick-dir", files.path],
    ] {
      let result = try ns.vpnstat(arguments + ["--db", files.file("v.db")], environment: ["VPNSTAT_CONFIG": config])
      #expect(result.status == 77, "\(arguments): exit \(result.status): \(result.errors)")
      #expect(result.errors.contains(config), "\(arguments): \(result.errors)")
    }
  }

  @Test(
    "VPNSTAT_CONFIG of root's, mode 0644, that an ACL entry lets nobody rewrite (to session-length = 100d), or in a directory an ACL lets nobody write: root refuses it, 77 naming the entry, and obeys nothing"
  )
  func aclConfigurationFile() throws {
    let ns = try TestNamespace("tcfa")
    let files = try TemporaryDirectory("tcfa")
    let config = files.file("vpnstat.conf")
    try Data("session-length = 7m\n".utf8).write(to: URL(fileURLWithPath: config))
    chmod(config, 0o644)
    try setfacl("-m", "u:nobody:rw", config)
    // The entry is real: nobody rewrites root's file, though its mode says root's alone may.
    let rewrite = try runAsNobody("/bin/sh", ["-c", "echo 'session-length = 100d' > \"$0\"", config])
    try #require(rewrite.status == 0, "nobody could not write through the ACL: \(rewrite.errors)")
    func refused(_ arguments: [String], _ why: String) throws {
      let result = try ns.vpnstat(arguments + ["--db", files.file("v.db")], environment: ["VPNSTAT_CONFIG": config])
      #expect(result.status == 77, "\(why) \(arguments): exit \(result.status): \(result.output) \(result.errors)")
      #expect(result.errors.contains(config), "\(why) \(arguments): \(result.errors)")
      #expect(result.errors.contains("ACL entry user:nobody"), "\(why) \(arguments): \(result.errors)")
      #expect(!result.output.contains("8640000"), "\(why) \(arguments) obeyed 100d: \(result.output)")
    }
    for arguments in [
      ["session", "--json"], ["status", "--json"], ["session", "check"], ["plan", "free"],
      ["disconnect", "wgt0", "--wg-quick-dir", files.path],
    ] {
      try refused(arguments, "file")
    }
    // Root's own file again, but the directory lets nobody replace it.
    try setfacl("-b", config)
    try Data("session-length = 7m\n".utf8).write(to: URL(fileURLWithPath: config))
    let obeyed = try ns.vpnstat(
      ["session", "--json", "--db", files.file("v.db")], environment: ["VPNSTAT_CONFIG": config])
    #expect(obeyed.status == 0 && obeyed.output.contains("420"), "root's own file: \(obeyed.errors)")
    try setfacl("-m", "u:nobody:rwx", files.path)
    try refused(["session", "--json"], "directory")
  }

  // 5. The gate trusts only a database root can trust.

  @Test(
    "a premium database nobody put in a directory anyone may write: root's connect and session check refuse it (77, naming it) and the link stays down; enforce refuses it too"
  )
  func untrustedDatabase() throws {
    let ns = try TestNamespace("tdb")
    let files = try TemporaryDirectory("tdb")
    let made = files.file("premium.db")
    let plan = try run(Built.vpnstat, ["plan", "premium", "--db", made])
    try #require(plan.status == 0, "\(plan.errors)")
    let shared = files.file("pub")
    try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
    chmod(shared, 0o1777)
    let planted = shared + "/n.db"
    for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: made + suffix) {
      try FileManager.default.copyItem(atPath: made + suffix, toPath: planted + suffix)
      chmod(planted + suffix, 0o644)
      try giveToNobody(planted + suffix)
    }
    try ns.ip("tuntap", "add", "mode", "tun", "name", "tunU")

    let connect = try ns.vpnstat("connect", "tunU", "--manager", "none", "--db", planted, "--timeout", "1s")
    #expect(connect.status == 77, "connect: exit \(connect.status): \(connect.output) \(connect.errors)")
    #expect(connect.errors.contains(planted), "\(connect.errors)")
    #expect(ns.isDown("tunU"), "root's connect raised tunU on nobody's database")
    let check = try ns.vpnstat("session", "check", "--db", planted)
    #expect(check.status == 77, "session check: exit \(check.status): \(check.output) \(check.errors)")
    #expect(check.errors.contains(planted), "\(check.errors)")
    let enforce = try ns.vpnstat("enforce", "tunU", "--db", planted)
    #expect(enforce.status == 77, "enforce: exit \(enforce.status): \(enforce.errors)")
  }

  // 6. Names that look like options never reach the managers as options.

  @Test(
    "names that look like options (`-h`, `--help`, a unit `--force.service`) reach systemctl and wg-quick only after `--` or inside an absolute path, or are refused (64)"
  )
  func namesAreNeverOptions() throws {
    let ns = try TestNamespace("topt")
    let fakes = try RecordingManagers("topt")
    let files = fakes.directory
    let fromName = { (argument: String) in
      argument == "-h" || argument.contains("--help") || argument.contains("force.service")
    }
    /// `ran`: the fakes must have been run unless vpnstat refused the name (64) — else nothing
    /// was checked.
    func check(_ log: String, _ command: String, status: Int32, errors: String, ran: Bool) {
      let calls = RecordingManagers.calls(log)
      let options = RecordingManagers.optionsFromNames(calls, fromName: fromName)
      #expect(options.isEmpty, "\(command) (exit \(status)) gave a name as an option: \(options) \(errors)")
      if ran {
        #expect(status == 64 || !calls.isEmpty, "\(command) (exit \(status)) never ran the fakes: \(errors)")
      }
    }
    // NAME, and the options before it.
    let commands: [(options: [String], name: String)] = [
      (["disconnect", "--systemd-unit", "-h=--force.service"], "-h"),
      (["connect", "--systemd-unit", "-h=--force.service"], "-h"),
      (["disconnect"], "--force.service"),
      (["connect"], "--force.service"),
    ]
    for (index, command) in commands.enumerated() {
      let log = files.file("calls-\(index)")
      let arguments = command.options + ["--timeout", "1s", "--db", files.file("c\(index).db"), "--", command.name]
      let result = try fakes.vpnstat(in: ns, log: log, arguments)
      check(log, arguments.joined(separator: " "), status: result.status, errors: result.errors, ran: true)
    }

    // The enforcer, told to stop a tunnel named like an option through wg-quick or systemd.
    var enforcers: [(BackgroundProcess, String, String)] = []
    var owners: [BackgroundProcess] = []
    defer {
      for (enforcer, _, _) in enforcers { enforcer.stop() }
      for owner in owners { owner.stop() }
    }
    for (index, (tunnel, action)) in [("--help", ["--action", "wg-quick"]), ("-h", ["--action", "systemd"])]
      .enumerated()
    {
      let owner = try ns.peer("tun", tunnel)
      owners.append(owner)
      try owner.waitFor("ready")
      try ns.ip("link", "set", "dev", tunnel, "up")
      let log = files.file("enforce-\(index)")
      let arguments =
        ["enforce", "--db", files.file("e\(index).db"), "--session-length", "1s", "--pause-length", "60s"] + action
        + ["--systemd-unit", "\(tunnel)=--force.service", "--", tunnel]
      enforcers.append((try fakes.startVpnstat(in: ns, log: log, arguments), log, tunnel))
    }
    for (enforcer, log, tunnel) in enforcers {
      _ = waitUntil(timeout: 8) { !enforcer.isRunning || ns.isDown(tunnel) }
      usleep(200_000)
      let status = enforcer.isRunning ? 0 : enforcer.child.terminationStatus
      #expect(
        enforcer.isRunning || status == 64, "enforce \(tunnel) ended with \(status): \(enforcer.errors)")
      // An enforcer may also stop the tunnel without its manager (link-down): no call to check.
      check(log, "enforce \(tunnel)", status: status, errors: enforcer.errors, ran: false)
    }
  }

  @Test(
    "NetworkManager: `connect 'work-vpn:1a2b:vpn'` does not activate a connection named 'evil⏎work-vpn:1a2b:vpn' (nmcli's terse lines do not escape newlines); names with control characters exit 64"
  )
  func newlineInConnectionName() throws {
    let nm = try NetworkManagerNamespace("tnl")
    let db = nm.directory.file("v.db")
    let evil = "evil\nwork-vpn:1a2b:vpn"
    try nm.nmcliChecked(
      "connection", "add", "type", "tun", "ifname", "tnl0", "con-name", evil, "tun.mode", "tun", "ipv4.method",
      "disabled", "ipv6.method", "disabled", "connection.autoconnect", "no")
    let listed = try nm.nmcliChecked("-t", "-f", "NAME,UUID", "connection", "show").output
    let line = try #require(
      listed.split(separator: "\n").first { $0.hasPrefix("work-vpn\\:1a2b\\:vpn:") },
      "nmcli does not list the connection as the attack needs: \(listed)")
    let uuid = String(line.split(separator: ":").last ?? "")
    func isActive() -> Bool { (try? nm.activeConnections().contains { $0.uuid == uuid }) ?? false }

    let connect = try nm.run(Built.vpnstat, ["connect", "work-vpn:1a2b:vpn", "--db", db, "--timeout", "2s"])
    #expect(!isActive(), "connect 'work-vpn:1a2b:vpn' activated '\(evil)' (exit \(connect.status)): \(connect.output)")
    #expect(
      connect.status == 64 || connect.status == 69, "exit \(connect.status): \(connect.output) \(connect.errors)")

    for name in [evil, "wg\n0", "wg\u{1B}[2J0"] {
      for command in ["connect", "disconnect"] {
        let result = try nm.run(Built.vpnstat, [command, name, "--db", db, "--timeout", "1s"])
        #expect(result.status == 64, "\(command) \(name.debugDescription): exit \(result.status): \(result.errors)")
      }
    }
    #expect(!isActive(), "the newline-named connection was activated")
  }

  // 7. Other users' processes cannot slow root's walk of /proc.

  @Test(
    "10 processes of nobody's holding ~20,000 descriptors each in the enforcer's namespace: deadline → link-down within 500 ms of the same without them"
  )
  func descriptorFlood() throws {
    let t = try EnforcedTunnel("tfd")
    let peer = try builtForOtherUsers(Built.testPeer, in: t.directory)
    var flood: [BackgroundProcess] = []
    defer {
      for process in flood { process.stop(SIGKILL) }
    }
    /// From the stored deadline to the moment the link is seen down.
    func latency(_ db: String) throws -> TimeInterval {
      try t.up()
      let enforcer = try t.ns.start(
        Built.vpnstat, ["enforce", t.tunnel, "--db", db, "--session-length", "2s", "--pause-length", "60s"])
      defer { enforcer.stop() }
      try enforcer.waitForError("opened a window")
      // `session check` looks up no manager: no walk of /proc of its own.
      let checked = try JSONSerialization.jsonObject(
        with: t.ns.vpnstat("session", "check", "--json", "--db", db).stdout)
      let ends = try #require(instant(((checked as? [String: Any])?["session"] as? [String: Any])?["session_ends_at"]))
      let down = try #require(try waitUntil(timeout: 10) { try !t.isUp() }, "never taken down: \(enforcer.errors)")
      return down.timeIntervalSince(ends)
    }
    // Two deadlines each way, the quicker of each compared: one run delayed by the machine's
    // other work is not what is measured. The bound is loose (the walk that read every process's
    // descriptors took 4.5 s here); the figures are vpnstat-bench's.
    let quiet = try (0..<2).map { try latency(t.directory.file("quiet\($0).db")) }
    for _ in 0..<10 {
      flood.append(try t.ns.startAsNobody(peer, ["hold-fds", "19990"]))
    }
    var held = 0
    for process in flood {
      let ready = try process.waitForLine(startingWith: "ready")
      held += Int(ready.split(separator: " ").last ?? "") ?? 0
    }
    try #require(held >= 190_000, "the flood holds only \(held) descriptors")
    let flooded = try (0..<2).map { try latency(t.directory.file("flooded\($0).db")) }
    let milliseconds = { (runs: [TimeInterval]) in runs.map { "\(Int($0 * 1000)) ms" }.joined(separator: ", ") }
    #expect(
      flooded.min()! <= quiet.min()! + 0.5,
      "deadline → down took \(milliseconds(flooded)) with \(held) descriptors of nobody's open, \(milliseconds(quiet)) without"
    )
  }

  // 8. A parent that looks like NetworkManager's VPN plugin is not root's plugin.

  /// Who starts a holder of nobody's tun that claims, by its arguments, to be NetworkManager's
  /// OpenVPN for an active VPN connection.
  enum PluginImpostor: String, CaseIterable, Sendable {
    /// The real `/usr/lib/NetworkManager/nm-openvpn-service`, run by nobody (it is not setuid:
    /// any user may run it, with a bus of their own), whose child — nobody's — holds the tun.
    case pluginRunByNobody
    /// Root's program named `nm-openvpn-service`, outside NetworkManager's directory.
    case pluginOutsideItsDirectory
    /// No plugin: a process whose real uid is nobody's and effective uid root's (a setuid-root
    /// program a user started) holds the tun itself.
    case setuidRootHolder
  }

  @Test(
    "NetworkManager's OpenVPN plugin run by nobody (or a root program named like it elsewhere, or a holder only effectively root) whose child holds nobody's tun with --management naming an active VPN's UUID: status names no manager, disconnect and the enforcer's deadline take the tun down by link-down and leave the VPN activated"
  )
  func networkManagerPluginImpostor() throws {
    try RealVPNTool.require("nm-openvpn-service", "dbus-daemon")
    let pair = try OpenVPNPair("tnmi", subnet: 135, device: "tun35")
    try pair.startServer(extra: ["--float"])
    let nm = try NetworkManagerNamespace("tnmi", in: pair.link.left)
    let files = try TemporaryDirectory("tnmi")
    let peer = try builtForOtherUsers(Built.testPeer, in: files)
    let uuid = try nm.addOpenVPNConnection("ovpn", to: pair)
    try nm.nmcliChecked("connection", "up", "ovpn")
    func vpnActive() -> Bool {
      (try? nm.activeConnections().contains { $0.uuid == uuid && $0.state == "activated" }) ?? false
    }
    try #require(waitUntil(timeout: 10) { vpnActive() && nm.ns.hasLink("tun35") } != nil, "the VPN did not come up")
    let plugin = "/usr/lib/NetworkManager/nm-openvpn-service"
    let claim = openVPNClaim(managementSocket: "/var/run/NetworkManager/nm-openvpn-\(uuid)")
    let nobody = try nobodyOwner()

    var processes: [BackgroundProcess] = []
    defer { for process in processes { process.stop(SIGKILL) } }
    var holders: [PluginImpostor: (tun: String, pid: pid_t)] = [:]
    for (at, impostor) in PluginImpostor.allCases.enumerated() {
      let tun = "tunI\(at)"
      try nm.ns.ip("tuntap", "add", "mode", "tun", "user", "nobody", "name", tun)
      let started: BackgroundProcess
      switch impostor {
      case .pluginRunByNobody:
        // The plugin needs a bus to stay: nobody's own. Its child is forked before it execs.
        started = try nm.ns.startAsNobody(
          "/bin/sh",
          [
            "-c",
            """
            set -e
            bus=$(dbus-daemon --session --fork --nopidfile --print-address=1)
            "$0" "$@" &
            DBUS_SYSTEM_BUS_ADDRESS=$bus exec \(plugin) --persist
            """, peer, "tun", tun,
          ] + claim)
      case .pluginOutsideItsDirectory:
        let named = files.file("nm-openvpn-service")
        try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: named)
        started = try nm.ns.start(
          "/bin/sh",
          [
            "-c",
            """
            setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$0" "$@" &
            exec \(named) 1000000
            """, peer, "tun", tun,
          ] + claim)
      case .setuidRootHolder:
        started = try nm.ns.start(
          "/usr/bin/setpriv", ["--ruid=nobody", "--euid=0", "--", peer, "tun", tun] + claim)
      }
      processes.append(started)
      try started.waitFor("ready")
      // What /proc shows is what each impostor is meant to be: the holder, and its parent.
      let holder =
        impostor == .setuidRootHolder
        ? started.pid : try #require(childProcesses(of: started.pid).first, "\(impostor): no child")
      let status = try String(contentsOfFile: "/proc/\(holder)/status", encoding: .utf8)
      let uids = status.split(separator: "\n").first { $0.hasPrefix("Uid:") }?.split(whereSeparator: \.isWhitespace)
      // The child says "ready" once it holds the tun, which can be before its parent shell has
      // exec'd the program it is to be.
      // Compared as files, not as paths: in a chroot, a process in another mount namespace shows
      // its executable by the host's path.
      func parentRuns(_ program: String) -> Bool {
        // stat follows /proc/PID/exe to the file the process runs.
        func identity(_ path: String) -> (UInt, UInt)? {
          var info = stat()
          return stat(path, &info) == 0 ? (UInt(info.st_dev), UInt(info.st_ino)) : nil
        }
        guard let wanted = identity(program) else { return false }
        return waitUntil(timeout: 5) { identity("/proc/\(started.pid)/exe").map { $0 == wanted } ?? false } != nil
      }
      switch impostor {
      case .pluginRunByNobody:
        try #require(
          parentRuns(plugin),
          "the shell did not become \(plugin): it runs \(String(describing: try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(started.pid)/exe"))), running \(started.isRunning); it said: \(started.errors)"
        )
        try #require(ownerUID(of: started.pid) == nobody.uid, "the plugin does not run as nobody")
        try #require(uids?.dropFirst().allSatisfy { $0 == "\(nobody.uid)" } == true, "\(status)")
      case .pluginOutsideItsDirectory:
        try #require(parentRuns(files.file("nm-openvpn-service")), "the shell did not become the copy")
        try #require(ownerUID(of: started.pid) == 0)
        try #require(uids?.dropFirst().allSatisfy { $0 == "\(nobody.uid)" } == true, "\(status)")
      case .setuidRootHolder:
        try #require(uids?.dropFirst().first == "\(nobody.uid)" && uids?.dropFirst(2).first == "0", "\(status)")
      }
      try #require(
        tunHolders(device: tun, netnsInode: try #require(nm.ns.inode)).contains { $0.pid == holder },
        "\(impostor): pid \(holder) does not hold \(tun)")
      try nm.ns.ip("link", "set", tun, "up")
      holders[impostor] = (tun, holder)
    }

    let db = files.file("v.db")
    let names = PluginImpostor.allCases.flatMap { ["-i", holders[$0]!.tun] }
    let status = try parseStatus(nm.run(Built.vpnstat, ["status", "--json", "-i", "tun35", "--db", db] + names))
    // Root's own plugin's child is believed: the rule's positive case, beside the impostors.
    let real = interface(status, named: "tun35")?["manager"] as? [String: Any]
    #expect(
      real?["kind"] as? String == "networkmanager" && real?["id"] as? String == uuid, "\(String(describing: real))")
    for impostor in PluginImpostor.allCases {
      let (tun, holder) = holders[impostor]!
      let manager = interface(status, named: tun)?["manager"] as? [String: Any]
      let evidence = manager?["evidence"] as? String ?? ""
      #expect(manager?["kind"] as? String == "none", "\(impostor): \(String(describing: manager))")
      #expect(manager?["id"] is NSNull, "\(impostor): \(String(describing: manager))")
      // Its descriptors were never read: nobody with standing holds the tun.
      #expect(evidence == "no process of root or of a system service holds \(tun)", "\(impostor): \(evidence)")
      #expect(!evidence.contains("pid \(holder)") && !evidence.contains(uuid), "\(impostor): \(evidence)")
    }

    for impostor in PluginImpostor.allCases {
      let tun = holders[impostor]!.tun
      let stopped = try nm.run(Built.vpnstat, ["disconnect", tun, "--db", db, "--timeout", "3s"])
      #expect(
        vpnActive(),
        "\(impostor): root's `disconnect \(tun)` deactivated the VPN 'ovpn' (exit \(stopped.status): \(stopped.output) \(stopped.errors))"
      )
      #expect(
        nm.ns.isDown(tun), "\(impostor): \(tun) is still up (\(stopped.status)): \(stopped.output) \(stopped.errors)")
      #expect(
        stopped.status == 0 && stopped.output.contains("stopped through link-down"),
        "\(impostor): \(stopped.status): \(stopped.output) \(stopped.errors)")
      if !vpnActive() { try nm.nmcliChecked("connection", "up", "ovpn") }
    }

    // The enforcer's deadline on the issue's impostor: link-down, said why, the VPN untouched.
    let tun = holders[.pluginRunByNobody]!.tun
    try nm.ns.ip("link", "set", tun, "up")
    let enforcer = try nm.start(
      Built.vpnstat,
      [
        "enforce", tun, "--action", "auto", "--db", files.file("e.db"), "--session-length", "2s", "--pause-length",
        "60s",
      ])
    defer { enforcer.stop() }
    try enforcer.waitForError("opened a window")
    let down = waitUntil(timeout: 10) { nm.ns.isDown(tun) || !vpnActive() }
    #expect(down != nil, "nothing happened at the deadline: \(enforcer.errors)")
    #expect(
      holdsThroughout(0.5) { vpnActive() },
      "the enforcer's deadline on \(tun) deactivated the VPN 'ovpn': \(enforcer.errors)")
    #expect(nm.ns.isDown(tun), "\(tun) stayed up past the deadline: \(enforcer.errors)")
    #expect(!enforcer.errors.contains(uuid), "the enforcer named the VPN's UUID: \(enforcer.errors)")
    // What the session says: the stop at the deadline, through no manager, and why none.
    var session: [String: Any] = [:]
    _ = waitUntil(timeout: 10) {
      session =
        (try? JSONSerialization.jsonObject(
          with: nm.run(Built.vpnstat, ["session", "--json", "--db", files.file("e.db")]).stdout))
        .flatMap { ($0 as? [String: Any])?["session"] as? [String: Any] } ?? [:]
      return (session["last_stop"] as? [String: Any])?["reason"] != nil
    }
    let stop = session["last_stop"] as? [String: Any]
    let manager = session["manager"] as? [String: Any]
    #expect(stop?["reason"] as? String == "free-limit" && stop?["detail"] is NSNull, "\(String(describing: stop))")
    #expect(
      manager?["kind"] as? String == "none"
        && manager?["evidence"] as? String == "no process of root or of a system service holds \(tun)",
      "\(String(describing: manager))")
    #expect(enforcer.isRunning, "the enforcer exited: \(enforcer.errors)")
    withExtendedLifetime(pair) {}
  }
}

/// The children of `pid`, from /proc (`PPid:`).
func childProcesses(of pid: pid_t) -> [pid_t] {
  let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
  return entries.compactMap { pid_t($0) }.filter { child in
    let status = (try? String(contentsOfFile: "/proc/\(child)/status", encoding: .utf8)) ?? ""
    return status.split(separator: "\n").contains {
      $0.hasPrefix("PPid:") && $0.split(whereSeparator: \.isWhitespace).last == "\(pid)"
    }
  }.sorted()
}

/// The owner of /proc/PID: the process's effective uid.
func ownerUID(of pid: pid_t) -> uid_t? {
  var info = stat()
  return stat("/proc/\(pid)", &info) == 0 ? info.st_uid : nil
}
