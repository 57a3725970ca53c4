import Foundation
import Testing

/// Whether a real systemd can be booted here: root, systemd-nspawn (systemd-container), a cgroup
/// file system, and a Debian 12 root to boot (made once with debootstrap, which needs the
/// Debian mirror, about 40 s).
enum SystemdHarness {
  static let nspawn = "/usr/bin/systemd-nspawn"
  /// The root the containers boot, shared read-only (each container writes to an overlay of its
  /// own). Its name says what is in it: a new package list makes a new one.
  static let image = "/tmp/vpnstat-systemd-root-2"
  static let packages = [
    "systemd", "systemd-sysv", "dbus", "iproute2", "procps", "libsqlite3-0", "wireguard-tools", "wireguard-go",
    "openvpn", "passwd", "libpam-systemd",
  ]

  static let available: Bool = {
    guard Privilege.isRoot, FileManager.default.isExecutableFile(atPath: nspawn),
      (try? FileManager.default.contentsOfDirectory(atPath: "/sys/fs/cgroup"))?.isEmpty == false
    else { return false }
    return FileManager.default.fileExists(atPath: image)
      || FileManager.default.isExecutableFile(atPath: "/usr/sbin/debootstrap")
  }()
  static let reason: Comment =
    "needs root, systemd-nspawn (systemd-container), debootstrap and a cgroup file system: boots a Debian 12 with systemd (scripts/install-deps --test installs them)"

  /// Makes the image once (debootstrap, under a lock, so parallel tests wait for one build).
  static func makeImage() throws {
    if FileManager.default.fileExists(atPath: image) { return }
    let sources = (try? String(contentsOfFile: "/etc/apt/sources.list.d/debian.sources", encoding: .utf8)) ?? ""
    let mirror =
      sources.split(separator: "\n").first { $0.hasPrefix("URIs:") }.map {
        String($0.dropFirst(5)).trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? ""
      } ?? "http://deb.debian.org/debian"
    let script = """
      test -d \(image) && exit 0
      rm -rf \(image).part
      debootstrap --variant=minbase --include=\(packages.joined(separator: ",")) bookworm \(image).part \(mirror) \
        > \(image).log 2>&1 || { tail -n 20 \(image).log >&2; exit 1; }
      mv \(image).part \(image)
      """
    let made = try run("/usr/bin/flock", [image + ".lock", "/bin/sh", "-c", script], timeout: 900)
    if made.status != 0 { throw TestSetupError("debootstrap of \(image) failed: \(made.errors)") }
  }

  /// The package under test: `VPNSTAT_DEB` when set (CI's release package), else the suite's own
  /// build packed by scripts/build-deb (once per test process).
  static let package: Result<String, TestSetupError> = {
    if let deb = ProcessInfo.processInfo.environment["VPNSTAT_DEB"], !deb.isEmpty { return .success(deb) }
    do {
      let out = try TemporaryDirectory.forProcess("systemd-deb")
      let built = try run(
        Built.packageRoot.path + "/scripts/build-deb", [out.path], environment: ["VPNSTAT_BINARY": Built.vpnstat],
        timeout: 600)
      guard built.status == 0 else { return .failure(TestSetupError("build-deb: \(built.errors)")) }
      return .success(built.output.trimmingCharacters(in: .whitespacesAndNewlines))
    } catch {
      return .failure(TestSetupError("build-deb: \(error)"))
    }
  }()

  /// Directories of the Swift runtime the binary links (none for a static one): bound read-only
  /// into the container at the same paths.
  static let runtimeDirectories: [String] = {
    guard let linked = try? run("/usr/bin/ldd", [Built.vpnstat]) else { return [] }
    let directories = linked.output.split(separator: "\n").compactMap { line -> String? in
      guard line.contains("libswift"), let arrow = line.range(of: "=> ") else { return nil }
      let path = line[arrow.upperBound...].split(separator: " ").first.map(String.init) ?? ""
      return path.hasPrefix("/") ? (path as NSString).deletingLastPathComponent : nil
    }
    return Array(Set(directories)).sorted()
  }()
}

/// A Debian 12 booted with its own systemd in a container of its own (network namespace, PID
/// namespace, an overlay of the shared image that dies with it), vpnstat's package installed
/// with dpkg. `sh` runs a script inside (`nsenter` into every namespace). Powered off, and the
/// container's files removed, when the test ends — also when it fails.
final class BootedSystem: @unchecked Sendable {
  let directory: TemporaryDirectory
  let container: BackgroundProcess
  /// The container's PID 1 as the host sees it.
  let leader: pid_t
  /// How long booting took (to multi-user, the package installed).
  private(set) var bootSeconds: Double = 0

  init(_ label: String) throws {
    let started = Date()
    try SystemdHarness.makeImage()
    let deb = try SystemdHarness.package.get()
    directory = try TemporaryDirectory("systemd-\(label)")
    for part in ["upper", "work", "merged"] {
      try FileManager.default.createDirectory(atPath: directory.file(part), withIntermediateDirectories: true)
    }
    for made in ["upper/root", "upper/usr/local/bin"] {
      try FileManager.default.createDirectory(atPath: directory.file(made), withIntermediateDirectories: true)
    }
    try FileManager.default.copyItem(atPath: deb, toPath: directory.file("upper/root/vpnstat.deb"))
    // A program that holds a tun, for the trust rules (any user may run it).
    try FileManager.default.copyItem(
      atPath: Built.testPeer, toPath: directory.file("upper/usr/local/bin/vpnstat-testpeer"))
    let binds = SystemdHarness.runtimeDirectories.map { "--bind-ro=\($0)" }
    // The overlay is mounted in a mount namespace of the container's own: it goes when the
    // container does, whatever happens to this process. nspawn filters the system calls of all
    // the container's systemd starts, and its list lacks pidfd_getfd, with which vpnstat proves
    // which tun a process holds (a host's systemd has no such filter): it is added.
    let boot = """
      mount -t overlay overlay -o lowerdir=\(SystemdHarness.image),upperdir=\(directory.file("upper")),workdir=\(directory.file("work")) \(directory.file("merged")) || exit 1
      exec \(SystemdHarness.nspawn) -q -D \(directory.file("merged")) --private-network --register=no --keep-unit \
        --bind=/dev/net/tun --system-call-filter=pidfd_getfd --machine=vpnstat-\(label) \(binds.joined(separator: " ")) -b
      """
    container = try BackgroundProcess(
      "/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/sh", "-c", boot],
      environment: ["SYSTEMD_NSPAWN_TMPFS_TMP": "0"])
    var found: pid_t?
    let deadline = Date().addingTimeInterval(30)
    while found == nil, Date() < deadline, container.isRunning {
      let children =
        (try? String(contentsOfFile: "/proc/\(container.pid)/task/\(container.pid)/children", encoding: .utf8)) ?? ""
      // nspawn's child becomes the container's PID 1 when it executes systemd.
      found = children.split(separator: " ").first.flatMap { pid_t($0) }.flatMap { pid in
        let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
        return name == "systemd\n" ? pid : nil
      }
      if found == nil { usleep(20_000) }
    }
    guard let found else {
      container.stop(SIGKILL)
      throw TestSetupError("systemd-nspawn did not start: \(container.output) \(container.errors)")
    }
    leader = found
    // Until systemd listens on its socket, systemctl cannot ask it anything.
    var running = CommandResult(status: -1, stdout: Data(), stderr: Data())
    let booted = try waitUntil(timeout: 90, every: 0.1) {
      running = try run(
        "/usr/bin/nsenter", ["-t", String(leader), "-a", "-r", "-w", "/bin/systemctl", "is-system-running", "--wait"],
        timeout: 90)
      return running.output.contains("running") || running.output.contains("degraded")
    }
    guard booted != nil else {
      shutDown()
      throw TestSetupError("the container did not boot: \(running.output) \(running.errors)")
    }
    let installed = try sh("DEBIAN_FRONTEND=noninteractive dpkg -i /root/vpnstat.deb", timeout: 120)
    guard installed.status == 0 else {
      shutDown()
      throw TestSetupError("dpkg -i in the container: \(installed.output) \(installed.errors)")
    }
    bootSeconds = Date().timeIntervalSince(started)
  }

  deinit { shutDown() }

  /// Runs `script` with /bin/sh inside the container, as root. (`nsenter -r -w`: the container's
  /// root and directory too, which entering its namespaces alone does not give a process that
  /// is itself in a chroot, as the fresh-machine run is.)
  @discardableResult
  func sh(_ script: String, timeout: TimeInterval = 60) throws -> CommandResult {
    try run(
      "/usr/bin/nsenter",
      [
        "-t", String(leader), "-a", "-r", "-w", "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG=C.UTF-8",
        "/bin/sh", "-c", script,
      ], timeout: timeout)
  }

  /// The free plan's lengths in /etc/vpnstat.conf, and the package's connect gate installed as
  /// a drop-in for `template` (`wg-quick@`), as contrib/README.md tells an administrator.
  func configure(session: String, pause: String, gateFor template: String) throws {
    let done = try sh(
      """
      set -e
      printf 'session-length = \(session)\\npause-length = \(pause)\\n' > /etc/vpnstat.conf
      mkdir -p /etc/systemd/system/\(template).service.d
      cp /usr/share/vpnstat/\(template).service.d/vpnstat-gate.conf /etc/systemd/system/\(template).service.d/
      systemctl daemon-reload
      """)
    if done.status != 0 { throw TestSetupError("configuring the gate for \(template): \(done.errors)") }
  }

  /// What `systemctl show -P PROPERTY UNIT` says.
  func property(_ name: String, of unit: String) -> String {
    ((try? sh("systemctl show -P \(name) -- '\(unit)'"))?.output ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// The journal's entries as JSON objects (`journalctl -o json` with `filters`).
  func journal(_ filters: String) -> [[String: Any]] {
    let out = (try? sh("journalctl --no-pager -o json \(filters)"))?.output ?? ""
    return out.split(separator: "\n").compactMap {
      try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
  }

  /// Waits until `condition` holds, up to `timeout` seconds; the last value of `condition`.
  @discardableResult
  func eventually(_ timeout: TimeInterval, _ condition: () -> Bool) -> Bool {
    waitUntil(timeout: timeout, every: 0.2, condition) != nil
  }

  private func shutDown() {
    guard container.isRunning else { return }
    _ = try? run(
      "/usr/bin/nsenter", ["-t", String(leader), "-a", "-r", "-w", "/bin/systemctl", "poweroff"], timeout: 10)
    // Killing nspawn alone would leave the container's PID 1 running: its death ends them all.
    if waitUntil(timeout: 30, every: 0.1, { !container.isRunning }) == nil {
      kill(leader, SIGKILL)
      container.stop(SIGKILL)
    }
  }
}
