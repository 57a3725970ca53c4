/// A WireGuard public key: 32 bytes, shown as base64 the way `wg` prints it. Only public keys
/// have a type: a private or preshared key is never kept past the line or attribute that held it.
public struct WireGuardKey: Hashable, Sendable, CustomStringConvertible {
  public let bytes: [UInt8]

  /// 32 bytes, or nil.
  public init?(bytes: some Collection<UInt8>) {
    guard bytes.count == 32 else { return nil }
    self.bytes = Array(bytes)
  }

  /// The UAPI's form: 64 hexadecimal digits (either case), or nil.
  public init?(hex: some Collection<UInt8>) {
    guard hex.count == 64 else { return nil }
    var out = [UInt8]()
    out.reserveCapacity(32)
    var high: UInt8?
    for byte in hex {
      guard let value = hexValue(byte) else { return nil }
      if let first = high {
        out.append(first << 4 | value)
        high = nil
      } else {
        high = value
      }
    }
    bytes = out
  }

  /// Standard base64 with padding (44 characters), as `wg show` and configuration files spell keys.
  public var base64: String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out = [UInt8]()
    out.reserveCapacity(44)
    var index = 0
    while index < bytes.count {
      let chunk = bytes[index..<min(index + 3, bytes.count)]
      let value =
        UInt32(chunk[chunk.startIndex]) << 16
        | (chunk.count > 1 ? UInt32(chunk[chunk.startIndex + 1]) << 8 : 0)
        | (chunk.count > 2 ? UInt32(chunk[chunk.startIndex + 2]) : 0)
      out.append(alphabet[Int(value >> 18 & 63)])
      out.append(alphabet[Int(value >> 12 & 63)])
      out.append(chunk.count > 1 ? alphabet[Int(value >> 6 & 63)] : 0x3D)
      out.append(chunk.count > 2 ? alphabet[Int(value & 63)] : 0x3D)
      index += 3
    }
    return String(decoding: out, as: UTF8.self)
  }

  public var description: String { base64 }
}

/// One peer of a WireGuard device, as the device itself counts it. `rxBytes`/`txBytes` are the
/// encrypted side — UDP payloads with WireGuard's headers and padding — so they exceed the
/// interface's own (plaintext) counters.
public struct WireGuardPeer: Hashable, Sendable {
  public var publicKey: WireGuardKey
  /// `ADDRESS:PORT` (`[ADDRESS]:PORT` for IPv6), or nil when the peer has none yet.
  public var endpoint: String?
  /// The wall-clock instant of the latest completed handshake; nil: never.
  public var latestHandshake: Timestamp?
  public var rxBytes: UInt64
  public var txBytes: UInt64
  /// Persistent keepalive interval in seconds; 0 is off.
  public var persistentKeepaliveSeconds: UInt16
  /// How many allowed-IP ranges route to the peer.
  public var allowedIPs: Int
  /// The first of those ranges (at most `keptRanges`): where `connect` may send a datagram to
  /// make the peer shake hands.
  public var allowedRanges: [IPRange]

  /// How many of a peer's ranges are kept: a peer may route a whole table, `connect` needs one.
  public static let keptRanges = 16

  public init(
    publicKey: WireGuardKey, endpoint: String? = nil, latestHandshake: Timestamp? = nil, rxBytes: UInt64 = 0,
    txBytes: UInt64 = 0, persistentKeepaliveSeconds: UInt16 = 0, allowedIPs: Int = 0, allowedRanges: [IPRange] = []
  ) {
    self.publicKey = publicKey
    self.endpoint = endpoint
    self.latestHandshake = latestHandshake
    self.rxBytes = rxBytes
    self.txBytes = txBytes
    self.persistentKeepaliveSeconds = persistentKeepaliveSeconds
    self.allowedIPs = allowedIPs
    self.allowedRanges = allowedRanges
  }
}

/// What a WireGuard device says about itself: its listen port and its peers.
public struct WireGuardDevice: Hashable, Sendable {
  /// nil when the device reported none (an unconfigured device).
  public var listenPort: UInt16?
  public var peers: [WireGuardPeer]

  public init(listenPort: UInt16? = nil, peers: [WireGuardPeer] = []) {
    self.listenPort = listenPort
    self.peers = peers
  }

  /// The newest handshake over all peers; nil when no peer ever completed one.
  public var latestHandshake: Timestamp? { peers.compactMap(\.latestHandshake).max() }

  /// The peers' encrypted transfer, summed.
  public var peerTraffic: (rxBytes: UInt64, txBytes: UInt64) {
    peers.reduce((UInt64(0), UInt64(0))) { sum, peer in
      (sum.0 &+ peer.rxBytes, sum.1 &+ peer.txBytes)
    }
  }
}

/// Which of WireGuard's own interfaces answered.
public enum WireGuardSourceKind: String, Hashable, Sendable, CaseIterable {
  /// The kernel's `wireguard` generic netlink family (`WG_CMD_GET_DEVICE`).
  case netlink
  /// A userspace implementation's control socket, `/run/wireguard/NAME.sock` (`get=1`).
  case uapi
}

/// Why an interface is taken for a WireGuard tunnel. Printed as `found_by`.
public enum WireGuardEvidence: String, Hashable, Sendable, CaseIterable {
  /// The rtnetlink link kind is `wireguard`: the kernel's own WireGuard.
  case kind
  /// sysfs `uevent` says DEVTYPE=wireguard.
  case devtype
  /// A tun held open by wireguard-go in the same network namespace (`/proc/PID/fdinfo`'s `iff:`).
  case wireguardGo = "wireguard-go"
}

/// An interface that may be a WireGuard tunnel, and what it is known to be so far: the kernel's
/// WireGuard (kind or DEVTYPE), or a tun that is WireGuard only if wireguard-go holds it.
public struct WireGuardCandidate: Hashable, Sendable {
  public enum Implementation: Hashable, Sendable {
    /// The kernel's WireGuard: its netlink family answers for it.
    case kernel(WireGuardEvidence)
    /// A tun: WireGuard when a userspace implementation holds it.
    case tun
  }

  public var name: InterfaceName
  /// The instance (ifindex): what a reader may remember about a tun holds for this one only.
  public var index: Int32
  public var implementation: Implementation

  public init(name: InterfaceName, index: Int32, implementation: Implementation) {
    self.name = name
    self.index = index
    self.implementation = implementation
  }

  /// The candidate an interface's facts make, or nil when it cannot be WireGuard (any other kind).
  public init?(name: InterfaceName, index: Int32, facts: InterfaceFacts) {
    self.name = name
    self.index = index
    if facts.kind == "wireguard" {
      implementation = .kernel(.kind)
    } else if facts.devtype == "wireguard" {
      implementation = .kernel(.devtype)
    } else if facts.kind == "tun" || (facts.kind == nil && facts.hasTunFlags) {
      implementation = .tun
    } else {
      return nil
    }
  }

  /// The candidate for a link known by its rtnetlink kind alone (what `connect` has).
  public init?(name: InterfaceName, index: Int32, kind: String?) {
    self.init(name: name, index: index, facts: InterfaceFacts(kind: kind))
  }
}

/// Why WireGuard's own figures for a tunnel could not be read. Its text never holds anything
/// the device answered beyond a key name and a number: an answer may carry the private key.
public enum WireGuardUnavailable: Error, Hashable, Sendable, CustomStringConvertible {
  /// Not allowed to ask (no CAP_NET_ADMIN; the control socket belongs to another user).
  case notPermitted(String)
  /// Nothing answers for the device: no netlink family, no control socket.
  case noSource(String)
  /// The source did not answer, or stopped answering, within the timeout.
  case timedOut(Duration)
  /// The answer grew past the bound (bytes).
  case tooLarge(Int)
  /// The answer is not what WireGuard sends (where, never the value).
  case malformed(String)
  /// The source answered with an error, or the exchange failed.
  case failed(String)
  /// The device is not a WireGuard tunnel (for callers that named it, such as `connect`).
  case notWireGuard(InterfaceName)

  public var description: String {
    switch self {
    case .notPermitted(let why): "permission denied: \(why)"
    case .noSource(let why): why
    case .timedOut(let limit): "no answer within \(limit.nanoseconds / 1_000_000) ms"
    case .tooLarge(let bound): "the answer is larger than \(bound) bytes"
    case .malformed(let why): "not a WireGuard answer: \(why)"
    case .failed(let why): why
    case .notWireGuard(let name): "\(name.escaped) is not a WireGuard tunnel"
    }
  }
}

/// What vpnstat could learn of one WireGuard tunnel: the device as its source described it, or
/// why it could not be read.
public struct WireGuardStatus: Hashable, Sendable {
  public var evidence: WireGuardEvidence
  public var reading: Result<WireGuardReading, WireGuardUnavailable>

  public init(evidence: WireGuardEvidence, reading: Result<WireGuardReading, WireGuardUnavailable>) {
    self.evidence = evidence
    self.reading = reading
  }

  public var device: WireGuardDevice? { try? reading.get().device }
  public var source: WireGuardSourceKind? { try? reading.get().source }
  public var unavailable: WireGuardUnavailable? {
    if case .failure(let why) = reading { return why }
    return nil
  }
}

/// A device and the source that described it.
public struct WireGuardReading: Hashable, Sendable {
  public var device: WireGuardDevice
  public var source: WireGuardSourceKind
  public init(device: WireGuardDevice, source: WireGuardSourceKind) {
    self.device = device
    self.source = source
  }
}

/// WireGuard's own view of its tunnels: the kernel's netlink family, or wireguard-go's control
/// socket. The seam between the readers (kernel target) and their users (status, watch, and
/// `connect` confirming a handshake), so engine tests can stand in for it.
public protocol WireGuardSource {
  /// Reads each candidate, in order: its status, or nil when it is not a WireGuard tunnel after
  /// all (a tun no WireGuard implementation holds). Never throws and never hangs: each read is
  /// bounded, and what fails is a status that says why.
  mutating func read(_ candidates: [WireGuardCandidate]) -> [WireGuardStatus?]
}

extension WireGuardSource {
  /// The newest handshake of one device over all its peers (nil: none yet), or why it cannot be
  /// told: what `connect` compares with its start to know the tunnel is real.
  public mutating func latestHandshake(of candidate: WireGuardCandidate) -> Result<
    Timestamp?, WireGuardUnavailable
  > {
    guard let status = read([candidate]).first ?? nil else { return .failure(.notWireGuard(candidate.name)) }
    return status.reading.map(\.device.latestHandshake)
  }
}
