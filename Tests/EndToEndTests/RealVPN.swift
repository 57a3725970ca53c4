import Foundation
import Glibc
import Testing

@testable import VPNStatEngine
@testable import VPNStatTestSupport

// Real VPN software inside network namespaces: WireGuard through wg-quick and wireguard-go,
// OpenVPN with its management interface, NetworkManager with its own D-Bus. Everything a value
// here starts (namespaces, daemons, mounts, files) goes when the value goes, also when the test
// fails. docs/real-vpns.md says what each piece shows and why it is built this way.

// MARK: - Tools

/// The programs the real-VPN tests run. A missing one fails the test with "TOOL is missing" and
/// the Debian package that has it: a machine without them must not pass by skipping.
enum RealVPNTool {
  static let directories = ["/usr/sbin", "/usr/bin", "/sbin", "/bin", "/usr/local/sbin", "/usr/local/bin"]

  /// The packages that hold each program (for the message and for scripts/install-deps).
  static let packages: [String: String] = [
    "wg": "wireguard-tools", "wg-quick": "wireguard-tools", "wireguard-go": "wireguard-go",
    "nft": "nftables", "openvpn": "openvpn", "NetworkManager": "network-manager", "nmcli": "network-manager",
    "dbus-daemon": "dbus", "nsenter": "util-linux", "unshare": "util-linux", "mount": "mount",
    "umount": "mount", "python3": "python3", "nm-openvpn-service": "network-manager-openvpn",
  ]

  /// Where a program is; NetworkManager's VPN plugins live outside PATH.
  static func path(_ name: String) -> String? {
    let extra = name == "nm-openvpn-service" ? ["/usr/lib/NetworkManager"] : []
    for directory in directories + extra {
      let candidate = directory + "/" + name
      if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
  }

  /// Throws "TOOL is missing" for the first program that is not installed.
  static func require(_ names: String...) throws {
    for name in names where path(name) == nil {
      let package = packages[name].map { " (Debian package \($0); see scripts/install-deps --test)" } ?? ""
      throw TestSetupError("\(name) is missing\(package)")
    }
  }
}

// MARK: - Processes and namespaces

extension TestNamespace {
  /// The inode of this network namespace, as `/proc/PID/ns/net` shows it (`net:[INODE]`).
  var inode: UInt64? {
    var info = stat()
    guard stat("/run/netns/" + name, &info) == 0 else { return nil }
    return UInt64(info.st_ino)
  }

  /// Every process whose network namespace is this one (`ip netns pids`), daemons included:
  /// wireguard-go, dbus-daemon and dbus-activated helpers are not the test's children.
  func processIDs() -> [pid_t] {
    guard let listed = try? VPNStatTestSupport.run("/usr/sbin/ip", ["netns", "pids", name]) else { return [] }
    return listed.output.split(whereSeparator: \.isNewline).compactMap { pid_t($0) }
  }

  /// Ends every process in the namespace: SIGTERM, then SIGKILL for what is still alive after
  /// `grace` seconds. A process left alive would keep the namespace (and its devices) alive after
  /// `ip netns del`.
  func stopAllProcesses(grace: TimeInterval = 2) {
    let first = processIDs()
    guard !first.isEmpty else { return }
    for pid in first { kill(pid, SIGTERM) }
    let deadline = Date().addingTimeInterval(grace)
    while Date() < deadline, processIDs().contains(where: isAlive) { usleep(10_000) }
    for pid in processIDs() where isAlive(pid) { kill(pid, SIGKILL) }
  }

  /// Whether a device exists in the namespace.
  func hasLink(_ device: String) -> Bool {
    (try? VPNStatTestSupport.run("/usr/sbin/ip", ["-n", name, "link", "show", "dev", device]))?.status == 0
  }

  /// `ip -d -j link show DEV`: the device's flags and its netlink kind (`linkinfo.info_kind`).
  func linkDetails(_ device: String) throws -> (flags: [String], kind: String?) {
    let shown = try ip("-d", "-j", "link", "show", "dev", device)
    let links = try JSONSerialization.jsonObject(with: shown.stdout) as? [[String: Any]]
    let link = links?.first ?? [:]
    let kind = (link["linkinfo"] as? [String: Any])?["info_kind"] as? String
    return (link["flags"] as? [String] ?? [], kind)
  }

  /// `ip rule` and `ip route show table T` for both families, as text (for the fwmark rule).
  func rules() throws -> String {
    try ip("-4", "rule").output + ip("-6", "rule").output
  }
  func routes(table: String) throws -> String {
    try ip("-4", "route", "show", "table", table).output + ip("-6", "route", "show", "table", table).output
  }

  /// Sends ICMP echo requests to `address` (IPv4 or IPv6) from inside the namespace until one is
  /// answered; returns whether one was. Debian's python3 with a raw socket: this machine has no
  /// ping(8).
  func ping(_ address: String, timeout: TimeInterval = 3) throws -> Bool {
    try RealVPNTool.require("python3")
    let result = try run("/usr/bin/python3", ["-c", pingScript, address, String(timeout)], timeout: timeout + 10)
    return result.status == 0
  }
}

/// Whether a process exists and is not a zombie (a daemon's zombie waits for PID 1 to reap it).
func isAlive(_ pid: pid_t) -> Bool {
  guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
    let close = stat.lastIndex(of: ")")
  else { return false }
  let state = stat[stat.index(after: close)...].split(separator: " ").first
  return state != "Z" && state != "X"
}

/// A process holding a tun device open, found through `/proc/PID/fd` and `/proc/PID/fdinfo`.
struct TunHolder: Equatable {
  var pid: pid_t
  var fd: Int
  /// `/proc/PID/comm`.
  var command: String
}

/// The processes holding `device` open through `/dev/net/tun`, in the network namespace with
/// `inode`. The fdinfo of a tun descriptor ends with `iff:\tNAME` (empty before TUNSETIFF); the
/// name alone is not unique across namespaces, so the holder's `/proc/PID/ns/net` must match too.
func tunHolders(device: String, netnsInode: UInt64) -> [TunHolder] {
  var holders: [TunHolder] = []
  let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
  for entry in entries {
    guard let pid = pid_t(entry) else { continue }
    guard let net = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net"),
      net == "net:[\(netnsInode)]"
    else { continue }
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
    for fd in fds {
      guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
        target.hasSuffix("/dev/net/tun"),
        let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8)
      else { continue }
      let iff = info.split(separator: "\n").first { $0.hasPrefix("iff:") }
      guard iff?.dropFirst(4).trimmingCharacters(in: .whitespaces) == device else { continue }
      let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
      holders.append(
        TunHolder(pid: pid, fd: Int(fd) ?? -1, command: command.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
  }
  return holders
}

/// An ICMP echo over a raw socket, IPv4 or IPv6: `python3 -c SCRIPT ADDRESS TIMEOUT`. Exit 0 and
/// "reply from … after N ms" on the first answer, 1 after the timeout. One request every 200 ms.
private let pingScript = """
  import os, socket, struct, sys, time
  def checksum(b):
      if len(b) % 2: b += b'\\0'
      s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
      s = (s >> 16) + (s & 0xffff); s += s >> 16
      return ~s & 0xffff
  dst, timeout = sys.argv[1], float(sys.argv[2])
  v6 = ':' in dst
  s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_RAW,
                    socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP)
  ident, seq, t0 = os.getpid() & 0xffff, 0, time.monotonic()
  request, reply = (128, 129) if v6 else (8, 0)
  while time.monotonic() < t0 + timeout:
      seq += 1
      body = struct.pack('!BBHHH', request, 0, 0, ident, seq) + b'vpnstat'
      if not v6: body = struct.pack('!BBHHH', request, 0, checksum(body), ident, seq) + b'vpnstat'
      s.sendto(body, (dst, 0))
      end = min(t0 + timeout, time.monotonic() + 0.2)
      while time.monotonic() < end:
          s.settimeout(max(0.001, end - time.monotonic()))
          try: data, source = s.recvfrom(2048)
          except socket.timeout: break
          if not v6: data = data[(data[0] & 15) * 4:]
          if len(data) >= 8 and struct.unpack('!BBHHH', data[:8])[0] == reply and \\
                  struct.unpack('!BBHHH', data[:8])[3] == ident:
              print('reply from %s after %.1f ms' % (source[0], (time.monotonic() - t0) * 1000)); sys.exit(0)
  print('no reply from %s within %.1f s' % (dst, timeout)); sys.exit(1)
  """

// MARK: - Unix sockets (wireguard-go's UAPI, OpenVPN's management interface)

/// A connected AF_UNIX stream socket, for line protocols.
final class UnixSocketConversation: @unchecked Sendable {
  private let fd: Int32
  private var buffer = Data()

  init(path: String) throws {
    fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TestSetupError("socket: \(String(cString: strerror(errno)))") }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
      close(fd)
      throw TestSetupError("socket path too long: \(path)")
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    let rc = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard rc == 0 else {
      let message = String(cString: strerror(errno))
      close(fd)
      throw TestSetupError("connect \(path): \(message)")
    }
  }

  func send(_ text: String) throws {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let written = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else { throw TestSetupError("send: \(String(cString: strerror(errno)))") }
      offset += written
    }
  }

  /// Reads until `complete` holds for what was read since the last call (or the peer closes);
  /// returns that text and keeps nothing.
  func read(timeout: TimeInterval = 5, until complete: (String) -> Bool) throws -> String {
    let deadline = Date().addingTimeInterval(timeout)
    var chunk = [UInt8](repeating: 0, count: 4096)
    while !complete(String(decoding: buffer, as: UTF8.self)) {
      let left = deadline.timeIntervalSinceNow
      if left <= 0 {
        throw TestSetupError("timed out reading the socket; got: \(String(decoding: buffer, as: UTF8.self))")
      }
      var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let ready = poll(&descriptor, 1, Int32(max(1, left * 1000)))
      if ready < 0 && errno == EINTR { continue }
      guard ready > 0 else { continue }
      let count = recv(fd, &chunk, chunk.count, 0)
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      buffer.append(contentsOf: chunk[0..<count])
    }
    defer { buffer.removeAll() }
    return String(decoding: buffer, as: UTF8.self)
  }

  deinit { close(fd) }
}

// MARK: - WireGuard (wg-quick + wireguard-go)

/// One peer as `wg show NAME dump` or the UAPI `get=1` answer describes it.
struct WireGuardPeer {
  /// Base64 (as `wg` prints it); the UAPI speaks hex, converted here.
  var publicKey: String
  var endpoint: String?
  var allowedIPs: [String]
  /// nil: no handshake yet (the kernel and wireguard-go say 0).
  var latestHandshake: Date?
  var rxBytes: UInt64
  var txBytes: UInt64
}

/// One side of a WireGuard tunnel: a wg-quick configuration in a namespace, run in a mount
/// namespace of its own with `dir/run` bound at /run/wireguard (wireguard-go's control socket
/// would otherwise be `/run/wireguard/NAME.sock` shared by every namespace on the machine).
final class WireGuardSide: @unchecked Sendable {
  let ns: TestNamespace
  let interface: String
  let directory: String
  let privateKey: String
  let publicKey: String
  /// The tunnel's inner addresses, with prefix length.
  let address: String
  let address6: String
  var configPath: String { directory + "/" + interface + ".conf" }
  /// Bound at /run/wireguard in every command this side runs.
  var socketDirectory: String { directory + "/run" }
  /// wireguard-go's control socket, reachable from the test's own mount namespace at this path.
  var controlSocket: String { socketDirectory + "/" + interface + ".sock" }

  /// wg-quick's switches for wireguard-go on a kernel without the wireguard module.
  static let environment = [
    "WG_QUICK_USERSPACE_IMPLEMENTATION": "wireguard-go", "WG_I_PREFER_BUGGY_USERSPACE_TO_POLISHED_KMOD": "1",
  ]

  init(ns: TestNamespace, interface: String, directory: String, address: String, address6: String) throws {
    self.ns = ns
    self.interface = interface
    self.directory = directory
    self.address = address
    self.address6 = address6
    try FileManager.default.createDirectory(atPath: directory + "/run", withIntermediateDirectories: true)
    let generated = try VPNStatTestSupport.run("/usr/bin/wg", ["genkey"])
    guard generated.status == 0 else { throw TestSetupError("wg genkey: \(generated.errors)") }
    privateKey = generated.output.trimmingCharacters(in: .whitespacesAndNewlines)
    let derived = try VPNStatTestSupport.run("/usr/bin/wg", ["pubkey"], input: Data((privateKey + "\n").utf8))
    guard derived.status == 0 else { throw TestSetupError("wg pubkey: \(derived.errors)") }
    publicKey = derived.output.trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Writes the wg-quick configuration: this side's keys and addresses, a ListenPort, `hooks`
  /// (whole lines such as `PreUp = /path/vpnstat session check --db DB`) in [Interface], and the
  /// peer. `allowedIPs` nil: the peer's two addresses only; ["0.0.0.0/0", "::/0"] makes a full
  /// tunnel (fwmark rule + table 51820; needs nft). `peerLines`: more lines for [Peer]
  /// (`PersistentKeepalive = 25`: a handshake at once, without traffic).
  func writeConfig(
    peer: WireGuardSide, endpoint: String, hooks: [String] = [], allowedIPs: [String]? = nil, peerLines: [String] = []
  ) throws {
    let peerAddresses = [peer.address, peer.address6].map {
      String($0.split(separator: "/")[0]) + ($0.contains(":") ? "/128" : "/32")
    }
    let lines =
      [
        "[Interface]", "PrivateKey = \(privateKey)", "Address = \(address), \(address6)", "ListenPort = 51820",
      ] + hooks + [
        "", "[Peer]", "PublicKey = \(peer.publicKey)", "Endpoint = \(endpoint):51820",
        "AllowedIPs = \((allowedIPs ?? peerAddresses).joined(separator: ", "))",
      ] + peerLines
    try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: configPath))
    chmod(configPath, 0o600)
  }

  /// Runs a program inside the namespace and this side's mount namespace (/run/wireguard bound).
  /// The mount point is made first: /run/wireguard may not exist on a fresh machine.
  @discardableResult
  func run(_ program: String, _ arguments: [String], timeout: TimeInterval = 30) throws -> CommandResult {
    try ns.run("/usr/bin/unshare", wrapped(program, arguments), environment: Self.environment, timeout: timeout)
  }

  /// Starts a program in the background the way `run` runs one (an enforcer that must reach
  /// wireguard-go's socket to run `wg-quick down`).
  func start(_ program: String, _ arguments: [String]) throws -> BackgroundProcess {
    try ns.start("/usr/bin/unshare", wrapped(program, arguments), environment: Self.environment)
  }

  private func wrapped(_ program: String, _ arguments: [String]) -> [String] {
    [
      "-m", "--propagation", "private", "/bin/sh", "-c",
      "mkdir -p /run/wireguard && mount --bind \"$0\" /run/wireguard && exec \"$@\"", socketDirectory, program,
    ] + arguments
  }

  /// `wg-quick up CONF`.
  @discardableResult
  func up() throws -> CommandResult { try run("/usr/bin/wg-quick", ["up", configPath]) }

  /// `wg-quick down CONF`.
  @discardableResult
  func down() throws -> CommandResult { try run("/usr/bin/wg-quick", ["down", configPath]) }

  /// `wg ARGUMENTS` in this side's mount namespace (`show NAME dump`, `latest-handshakes` …).
  func wg(_ arguments: String...) throws -> CommandResult { try run("/usr/bin/wg", arguments) }

  /// The peers from `wg show NAME dump` (tab-separated; the first line is the interface).
  func dump() throws -> [WireGuardPeer] {
    let result = try run("/usr/bin/wg", ["show", interface, "dump"])
    guard result.status == 0 else { throw TestSetupError("wg show \(interface) dump: \(result.errors)") }
    return result.output.split(separator: "\n").dropFirst().compactMap { line in
      let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
      guard fields.count >= 8 else { return nil }
      let handshake = UInt64(fields[4]) ?? 0
      return WireGuardPeer(
        publicKey: fields[0], endpoint: fields[2] == "(none)" ? nil : fields[2],
        allowedIPs: fields[3].split(separator: ",").map(String.init),
        latestHandshake: handshake == 0 ? nil : Date(timeIntervalSince1970: TimeInterval(handshake)),
        rxBytes: UInt64(fields[5]) ?? 0, txBytes: UInt64(fields[6]) ?? 0)
    }
  }

  /// The raw answer of wireguard-go's control socket to `get=1\n\n`: `key=value` lines, ending
  /// with `errno=0` and an empty line. Read straight from the socket's path, no mount namespace.
  func uapiGet() throws -> String {
    let conversation = try UnixSocketConversation(path: controlSocket)
    try conversation.send("get=1\n\n")
    return try conversation.read { $0.hasSuffix("\n\n") }
  }

  /// The peers from the UAPI answer (`public_key=` hex starts a peer; `last_handshake_time_sec`
  /// and `_nsec`; `rx_bytes`, `tx_bytes`; `endpoint`; `allowed_ip` repeated).
  func uapiPeers() throws -> [WireGuardPeer] {
    var peers: [WireGuardPeer] = []
    var seconds: UInt64 = 0
    for line in try uapiGet().split(separator: "\n") {
      guard let equals = line.firstIndex(of: "=") else { continue }
      let key = line[..<equals]
      let value = String(line[line.index(after: equals)...])
      if key == "public_key" {
        peers.append(
          WireGuardPeer(
            publicKey: base64(fromHex: value), endpoint: nil, allowedIPs: [], latestHandshake: nil, rxBytes: 0,
            txBytes: 0))
        continue
      }
      guard !peers.isEmpty else { continue }
      switch key {
      case "endpoint": peers[peers.count - 1].endpoint = value
      case "allowed_ip": peers[peers.count - 1].allowedIPs.append(value)
      case "rx_bytes": peers[peers.count - 1].rxBytes = UInt64(value) ?? 0
      case "tx_bytes": peers[peers.count - 1].txBytes = UInt64(value) ?? 0
      case "last_handshake_time_sec": seconds = UInt64(value) ?? 0
      case "last_handshake_time_nsec":
        let nanoseconds = UInt64(value) ?? 0
        if seconds != 0 || nanoseconds != 0 {
          peers[peers.count - 1].latestHandshake = Date(
            timeIntervalSince1970: TimeInterval(seconds) + TimeInterval(nanoseconds) / 1e9)
        }
      default: break
      }
    }
    return peers
  }

  /// The wireguard-go processes holding this side's tun.
  func holders() -> [TunHolder] {
    guard let inode = ns.inode else { return [] }
    return tunHolders(device: interface, netnsInode: inode)
  }
}

/// Hex (UAPI) to base64 (wg's own output), for keys.
func base64(fromHex hex: String) -> String {
  var bytes: [UInt8] = []
  var index = hex.startIndex
  while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
    bytes.append(UInt8(hex[index..<next], radix: 16) ?? 0)
    index = next
  }
  return Data(bytes).base64EncodedString()
}

/// Two namespaces joined by a veth, a WireGuard tunnel between them through wg-quick and
/// wireguard-go. `left` and `right` are configured (not up): call `up()` on each.
/// Addresses: veth 169.254.S.1/.2 (S = subnet), tunnel 169.254.S.65/.66 and fd00:S::1/::2.
final class WireGuardPair: @unchecked Sendable {
  let link: VethPair
  let directory: TemporaryDirectory
  let left: WireGuardSide
  let right: WireGuardSide

  /// `leftHooks`: lines for the left side's [Interface] (PreUp = …). `fullTunnelLeft`: the left
  /// side sends everything (AllowedIPs 0.0.0.0/0, ::/0) through the tunnel. `leftPeerLines`:
  /// lines for the left side's [Peer] (PersistentKeepalive).
  init(
    _ label: String, subnet: Int, interface: String = "wg0", leftHooks: [String] = [], fullTunnelLeft: Bool = false,
    leftPeerLines: [String] = []
  ) throws {
    try RealVPNTool.require("wg", "wg-quick", "wireguard-go", "unshare", "mount")
    if fullTunnelLeft { try RealVPNTool.require("nft") }
    link = try VethPair(label, subnet: subnet)
    directory = try TemporaryDirectory(label)
    left = try WireGuardSide(
      ns: link.left, interface: interface, directory: directory.file("left"), address: "169.254.\(subnet).65/30",
      address6: "fd00:\(subnet)::1/64")
    right = try WireGuardSide(
      ns: link.right, interface: interface, directory: directory.file("right"), address: "169.254.\(subnet).66/30",
      address6: "fd00:\(subnet)::2/64")
    try left.writeConfig(
      peer: right, endpoint: link.rightAddress, hooks: leftHooks,
      allowedIPs: fullTunnelLeft ? ["0.0.0.0/0", "::/0"] : nil, peerLines: leftPeerLines)
    try right.writeConfig(peer: left, endpoint: link.leftAddress)
  }

  /// Brings both sides up with wg-quick; throws with wg-quick's words when one fails.
  func upBoth() throws {
    for side in [left, right] {
      let result = try side.up()
      if result.status != 0 { throw TestSetupError("wg-quick up \(side.configPath) failed: \(result.errors)") }
    }
  }

  deinit {
    // wireguard-go is a daemon (its parent is PID 1): it would keep the namespace alive.
    link.left.stopAllProcesses()
    link.right.stopAllProcesses()
  }
}

// MARK: - OpenVPN

/// An OpenVPN point-to-point tunnel between two namespaces with a static key (`--secret`,
/// deprecated in 2.6 but working): the server on the right, the client on the left with a
/// management socket. Device `tunN` on both sides; inner addresses 169.254.S.65 (client) and
/// .66 (server).
final class OpenVPNPair: @unchecked Sendable {
  let link: VethPair
  let directory: TemporaryDirectory
  let device: String
  let clientAddress: String
  let serverAddress: String
  var server: BackgroundProcess?
  var client: BackgroundProcess?
  var key: String { directory.file("static.key") }
  var managementSocket: String { directory.file("client.mgmt") }

  init(_ label: String, subnet: Int, device: String = "tun7") throws {
    try RealVPNTool.require("openvpn")
    link = try VethPair(label, subnet: subnet)
    directory = try TemporaryDirectory(label)
    self.device = device
    clientAddress = "169.254.\(subnet).65"
    serverAddress = "169.254.\(subnet).66"
    let generated = try VPNStatTestSupport.run("/usr/sbin/openvpn", ["--genkey", "secret", key])
    guard generated.status == 0 else { throw TestSetupError("openvpn --genkey: \(generated.errors)") }
  }

  /// The arguments both sides share. `--ping 1`: static-key peers find each other on the first
  /// ping (the default waits up to ~4 s); `--ping-restart 5`: a lost peer shows as RECONNECTING.
  private func common(remote: String, local: String, peer: String, direction: String) -> [String] {
    [
      "--dev", device, "--dev-type", "tun", "--proto", "udp", "--lport", "1194", "--rport", "1194",
      "--remote", remote, "--ifconfig", local, peer, "--secret", key, direction, "--cipher", "AES-256-CBC",
      "--ping", "1", "--ping-restart", "5", "--verb", "3",
    ]
  }

  /// Starts the server (right); returns once its socket is set up.
  func startServer(extra: [String] = []) throws {
    let process = try link.right.start(
      "/usr/sbin/openvpn",
      common(remote: link.leftAddress, local: serverAddress, peer: clientAddress, direction: "1") + extra)
    server = process
    try process.waitFor("UDPv4 link remote")
  }

  /// Starts the client (left) with `--management SOCKET unix`; returns once the socket answers.
  /// Without `management`, returns once its tun exists.
  func startClient(extra: [String] = [], management: Bool = true) throws {
    let process = try link.left.start(
      "/usr/sbin/openvpn",
      common(remote: link.rightAddress, local: clientAddress, peer: serverAddress, direction: "0")
        + (management ? ["--management", managementSocket, "unix"] : []) + extra)
    client = process
    let answered = waitUntil(timeout: 10) {
      management ? (try? UnixSocketConversation(path: managementSocket)) != nil : link.left.hasLink(device)
    }
    if answered == nil { throw TestSetupError("no management socket or tun: \(process.output)") }
  }

  /// Sends one management command to the client (see `openVPNManagement`).
  func management(_ command: String, timeout: TimeInterval = 5) throws -> String {
    try openVPNManagement(managementSocket, command, timeout: timeout)
  }

  /// The client's current state (`CONNECTING`, `ASSIGN_IP`, `CONNECTED`, `RECONNECTING`, …):
  /// the second field of `state`'s line `TIME,STATE,DETAIL,LOCAL_IP,REMOTE_IP,REMOTE_PORT,,`.
  func state() throws -> String { openVPNStateName(try management("state")) }

  /// Polls `state` until it is `wanted`; returns when, or nil.
  func waitForState(_ wanted: String, timeout: TimeInterval = 10) -> Date? {
    waitUntil(timeout: timeout) { (try? state()) == wanted }
  }

  deinit {
    client?.stop()
    server?.stop()
    link.left.stopAllProcesses()
    link.right.stopAllProcesses()
  }
}

/// Sends one command to an OpenVPN management socket and returns its answer: the lines up to
/// `END` (state, status, version …) or the one `SUCCESS:`/`ERROR:` line, without the real-time
/// `>…` notifications. Each call is a new connection (OpenVPN greets it with `>INFO:`).
func openVPNManagement(_ socket: String, _ command: String, timeout: TimeInterval = 5) throws -> String {
  let conversation = try UnixSocketConversation(path: socket)
  _ = try conversation.read(timeout: timeout) { $0.contains(">INFO:") && $0.hasSuffix("\r\n") }
  try conversation.send(command + "\n")
  func lines(_ text: String) -> [String] {
    text.components(separatedBy: "\r\n").filter { !$0.hasPrefix(">") && !$0.isEmpty }
  }
  let answer = try conversation.read(timeout: timeout) { text in
    lines(text).contains("END") || lines(text).contains { $0.hasPrefix("SUCCESS:") || $0.hasPrefix("ERROR:") }
  }
  return lines(answer).joined(separator: "\n")
}

/// The second field of a `state` line `TIME,STATE,DETAIL,LOCAL_IP,REMOTE_IP,REMOTE_PORT,,`.
func openVPNStateName(_ answer: String) -> String {
  let line = answer.split(separator: "\n").first { $0 != "END" } ?? ""
  let fields = line.split(separator: ",", omittingEmptySubsequences: false)
  return fields.count > 1 ? String(fields[1]) : ""
}

// MARK: - NetworkManager

/// NetworkManager 1.42 running inside a network namespace with a D-Bus system bus of its own, in
/// a mount namespace of its own (kept by a holder process): /run is a fresh tmpfs there (its own /run/dbus and
/// /run/NetworkManager), /sys is the namespace's own sysfs mounted read-only (so NM does not wait
/// for udev, which never runs there, before managing a device such as a veth), and
/// /etc/NetworkManager and /var/lib/NetworkManager are directories of the test. Every `nmcli`
/// runs through nsenter into both namespaces. Never start NetworkManager outside such a
/// namespace: it would take over the machine's interfaces.
final class NetworkManagerNamespace: @unchecked Sendable {
  let ns: TestNamespace
  let directory: TemporaryDirectory
  /// The process that holds the mount namespace (a `sleep` inside it).
  private var holder: BackgroundProcess?
  private(set) var daemon: BackgroundProcess?
  /// Bound at /etc/NetworkManager: put dispatcher scripts in `dispatcher.d/` (and `pre-up.d/`).
  var etc: String { directory.file("etc") }
  var connections: String { directory.file("connections") }

  /// In a namespace of its own.
  convenience init(_ label: String) throws {
    try self.init(label, in: try TestNamespace(label))
  }

  /// In a namespace the test made (e.g. one side of a VethPair, to reach a VPN server).
  init(_ label: String, in ns: TestNamespace) throws {
    try RealVPNTool.require("NetworkManager", "nmcli", "dbus-daemon", "nsenter", "unshare", "mount", "umount")
    self.ns = ns
    directory = try TemporaryDirectory(label)
    do {
      try start()
    } catch {
      cleanUp()
      throw error
    }
  }

  private func start() throws {
    let fm = FileManager.default
    for path in [
      directory.file("varlib"), connections, etc + "/dispatcher.d/pre-up.d",
      etc + "/dispatcher.d/pre-down.d", etc + "/dispatcher.d/no-wait.d", etc + "/conf.d",
    ] {
      try fm.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    chmod(connections, 0o700)
    let config = directory.file("NetworkManager.conf")
    let text = """
      [main]
      dns=none
      rc-manager=unmanaged
      no-auto-default=*
      plugins=keyfile

      [keyfile]
      path=\(connections)

      [logging]
      level=INFO

      """
    try Data(text.utf8).write(to: URL(fileURLWithPath: config))
    // The mount namespace lives as long as a holder process inside it; every other command enters
    // it through the holder (`nsenter -t PID -r -w`), which also keeps the root directory the
    // holder has: entering a bare mount namespace would reset it to the namespace's root, which is
    // not ours in a chroot such as fresh-ci's.
    let setup = """
      set -e
      mount -t tmpfs nm-run /run
      mkdir -p /run/dbus /run/NetworkManager /var/lib/NetworkManager /etc/NetworkManager
      mount -o remount,bind,ro /sys
      mount --bind "$0" /var/lib/NetworkManager
      mount --bind "$1" /etc/NetworkManager
      dbus-daemon --system --fork --print-pid
      echo ready
      exec sleep 1000000
      """
    let holder = try BackgroundProcess(
      "/usr/sbin/ip",
      [
        "netns", "exec", ns.name, "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", setup,
        directory.file("varlib"), etc,
      ])
    self.holder = holder
    try holder.waitFor("ready")
    let process = try BackgroundProcess(
      "/usr/bin/nsenter",
      enter + ["/usr/sbin/NetworkManager", "--config=" + config, "--no-daemon", "--debug", "--log-level=INFO"])
    daemon = process
    let ready = waitUntil(timeout: 15) {
      guard process.isRunning else { return true }
      return (try? nmcli("-t", "-f", "RUNNING", "general"))?.output.contains("running") == true
    }
    guard ready != nil, process.isRunning else {
      throw TestSetupError("NetworkManager did not come up: \(process.errors.suffix(2000))")
    }
  }

  private var enter: [String] { ["--target", String(holder?.pid ?? 0), "--mount", "--net", "--root", "--wd"] }

  private func checked(_ program: String, _ arguments: [String]) throws {
    let result = try VPNStatTestSupport.run(program, arguments)
    if result.status != 0 {
      throw TestSetupError("\(program) \(arguments.joined(separator: " ")) failed: \(result.errors)")
    }
  }

  /// Runs a program inside NM's network and mount namespaces.
  @discardableResult
  func run(_ program: String, _ arguments: [String], timeout: TimeInterval = 30) throws -> CommandResult {
    try VPNStatTestSupport.run("/usr/bin/nsenter", enter + [program] + arguments, timeout: timeout)
  }

  /// Starts a program in the background inside NM's network and mount namespaces (an enforcer,
  /// which must reach NetworkManager's D-Bus to deactivate a connection).
  func start(_ program: String, _ arguments: [String]) throws -> BackgroundProcess {
    try BackgroundProcess("/usr/bin/nsenter", enter + [program] + arguments)
  }

  /// `nmcli ARGUMENTS` against this NetworkManager.
  @discardableResult
  func nmcli(_ arguments: String...) throws -> CommandResult { try nmcli(arguments) }
  @discardableResult
  func nmcli(_ arguments: [String]) throws -> CommandResult { try run("/usr/bin/nmcli", arguments) }

  /// `nmcli` that must succeed.
  @discardableResult
  func nmcliChecked(_ arguments: String...) throws -> CommandResult { try nmcliChecked(arguments) }
  @discardableResult
  func nmcliChecked(_ arguments: [String]) throws -> CommandResult {
    let result = try nmcli(arguments)
    if result.status != 0 {
      throw TestSetupError("nmcli \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.errors)")
    }
    return result
  }

  /// Adds a `type tun` connection for `device` with an IPv4 address (IPv6 off); returns its UUID.
  /// Without an address IPv4 is off too, and activating takes 0.05 s instead of 2 s (NM waits on
  /// a manual address over a link without carrier).
  func addTunConnection(_ name: String, device: String, address: String?, autoconnect: Bool) throws -> String {
    let ipv4 = address.map { ["ipv4.method", "manual", "ipv4.addresses", $0] } ?? ["ipv4.method", "disabled"]
    try nmcliChecked(
      ["connection", "add", "type", "tun", "ifname", device, "con-name", name, "tun.mode", "tun"] + ipv4 + [
        "ipv6.method", "disabled", "connection.autoconnect", autoconnect ? "yes" : "no",
      ])
    return try nmcliChecked("-g", "connection.uuid", "connection", "show", name).output.trimmingCharacters(
      in: .whitespacesAndNewlines)
  }

  /// An OpenVPN connection through NetworkManager's plugin to `pair`'s server (static key, the
  /// pair's device, autoconnect off), with the primary connection it needs underneath (`base`, on
  /// the veth, the server as gateway) up; returns the VPN connection's UUID. The server must run
  /// with `--float`: NM's openvpn uses `--nobind`, a random source port.
  func addOpenVPNConnection(_ name: String, to pair: OpenVPNPair) throws -> String {
    try nmcliChecked(
      "connection", "add", "type", "ethernet", "ifname", pair.link.leftName, "con-name", "base", "ipv4.method",
      "manual", "ipv4.addresses", pair.link.leftAddress + "/30", "ipv4.gateway", pair.link.rightAddress,
      "ipv6.method", "disabled", "connection.autoconnect", "no")
    try nmcliChecked("connection", "up", "base")
    let data = [
      "connection-type=static-key", "static-key=\(pair.key)", "static-key-direction=0",
      "remote=\(pair.link.rightAddress)", "port=1194", "local-ip=\(pair.clientAddress)",
      "remote-ip=\(pair.serverAddress)", "cipher=AES-256-CBC", "ping=1", "dev=\(pair.device)", "dev-type=tun",
    ].joined(separator: ", ")
    try nmcliChecked(
      "connection", "add", "type", "vpn", "vpn-type", "openvpn", "con-name", name, "connection.autoconnect", "no",
      "vpn.data", data, "ipv6.method", "ignore")
    return try nmcliChecked("-g", "connection.uuid", "connection", "show", name).output
      .trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// One row of `nmcli -t -f NAME,UUID,TYPE,DEVICE,STATE connection show --active`.
  struct ActiveConnection: Equatable {
    var name: String
    var uuid: String
    var type: String
    var device: String
    var state: String
  }

  func activeConnections() throws -> [ActiveConnection] {
    let result = try nmcliChecked("-t", "-f", "NAME,UUID,TYPE,DEVICE,STATE", "connection", "show", "--active")
    return result.output.split(separator: "\n").compactMap { line in
      let fields = splitTerse(String(line))
      guard fields.count == 5 else { return nil }
      return ActiveConnection(name: fields[0], uuid: fields[1], type: fields[2], device: fields[3], state: fields[4])
    }
  }

  /// The connection NM has on a device: `nmcli -t -f GENERAL.STATE,GENERAL.CONNECTION,
  /// GENERAL.CON-UUID device show DEV` (state like `100 (connected)`); nil when NM does not know
  /// the device.
  func deviceConnection(_ device: String) throws -> (state: String, name: String, uuid: String)? {
    let result = try nmcli("-t", "-f", "GENERAL.STATE,GENERAL.CONNECTION,GENERAL.CON-UUID", "device", "show", device)
    guard result.status == 0 else { return nil }
    var values: [String: String] = [:]
    for line in result.output.split(separator: "\n") {
      guard let colon = line.firstIndex(of: ":") else { continue }
      values[String(line[..<colon])] = String(line[line.index(after: colon)...])
    }
    return (values["GENERAL.STATE"] ?? "", values["GENERAL.CONNECTION"] ?? "", values["GENERAL.CON-UUID"] ?? "")
  }

  /// `connection.autoconnect` of a connection.
  func autoconnect(_ connection: String) throws -> Bool {
    try nmcliChecked("-g", "connection.autoconnect", "connection", "show", connection).output.hasPrefix("yes")
  }

  /// Writes an executable dispatcher script (root-owned, 0755 as NM requires) at
  /// `/etc/NetworkManager/dispatcher.d/RELATIVE` (e.g. `pre-up.d/50-gate`).
  func dispatcherScript(_ relative: String, _ body: String) throws {
    let path = etc + "/dispatcher.d/" + relative
    try Data(("#!/bin/sh\n" + body + "\n").utf8).write(to: URL(fileURLWithPath: path))
    chmod(path, 0o755)
  }

  private func cleanUp() {
    daemon?.stop()
    // dbus-daemon (forked), nm-dispatcher and VPN plugins (bus-activated or spawned) are in the
    // namespace but not the test's children.
    ns.stopAllProcesses()
    holder?.stop()
  }

  deinit { cleanUp() }
}

/// Splits one line of `nmcli -t` output on unescaped colons (`\:` and `\\` are escapes): the
/// engine's own reading, so the harness and vpnstat agree on what nmcli said.
func splitTerse(_ line: String) -> [String] { NetworkManagerControl.splitTerse(line) }
