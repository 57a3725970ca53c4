import VPNStatModel
import VPNStatSystem

/// wireguard-go's control protocol (WireGuard's "cross-platform userspace API"): the `get=1`
/// request and the parser of its answer, one `key=value` a line, the device's keys first, each
/// peer from its `public_key=` line on, `errno=N` and an empty line at the end.
///
/// The answer holds the device's private key and each peer's preshared key: those lines are
/// skipped without being looked at, and no error quotes a value from the answer — only line
/// numbers and the names of keys this parser knows.
package enum WireGuardUAPI {
  package static let request: [UInt8] = Array("get=1\n\n".utf8)

  /// The largest answer read: 4 MiB, about 20,000 peers with a few allowed IPs each.
  package static let answerLimit = 4 << 20

  /// Whether `answer` is whole: it ends with the empty line after `errno=`.
  package static func isComplete(_ answer: [UInt8]) -> Bool {
    answer.count >= 2 && answer[answer.count - 1] == 0x0A && answer[answer.count - 2] == 0x0A
  }

  /// Parses one answer to `get=1`.
  package static func parse(_ answer: [UInt8]) throws(WireGuardUnavailable) -> WireGuardDevice {
    var reader = AnswerReader()
    var start = 0
    while start < answer.count {
      let end = answer[start...].firstIndex(of: 0x0A) ?? answer.count
      let line = answer[start..<end]
      start = end + 1
      reader.lineNumber += 1
      if reader.finished {
        guard line.isEmpty, start >= answer.count else {
          throw .malformed("line \(reader.lineNumber) follows the errno line")
        }
        break
      }
      try reader.read(line)
    }
    guard reader.finished else { throw .malformed("the answer ends before its errno line") }
    return reader.device
  }

  /// An answer while its lines are read: the device so far, the peer being read, and whether
  /// the `errno=` line has come.
  struct AnswerReader {
    var device = WireGuardDevice()
    var peer: PeerFields?
    var finished = false
    var lineNumber = 0

    /// One `key=value` line: a key this parser does not know is skipped, one it knows is read.
    mutating func read(_ line: ArraySlice<UInt8>) throws(WireGuardUnavailable) {
      guard let equals = line.firstIndex(of: 0x3D) else {
        throw .malformed(
          line.isEmpty ? "line \(lineNumber) is empty before errno" : "line \(lineNumber) is not key=value")
      }
      let keyBytes = line[line.startIndex..<equals]
      let value = line[(equals + 1)...]
      guard let key = Key(keyBytes) else {
        // A key this parser does not know: a newer wireguard-go's, skipped (never quoted).
        guard keyBytes.count <= 64, keyBytes.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F }) else {
          throw .malformed("line \(lineNumber) has no valid key")
        }
        return
      }
      if key.belongsToPeer {
        guard peer != nil else { throw .malformed("line \(lineNumber): \(key.rawValue) before any public_key") }
        try readPeerField(key, value)
      } else {
        try readDeviceField(key, value)
      }
    }

    /// A device's line: its port and mark, a peer's start, the end.
    mutating func readDeviceField(_ key: Key, _ value: ArraySlice<UInt8>) throws(WireGuardUnavailable) {
      switch key {
      case .errno:
        let code = try Self.number(UInt32.self, key, value, line: lineNumber)
        if code != 0 { throw .failed("wireguard-go answered errno=\(code)") }
        if let peer { device.peers.append(try peer.make(lineNumber)) }
        peer = nil
        finished = true
      case .listenPort:
        guard peer == nil else { throw .malformed("line \(lineNumber): listen_port inside a peer") }
        device.listenPort = try Self.number(UInt16.self, key, value, line: lineNumber)
      case .fwmark:
        guard peer == nil else { throw .malformed("line \(lineNumber): fwmark inside a peer") }
        _ = try Self.number(UInt32.self, key, value, line: lineNumber)
      case .publicKey:
        guard let publicKey = WireGuardKey(hex: value) else {
          throw .malformed("line \(lineNumber): public_key is not 64 hexadecimal digits")
        }
        if let previous = peer { device.peers.append(try previous.make(lineNumber)) }
        peer = PeerFields(key: publicKey)
      case .privateKey:
        // A secret: not validated, not kept, not quoted.
        return
      default:
        // A peer's key: `readPeerField` reads it.
        return
      }
    }

    /// A line of the peer being read.
    mutating func readPeerField(_ key: Key, _ value: ArraySlice<UInt8>) throws(WireGuardUnavailable) {
      switch key {
      case .protocolVersion:
        _ = try Self.number(UInt32.self, key, value, line: lineNumber)
      case .endpoint:
        // An address and a port as wireguard-go prints them: printable ASCII, short.
        guard !value.isEmpty, value.count <= 128, value.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
          throw .malformed("line \(lineNumber): endpoint is not an address")
        }
        peer?.endpoint = String(decoding: value, as: UTF8.self)
      case .handshakeSeconds:
        peer?.seconds = try Self.number(UInt64.self, key, value, line: lineNumber)
      case .handshakeNanoseconds:
        let nanoseconds = try Self.number(UInt64.self, key, value, line: lineNumber)
        guard nanoseconds < 1_000_000_000 else {
          throw .malformed("line \(lineNumber): last_handshake_time_nsec is not below one second")
        }
        peer?.nanoseconds = nanoseconds
      case .rxBytes:
        peer?.rxBytes = try Self.number(UInt64.self, key, value, line: lineNumber)
      case .txBytes:
        peer?.txBytes = try Self.number(UInt64.self, key, value, line: lineNumber)
      case .keepalive:
        peer?.keepalive = try Self.number(UInt16.self, key, value, line: lineNumber)
      case .allowedIP:
        peer?.allowedIPs += 1
        if let range = IPRange(parsing: value), (peer?.ranges.count ?? .max) < WireGuardPeer.keptRanges {
          peer?.ranges.append(range)
        }
      case .presharedKey:
        // A secret: not validated, not kept, not quoted.
        return
      default:
        // A device's key: `readDeviceField` reads it.
        return
      }
    }

    /// `value` as a number of `type`; an error names the line and the key, never the value.
    static func number<T: FixedWidthInteger & UnsignedInteger>(
      _ type: T.Type, _ key: Key, _ value: ArraySlice<UInt8>, line lineNumber: Int
    ) throws(WireGuardUnavailable) -> T {
      guard let parsed = parseUnsigned(value).flatMap({ T(exactly: $0) }) else {
        throw .malformed("line \(lineNumber): \(key.rawValue) is not a number")
      }
      return parsed
    }
  }

  /// The keys of a `get=1` answer this parser reads (and the two it skips).
  enum Key: String {
    case privateKey = "private_key"
    case listenPort = "listen_port"
    case fwmark
    case publicKey = "public_key"
    case presharedKey = "preshared_key"
    case protocolVersion = "protocol_version"
    case endpoint
    case handshakeSeconds = "last_handshake_time_sec"
    case handshakeNanoseconds = "last_handshake_time_nsec"
    case rxBytes = "rx_bytes"
    case txBytes = "tx_bytes"
    case keepalive = "persistent_keepalive_interval"
    case allowedIP = "allowed_ip"
    case errno

    init?(_ bytes: ArraySlice<UInt8>) {
      guard bytes.count <= 32 else { return nil }
      self.init(rawValue: String(decoding: bytes, as: UTF8.self))
    }

    /// Keys that only follow a `public_key=` line.
    var belongsToPeer: Bool {
      switch self {
      case .presharedKey, .protocolVersion, .endpoint, .handshakeSeconds, .handshakeNanoseconds, .rxBytes,
        .txBytes, .keepalive, .allowedIP:
        true
      case .privateKey, .listenPort, .fwmark, .publicKey, .errno:
        false
      }
    }
  }

  /// One peer while its lines are read.
  struct PeerFields {
    var key: WireGuardKey
    var endpoint: String?
    var seconds: UInt64 = 0
    var nanoseconds: UInt64 = 0
    var rxBytes: UInt64 = 0
    var txBytes: UInt64 = 0
    var keepalive: UInt16 = 0
    var allowedIPs = 0
    var ranges: [IPRange] = []

    func make(_ lineNumber: Int) throws(WireGuardUnavailable) -> WireGuardPeer {
      var handshake: Timestamp?
      // 0 s and 0 ns: no handshake yet.
      if seconds != 0 || nanoseconds != 0 {
        guard let whole = Int64(exactly: seconds),
          let instant = Timestamp(checkedSeconds: whole, nanoseconds: Int64(nanoseconds))
        else { throw .malformed("before line \(lineNumber): last_handshake_time_sec is out of range") }
        handshake = instant
      }
      return WireGuardPeer(
        publicKey: key, endpoint: endpoint, latestHandshake: handshake, rxBytes: rxBytes, txBytes: txBytes,
        persistentKeepaliveSeconds: keepalive, allowedIPs: allowedIPs, allowedRanges: ranges)
    }
  }
}
