import CLinux
import VPNStatModel
import VPNStatSystem

/// The kernel's WireGuard through generic netlink: the family id from the controller
/// (`CTRL_CMD_GETFAMILY` "wireguard"), then a `WG_CMD_GET_DEVICE` dump for one device, whose
/// messages are assembled into a `WireGuardDevice` (linux/wireguard.h: a device's peers may be
/// split over several messages, a peer continued in the next one by its public key and the
/// rest of its allowed IPs). Private and preshared keys are skipped, never copied.
package enum WireGuardNetlink {
  /// `WG_GENL_NAME`.
  static let familyName = "wireguard"
  /// `GENL_ID_CTRL` (`NLMSG_MIN_TYPE`): the controller's own family id.
  static let controllerID = UInt16(NLMSG_MIN_TYPE)
  /// `GENL_HDRLEN`: cmd, version, reserved.
  static let headerLength = 4

  /// `CTRL_CMD_GETFAMILY` for "wireguard".
  package static func familyRequest() -> [UInt8] {
    [UInt8(CTRL_CMD_GETFAMILY), 1, 0, 0]
      + RouteAttributes.encode(type: UInt16(CTRL_ATTR_FAMILY_NAME), value: Array(familyName.utf8) + [0])
  }

  /// The family id in the controller's answer (`CTRL_ATTR_FAMILY_ID`), or nil.
  package static func familyID(in payload: UnsafeRawBufferPointer) -> UInt16? {
    guard payload.count >= headerLength else { return nil }
    for (type, value) in RouteAttributes(UnsafeRawBufferPointer(rebasing: payload[headerLength...]))
    where type == UInt16(CTRL_ATTR_FAMILY_ID) && value.count == 2 {
      return value.loadUnaligned(as: UInt16.self)
    }
    return nil
  }

  /// `WG_CMD_GET_DEVICE` for the device named `name` (a dump: the answer may take several messages).
  package static func deviceRequest(_ name: InterfaceName) throws(WireGuardUnavailable) -> [UInt8] {
    guard name.kernelProblem == nil else { throw .noSource("\(name.escaped) cannot name a device") }
    return [UInt8(WG_CMD_GET_DEVICE.rawValue), UInt8(WG_GENL_VERSION), 0, 0]
      + RouteAttributes.encode(type: UInt16(WGDEVICE_A_IFNAME.rawValue), value: name.bytes + [0])
  }

  /// Builds one device from the messages of a `WG_CMD_GET_DEVICE` dump, in order.
  package struct DeviceAssembler {
    package private(set) var device = WireGuardDevice()
    /// Messages added; a dump with none did not describe a device.
    package private(set) var messages = 0

    package init() {}

    /// Adds the payload (after the netlink header) of one message.
    package mutating func add(_ payload: UnsafeRawBufferPointer) throws(WireGuardUnavailable) {
      guard payload.count >= headerLength else { throw .malformed("a message shorter than its header") }
      let attributes = UnsafeRawBufferPointer(rebasing: payload[headerLength...])
      guard WireGuardNetlink.isWhole(attributes) else { throw .malformed("a device message is cut short") }
      messages += 1
      for (type, value) in RouteAttributes(attributes) {
        switch UInt32(type) {
        case WGDEVICE_A_LISTEN_PORT.rawValue:
          guard value.count == 2 else { throw .malformed("the listen port is not 2 bytes") }
          device.listenPort = value.loadUnaligned(as: UInt16.self)
        case WGDEVICE_A_PEERS.rawValue:
          guard WireGuardNetlink.isWhole(value) else { throw .malformed("the peer list is cut short") }
          for (_, peer) in RouteAttributes(value) { try add(peer: peer) }
        default:
          // The private key, the public key, the name, the index, the fwmark: not kept.
          continue
        }
      }
    }

    mutating func add(peer bytes: UnsafeRawBufferPointer) throws(WireGuardUnavailable) {
      guard WireGuardNetlink.isWhole(bytes) else { throw .malformed("a peer is cut short") }
      var key: WireGuardKey?
      var endpoint: String?
      var handshake: Timestamp??
      var rx: UInt64?
      var tx: UInt64?
      var keepalive: UInt16?
      var allowed = 0
      var ranges: [IPRange] = []
      for (type, value) in RouteAttributes(bytes) {
        switch UInt32(type) {
        case WGPEER_A_PUBLIC_KEY.rawValue:
          guard let parsed = WireGuardKey(bytes: value) else { throw .malformed("a peer's public key is not 32 bytes") }
          key = parsed
        case WGPEER_A_ENDPOINT.rawValue:
          guard let parsed = WireGuardNetlink.endpoint(value) else {
            throw .malformed("a peer's endpoint is no address")
          }
          endpoint = parsed
        case WGPEER_A_LAST_HANDSHAKE_TIME.rawValue:
          // struct __kernel_timespec: two signed 64-bit fields; both 0 means never.
          guard value.count == 16 else { throw .malformed("a peer's handshake time is not 16 bytes") }
          let seconds = value.loadUnaligned(fromByteOffset: 0, as: Int64.self)
          let nanoseconds = value.loadUnaligned(fromByteOffset: 8, as: Int64.self)
          if seconds == 0 && nanoseconds == 0 {
            handshake = .some(nil)
          } else {
            guard seconds > 0, (0..<1_000_000_000).contains(nanoseconds),
              let instant = Timestamp(checkedSeconds: seconds, nanoseconds: nanoseconds)
            else { throw .malformed("a peer's handshake time is out of range") }
            handshake = instant
          }
        case WGPEER_A_RX_BYTES.rawValue:
          guard value.count == 8 else { throw .malformed("a peer's received bytes are not 8 bytes") }
          rx = value.loadUnaligned(as: UInt64.self)
        case WGPEER_A_TX_BYTES.rawValue:
          guard value.count == 8 else { throw .malformed("a peer's sent bytes are not 8 bytes") }
          tx = value.loadUnaligned(as: UInt64.self)
        case WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL.rawValue:
          guard value.count == 2 else { throw .malformed("a peer's keepalive is not 2 bytes") }
          keepalive = value.loadUnaligned(as: UInt16.self)
        case WGPEER_A_ALLOWEDIPS.rawValue:
          guard WireGuardNetlink.isWhole(value) else { throw .malformed("a peer's allowed IPs are cut short") }
          for (_, entry) in RouteAttributes(value) {
            allowed += 1
            if ranges.count < WireGuardPeer.keptRanges, let range = WireGuardNetlink.range(entry) {
              ranges.append(range)
            }
          }
        default:
          // The preshared key, flags, protocol version: not kept.
          continue
        }
      }
      guard let key else { throw .malformed("a peer without its public key") }
      // A peer continued from the previous message: same key, more allowed IPs.
      if let last = device.peers.indices.last, device.peers[last].publicKey == key {
        device.peers[last].allowedIPs += allowed
        device.peers[last].allowedRanges += ranges.prefix(
          WireGuardPeer.keptRanges - device.peers[last].allowedRanges.count)
        if let endpoint { device.peers[last].endpoint = endpoint }
        if let handshake { device.peers[last].latestHandshake = handshake }
        if let rx { device.peers[last].rxBytes = rx }
        if let tx { device.peers[last].txBytes = tx }
        if let keepalive { device.peers[last].persistentKeepaliveSeconds = keepalive }
        return
      }
      device.peers.append(
        WireGuardPeer(
          publicKey: key, endpoint: endpoint, latestHandshake: handshake ?? nil, rxBytes: rx ?? 0, txBytes: tx ?? 0,
          persistentKeepaliveSeconds: keepalive ?? 0, allowedIPs: allowed, allowedRanges: ranges))
    }
  }

  /// One allowed IP (`WGALLOWEDIP_A_FAMILY`, `_IPADDR`, `_CIDR_MASK`), or nil when it is not one.
  static func range(_ bytes: UnsafeRawBufferPointer) -> IPRange? {
    var family: UInt16?
    var address: [UInt8]?
    var length: UInt8?
    for (type, value) in RouteAttributes(bytes) {
      switch UInt32(type) {
      case WGALLOWEDIP_A_FAMILY.rawValue where value.count == 2: family = value.loadUnaligned(as: UInt16.self)
      case WGALLOWEDIP_A_IPADDR.rawValue: address = Array(value)
      case WGALLOWEDIP_A_CIDR_MASK.rawValue where value.count == 1: length = value[0]
      default: continue
      }
    }
    guard let family, let address, let length,
      (family == UInt16(AF_INET) && address.count == 4) || (family == UInt16(AF_INET6) && address.count == 16)
    else { return nil }
    return IPRange(address: address, prefixLength: Int(length))
  }

  /// True when `bytes` is a whole chain of attributes: every header in bounds, the last one
  /// ending at the end (within its padding). `RouteAttributes` stops quietly at a broken one.
  static func isWhole(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset + 4 <= bytes.count {
      let length = Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
      guard length >= 4, offset + length <= bytes.count else { return false }
      offset += Int(clinux_rta_align(UInt32(length)))
    }
    return offset >= bytes.count
  }

  /// A `struct sockaddr_in` or `sockaddr_in6` as `ADDRESS:PORT` or `[ADDRESS]:PORT`, the way
  /// `wg` prints endpoints; nil for anything else.
  static func endpoint(_ value: UnsafeRawBufferPointer) -> String? {
    guard value.count >= 4 else { return nil }
    let family = value.loadUnaligned(as: UInt16.self)
    let port = UInt16(bigEndian: value.loadUnaligned(fromByteOffset: 2, as: UInt16.self))
    if family == UInt16(AF_INET), value.count >= 8 {
      return (4..<8).map { String(value[$0]) }.joined(separator: ".") + ":\(port)"
    }
    if family == UInt16(AF_INET6), value.count >= 24 {
      return "[" + ipv6Text(Array(value[8..<24])) + "]:\(port)"
    }
    return nil
  }

  /// RFC 5952 text of an IPv6 address (`IPRange.text(of:)`).
  static func ipv6Text(_ bytes: [UInt8]) -> String { IPRange.text(of: bytes) }

  /// Reads device `name` from the kernel: resolves the family, then dumps the device. The
  /// socket is the caller's, so a long-running reader keeps one.
  package static func read(_ name: InterfaceName, socket: NetlinkSocket) throws(WireGuardUnavailable)
    -> WireGuardDevice
  {
    let family = try resolveFamily(socket)
    var assembler = DeviceAssembler()
    var failure: WireGuardUnavailable?
    do {
      try socket.dump(type: family, payload: try deviceRequest(name)) { message in
        guard failure == nil, message.type == family else { return }
        do {
          try assembler.add(message.payload)
        } catch let error as WireGuardUnavailable {
          failure = error
        } catch {
          failure = .failed("\(error)")
        }
      }
    } catch let error as Errno {
      throw unavailable(error, device: name)
    } catch let error as WireGuardUnavailable {
      throw error
    } catch {
      throw .failed("netlink: \(error)")
    }
    if let failure { throw failure }
    guard assembler.messages > 0 else { throw .noSource("the kernel's WireGuard did not describe \(name.escaped)") }
    return assembler.device
  }

  /// The family id of "wireguard"; `noSource` when the kernel has none (no wireguard module).
  static func resolveFamily(_ socket: NetlinkSocket) throws(WireGuardUnavailable) -> UInt16 {
    var found: UInt16?
    do {
      try socket.request(type: controllerID, payload: familyRequest()) { message in
        if message.type == controllerID, let id = familyID(in: message.payload) { found = id }
      }
    } catch let error as Errno where error == .noSuchFile {
      throw .noSource("the kernel has no WireGuard netlink family (no wireguard module)")
    } catch let error as Errno {
      throw unavailable(error, device: nil)
    } catch {
      throw .failed("netlink: \(error)")
    }
    guard let found else { throw .malformed("the netlink controller named no family id") }
    return found
  }

  static func unavailable(_ error: Errno, device: InterfaceName?) -> WireGuardUnavailable {
    if error.meansNotPermitted { return .notPermitted("reading WireGuard from the kernel needs CAP_NET_ADMIN") }
    if let device, error.meansVanished || error == .operationNotSupported {
      return .noSource("the kernel's WireGuard has no device \(device.escaped)")
    }
    return .failed("netlink: \(error)")
  }
}
