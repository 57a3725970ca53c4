#if canImport(Glibc)
  import Glibc
#endif

/// A network namespace the bench made: `lo` (set up) and `ifbCount` ifb devices. ifb devices
/// have no peer and send nothing anywhere, so nothing the bench does leaves the namespace.
struct BenchNamespace {
  /// `vpnbench-<pid>-<N>`: unique per run, and the pid lets a later run remove what a killed run left.
  let name: String
  let ifbCount: Int

  static let prefix = "vpnbench-"

  /// Makes the namespace and its devices with two `ip` calls (one `-batch` for all devices:
  /// 1000 separate `ip link add` calls would take seconds). On failure nothing is left behind.
  /// `label` tells apart namespaces of the same size (default: the size).
  static func create(ifbCount: Int, ip: String, label: String? = nil) throws -> BenchNamespace {
    let name = "\(prefix)\(getpid())-\(label ?? String(ifbCount))"
    try runIP(ip, ["netns", "add", name])
    let namespace = BenchNamespace(name: name, ifbCount: ifbCount)
    do {
      var batch = "link set lo up\n"
      for i in 0..<ifbCount { batch += "link add ifb\(i) type ifb\n" }
      try runIP(ip, ["-n", name, "-batch", "-"], input: Array(batch.utf8))
    } catch {
      namespace.destroy(ip: ip)
      throw error
    }
    return namespace
  }

  /// Deletes the namespace; the kernel frees its devices with it. Never throws: cleanup goes on.
  /// What still runs inside is killed first: an inner run stopped by an interruption leaves its
  /// children behind otherwise (an enforcer was found running on in a deleted namespace).
  func destroy(ip: String) {
    killProcessesInside()
    do {
      try Self.runIP(ip, ["netns", "delete", name], interruptible: false)
    } catch {
      warn(
        "could not delete namespace \(name): \(error) — remove it with 'ip netns delete \(name)'")
    }
  }

  /// Sends SIGKILL to every process whose network namespace is this one (its `/proc/PID/ns/net`
  /// names the inode `/run/netns/NAME` is bound to): only what this run started runs there.
  private func killProcessesInside() {
    var namespace = stat()
    guard stat("/run/netns/\(name)", &namespace) == 0 else { return }
    let wanted = Array("net:[\(namespace.st_ino)]".utf8)
    guard let directory = opendir("/proc") else { return }
    defer { closedir(directory) }
    while let entry = readdir(directory) {
      let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
      }
      guard let pid = Int32(entryName), pid != getpid() else { continue }
      var link = [UInt8](repeating: 0, count: 64)
      let count = link.withUnsafeMutableBufferPointer { buffer in
        buffer.withMemoryRebound(to: CChar.self) { readlink("/proc/\(pid)/ns/net", $0.baseAddress!, 63) }
      }
      if count > 0 && link.prefix(count).elementsEqual(wanted) { kill(pid, SIGKILL) }
    }
  }

  /// Deletes `vpnbench-<pid>-*` namespaces whose run is gone (killed with SIGKILL, say), and
  /// none that a live run still uses.
  static func removeStale(ip: String) {
    guard let directory = opendir("/run/netns") else { return }
    var stale: [String] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
      }
      guard name.hasPrefix(prefix),
        let pid = name.dropFirst(prefix.count).split(separator: "-").first.flatMap({ Int32($0) }),
        pid != getpid(), kill(pid, 0) == -1, errno == ESRCH
      else { continue }
      stale.append(name)
    }
    closedir(directory)
    for name in stale {
      warn("removing namespace \(name) left by an earlier run that is gone")
      BenchNamespace(name: name, ifbCount: 0).destroy(ip: ip)
    }
  }

  private static func runIP(
    _ ip: String, _ arguments: [String], input: [UInt8]? = nil, interruptible: Bool = true
  ) throws {
    let command = PreparedCommand(label: "ip", path: ip, arguments: arguments)
    let result: CapturedRun
    if interruptible {
      result = try runCapturing(command, input: input)
    } else {
      // Cleanup runs after a signal too: it must not be cut short by the signal it cleans up after.
      let pid = try command.spawn()
      result = CapturedRun(exit: try waitForExit(pid), output: [])
    }
    guard result.exit.succeeded else {
      throw BenchError("ip \(arguments.prefix(4).joined(separator: " ")) failed: \(result.exit)")
    }
  }
}

/// Every namespace the outer run made and has not deleted yet: what cleanup must delete,
/// on success, on error and after SIGINT/SIGTERM alike.
final class NamespaceKeeper {
  private(set) var live: [BenchNamespace] = []
  let ip: String

  init(ip: String) { self.ip = ip }

  func create(ifbCount: Int, label: String? = nil) throws -> BenchNamespace {
    let namespace = try BenchNamespace.create(ifbCount: ifbCount, ip: ip, label: label)
    live.append(namespace)
    return namespace
  }

  func destroy(_ namespace: BenchNamespace) {
    namespace.destroy(ip: ip)
    live.removeAll { $0.name == namespace.name }
  }

  func destroyAll() {
    for namespace in live.reversed() { destroy(namespace) }
  }
}

/// A line on stderr, prefixed `vpnstat-bench: `.
func warn(_ text: String) {
  var line = "vpnstat-bench: " + text + "\n"
  line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
