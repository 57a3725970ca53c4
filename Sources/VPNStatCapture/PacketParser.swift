@preconcurrency import CPcap
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// The link-layer framings vpnstat reads: what the kernel gives on a tun or wireguard device
/// (raw IP), on tap and veth (Ethernet), and on `any` (Linux cooked v1 or v2).
package enum CaptureLinkType: Hashable, Sendable {
  case rawIP
  case ethernet
  case linuxCooked
  case linuxCooked2

  /// The framing for a libpcap DLT value; nil for framings vpnstat does not parse.
  package init?(dlt: Int32) {
    switch dlt {
    case DLT_RAW, 101, DLT_IPV4, DLT_IPV6: self = .rawIP
    case DLT_EN10MB: self = .ethernet
    case DLT_LINUX_SLL: self = .linuxCooked
    case DLT_LINUX_SLL2: self = .linuxCooked2
    default: return nil
    }
  }

  /// The DLT value the capture files vpnstat writes carry.
  package var dlt: Int32 {
    switch self {
    case .rawIP: DLT_RAW
    case .ethernet: DLT_EN10MB
    case .linuxCooked: DLT_LINUX_SLL
    case .linuxCooked2: DLT_LINUX_SLL2
    }
  }

  /// Bytes of header that libpcap made up (Linux cooked headers) rather than the interface
  /// carried: not part of what the interface's counters count.
  package var pseudoHeaderLength: Int {
    switch self {
    case .rawIP, .ethernet: 0
    case .linuxCooked: 16
    case .linuxCooked2: 20
    }
  }

  /// libpcap's name for the framing, written here: asking libpcap loaded it (and its libraries)
  /// for a pcap file vpnstat reads itself (`ClassicPcapFile`). `ClassicPcapFileTests` compares them.
  package var name: String {
    switch self {
    case .rawIP: "RAW"
    case .ethernet: "EN10MB"
    case .linuxCooked: "LINUX_SLL"
    case .linuxCooked2: "LINUX_SLL2"
    }
  }

  /// libpcap's name for any DLT value, or `DLT n` when libpcap has none.
  package static func name(dlt: Int32) -> String {
    guard let name = pcap_datalink_val_to_name(dlt) else { return "DLT \(dlt)" }
    return String(cString: name)
  }
}

/// Which way a packet went, seen from this host.
package enum PacketDirection: Sendable, Hashable {
  case received
  case transmitted
}

/// What the flow table needs from one IP packet: the 5-tuple, the IP length, and the direction
/// when the link header says it (Linux cooked headers carry the packet type).
package struct PacketSummary: Sendable, Equatable {
  package var source: IPAddress
  package var destination: IPAddress
  package var sourcePort: UInt16
  package var destinationPort: UInt16
  package var ipProtocol: UInt8
  /// False for ICMP and protocols without ports, non-first fragments, and transport headers cut
  /// off by the snapshot length: such packets are keyed by protocol and addresses alone.
  package var portsKnown: Bool
  /// The packet's length from its IP header (what a tun's kernel counters count).
  package var ipLength: UInt32
  package var direction: PacketDirection?
}

/// The result of parsing one captured frame.
package enum ParsedFrame: Sendable, Equatable {
  case ip(PacketSummary)
  /// Not IPv4 or IPv6 (ARP, LLDP …): counted, not a flow.
  case notIP
  /// Claims to be IP but its header is cut short or inconsistent.
  case malformed
}

/// Reads link, IP and transport headers straight from the captured bytes. A pure function:
/// no allocation, no copies; every read is bounds-checked against what was captured.
package enum PacketParser {
  /// Parses a frame. `wireLength` is the frame's original length (pcap's `len`), used when the
  /// IP header carries no length (TSO/GSO super-packets with a zero total length).
  package static func parse(
    _ bytes: UnsafeRawBufferPointer, wireLength: Int, link: CaptureLinkType
  ) -> ParsedFrame {
    var offset = 0
    var direction: PacketDirection?
    var etherType: UInt16 = 0
    switch link {
    case .rawIP:
      guard let first = bytes.first else { return .malformed }
      switch first >> 4 {
      case 4: return parseIPv4(bytes, at: 0, wireLength: wireLength, direction: nil)
      case 6: return parseIPv6(bytes, at: 0, wireLength: wireLength, direction: nil)
      default: return .notIP
      }
    case .ethernet:
      guard bytes.count >= 14 else { return .malformed }
      etherType = load16(bytes, 12)
      offset = 14
      // 802.1Q and 802.1ad tags, up to two.
      var tags = 0
      while etherType == 0x8100 || etherType == 0x88A8, tags < 2 {
        guard bytes.count >= offset + 4 else { return .malformed }
        etherType = load16(bytes, offset + 2)
        offset += 4
        tags += 1
      }
    case .linuxCooked:
      guard bytes.count >= 16 else { return .malformed }
      direction = load16(bytes, 0) == 4 ? .transmitted : .received
      etherType = load16(bytes, 14)
      offset = 16
    case .linuxCooked2:
      guard bytes.count >= 20 else { return .malformed }
      etherType = load16(bytes, 0)
      direction = bytes[10] == 4 ? .transmitted : .received
      offset = 20
    }
    switch etherType {
    case 0x0800: return parseIPv4(bytes, at: offset, wireLength: wireLength, direction: direction)
    case 0x86DD: return parseIPv6(bytes, at: offset, wireLength: wireLength, direction: direction)
    default: return .notIP
    }
  }

  static func load16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
    UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
  }

  static func hasPorts(_ ipProtocol: UInt8) -> Bool {
    // TCP, UDP, DCCP, SCTP, UDP-Lite: source and destination port lead the header.
    ipProtocol == 6 || ipProtocol == 17 || ipProtocol == 33 || ipProtocol == 132
      || ipProtocol == 136
  }

  static func parseIPv4(
    _ bytes: UnsafeRawBufferPointer, at offset: Int, wireLength: Int, direction: PacketDirection?
  ) -> ParsedFrame {
    guard bytes.count >= offset + 20 else { return .malformed }
    let first = bytes[offset]
    let headerLength = Int(first & 0x0F) * 4
    guard first >> 4 == 4, headerLength >= 20 else { return .malformed }
    var length = UInt32(load16(bytes, offset + 2))
    if length == 0 { length = UInt32(max(0, wireLength - offset)) }
    let ipProtocol = bytes[offset + 9]
    let fragmentOffset = load16(bytes, offset + 6) & 0x1FFF
    var summary = PacketSummary(
      source: IPAddress(ipv4At: offset + 12, in: bytes),
      destination: IPAddress(ipv4At: offset + 16, in: bytes), sourcePort: 0, destinationPort: 0,
      ipProtocol: ipProtocol, portsKnown: false, ipLength: length, direction: direction)
    let transport = offset + headerLength
    if fragmentOffset == 0, hasPorts(ipProtocol), bytes.count >= transport + 4 {
      summary.sourcePort = load16(bytes, transport)
      summary.destinationPort = load16(bytes, transport + 2)
      summary.portsKnown = true
    }
    return .ip(summary)
  }

  static func parseIPv6(
    _ bytes: UnsafeRawBufferPointer, at offset: Int, wireLength: Int, direction: PacketDirection?
  ) -> ParsedFrame {
    guard bytes.count >= offset + 40, bytes[offset] >> 4 == 6 else { return .malformed }
    let payload = UInt32(load16(bytes, offset + 4))
    // A zero payload length is a jumbogram or a GSO super-packet: take the frame's length.
    let length = payload == 0 ? UInt32(max(0, wireLength - offset)) : 40 + payload
    var next = bytes[offset + 6]
    var summary = PacketSummary(
      source: IPAddress(ipv6At: offset + 8, in: bytes),
      destination: IPAddress(ipv6At: offset + 24, in: bytes), sourcePort: 0, destinationPort: 0,
      ipProtocol: next, portsKnown: false, ipLength: length, direction: direction)
    var cursor = offset + 40
    var firstFragment = true
    // Extension headers: hop-by-hop, routing, fragment, destination options, AH.
    for _ in 0..<8 {
      switch next {
      case 0, 43, 60:
        guard bytes.count >= cursor + 2 else {
          summary.ipProtocol = next
          return .ip(summary)
        }
        next = bytes[cursor]
        cursor += (Int(bytes[cursor + 1]) + 1) * 8
        continue
      case 44:
        guard bytes.count >= cursor + 8 else {
          summary.ipProtocol = next
          return .ip(summary)
        }
        if load16(bytes, cursor + 2) >> 3 != 0 { firstFragment = false }
        next = bytes[cursor]
        cursor += 8
        continue
      case 51:
        guard bytes.count >= cursor + 2 else {
          summary.ipProtocol = next
          return .ip(summary)
        }
        next = bytes[cursor]
        cursor += (Int(bytes[cursor + 1]) + 2) * 4
        continue
      default:
        break
      }
      break
    }
    summary.ipProtocol = next
    if firstFragment, hasPorts(next), bytes.count >= cursor + 4 {
      summary.sourcePort = load16(bytes, cursor)
      summary.destinationPort = load16(bytes, cursor + 2)
      summary.portsKnown = true
    }
    return .ip(summary)
  }

  /// The name vpnstat shows for an IP protocol number.
  package static func protocolName(_ number: UInt8) -> String {
    switch number {
    case 1: "icmp"
    case 2: "igmp"
    case 6: "tcp"
    case 17: "udp"
    case 33: "dccp"
    case 47: "gre"
    case 50: "esp"
    case 51: "ah"
    case 58: "icmpv6"
    case 132: "sctp"
    case 136: "udplite"
    default: "ip-proto-\(number)"
    }
  }
}
