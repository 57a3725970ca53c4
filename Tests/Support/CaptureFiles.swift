import Foundation

import VPNStatCapture
import VPNStatKernel
import VPNStatModel
import VPNStatSimulation
import VPNStatStore
import VPNStatSystem

/// One packet a test puts on the wire: endpoints, protocol and payload size. IP headers are
/// built from these, so expected totals follow from the same values.
struct TestPacket {
  var source: String
  var destination: String
  var ipProtocol: UInt8  // 6 tcp, 17 udp, 1 icmp, 58 icmpv6
  var sourcePort: UInt16 = 0
  var destinationPort: UInt16 = 0
  var payload: Int
  /// For the cooked link types: the packet went out (PACKET_OUTGOING).
  var outgoing = true
  var time: Int64 = 1_800_000_000_000_000_000

  var isIPv6: Bool { source.contains(":") }

  var transportHeaderLength: Int {
    switch ipProtocol {
    case 6: 20
    case 17: 8
    default: 8  // ICMP echo header
    }
  }
  /// The IP packet's length: what vpnstat must count.
  var ipLength: Int { (isIPv6 ? 40 : 20) + transportHeaderLength + payload }

  /// The IP packet's bytes.
  func ipBytes() -> [UInt8] {
    var transport = [UInt8](repeating: 0, count: transportHeaderLength + payload)
    if ipProtocol == 6 || ipProtocol == 17 {
      transport[0] = UInt8(sourcePort >> 8)
      transport[1] = UInt8(sourcePort & 0xFF)
      transport[2] = UInt8(destinationPort >> 8)
      transport[3] = UInt8(destinationPort & 0xFF)
    }
    if ipProtocol == 6 { transport[12] = 0x50 }
    if ipProtocol == 17 {
      transport[4] = UInt8((8 + payload) >> 8)
      transport[5] = UInt8((8 + payload) & 0xFF)
    }
    let src = IPAddress(parsing: source)!.networkBytes
    let dst = IPAddress(parsing: destination)!.networkBytes
    if isIPv6 {
      var header = [UInt8](repeating: 0, count: 40)
      header[0] = 0x60
      let payloadLength = transport.count
      header[4] = UInt8(payloadLength >> 8)
      header[5] = UInt8(payloadLength & 0xFF)
      header[6] = ipProtocol
      header[7] = 64
      header.replaceSubrange(8..<24, with: src)
      header.replaceSubrange(24..<40, with: dst)
      return header + transport
    }
    var header = [UInt8](repeating: 0, count: 20)
    header[0] = 0x45
    let total = 20 + transport.count
    header[2] = UInt8(total >> 8)
    header[3] = UInt8(total & 0xFF)
    header[8] = 64
    header[9] = ipProtocol
    header.replaceSubrange(12..<16, with: src[12..<16])
    header.replaceSubrange(16..<20, with: dst[12..<16])
    return header + transport
  }

  /// The frame as `link` carries it.
  func frame(_ link: CaptureLinkType) -> [UInt8] {
    let ip = ipBytes()
    let etherType: [UInt8] = isIPv6 ? [0x86, 0xDD] : [0x08, 0x00]
    switch link {
    case .rawIP:
      return ip
    case .ethernet:
      return [0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1] + etherType + ip
    case .linuxCooked:
      // Packet type, ARPHRD type, address length, address (8 bytes), protocol.
      return [0, outgoing ? 4 : 0, 0x03, 0x04, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0] + etherType + ip
    case .linuxCooked2:
      return etherType + [0, 0, 0, 0, 0, 7, 0, 1, outgoing ? 4 : 0, 6, 2, 0, 0, 0, 0, 1, 0, 0] + ip
    }
  }
}

/// What a test expects vpnstat to report for one flow, from the local end's point of view.
struct ExpectedFlow: Hashable {
  var ipProtocol: String
  var local: String
  var localPort: Int?
  var remote: String
  var remotePort: Int?
  var rxBytes = 0
  var txBytes = 0
  var rxPackets = 0
  var txPackets = 0

  var key: String {
    "\(ipProtocol) \(local) \(localPort.map(String.init) ?? "-") \(remote) \(remotePort.map(String.init) ?? "-")"
  }
}

/// A small conversation set with known totals: TCP and UDP over IPv4 and IPv6, and ICMP,
/// each flow with both directions. `local` addresses are the host's.
struct KnownTraffic {
  var packets: [TestPacket] = []
  var expected: [String: ExpectedFlow] = [:]
  let localV4 = "169.254.7.1"
  let localV6 = "fd00:7::1"

  init(seed: UInt64 = 7, flows: Int = 6) {
    var generator = SplitMix(seed: seed)
    var time: Int64 = 1_800_000_000_000_000_000
    let kinds: [(UInt8, Bool)] = [
      (6, false), (17, false), (6, true), (17, true), (1, false), (58, true),
    ]
    for index in 0..<flows {
      let (ipProtocol, v6) = kinds[index % kinds.count]
      let local = v6 ? localV6 : localV4
      let remote = v6 ? "fd00:7::\(100 + index)" : "169.254.7.\(100 + index)"
      let localPort = UInt16(40_000 + index)
      let remotePort = UInt16(ipProtocol == 17 ? 53 : 443)
      let hasPorts = ipProtocol == 6 || ipProtocol == 17
      var flow = ExpectedFlow(
        ipProtocol: ipProtocol == 6
          ? "tcp" : ipProtocol == 17 ? "udp" : ipProtocol == 1 ? "icmp" : "icmpv6",
        local: local, localPort: hasPorts ? Int(localPort) : nil, remote: remote,
        remotePort: hasPorts ? Int(remotePort) : nil)
      let count = 3 + Int(generator.next() % 20)
      for n in 0..<count {
        // The first packet of every flow goes out, so the first-packet rule agrees with --local.
        let outgoing = n == 0 || generator.next() % 2 == 0
        let payload = Int(generator.next() % 1200)
        time += Int64(generator.next() % 5_000_000)
        var packet = TestPacket(
          source: outgoing ? local : remote, destination: outgoing ? remote : local,
          ipProtocol: ipProtocol,
          sourcePort: hasPorts ? (outgoing ? localPort : remotePort) : 0,
          destinationPort: hasPorts ? (outgoing ? remotePort : localPort) : 0, payload: payload)
        packet.outgoing = outgoing
        packet.time = time
        packets.append(packet)
        if outgoing {
          flow.txBytes += packet.ipLength
          flow.txPackets += 1
        } else {
          flow.rxBytes += packet.ipLength
          flow.rxPackets += 1
        }
      }
      expected[flow.key] = flow
    }
    packets.sort { $0.time < $1.time }
  }

  var totalIPBytes: Int { packets.reduce(0) { $0 + $1.ipLength } }
}

/// A temporary directory for capture files, removed with the value.
final class CaptureDirectory: @unchecked Sendable {
  let url: URL
  init() throws {
    url = FileManager.default.temporaryDirectory.appendingPathComponent(
      "vpnstat-flows-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  }
  func path(_ name: String) -> String { url.appendingPathComponent(name).path }
  deinit { try? FileManager.default.removeItem(at: url) }
}

enum CaptureFiles {
  /// Writes `packets` with libpcap's dump API (through vpnstat's writer).
  static func writePcap(
    _ packets: [TestPacket], link: CaptureLinkType, to path: String, snapshotLength: Int32 = 65535
  )
    throws
  {
    let writer = try CaptureFileWriter(path: path, linkType: link, snapshotLength: snapshotLength)
    for packet in packets {
      let frame = packet.frame(link)
      let kept = Array(frame.prefix(Int(snapshotLength)))
      kept.withUnsafeBytes { raw in
        writer.write(
          CapturedPacket(
            timestamp: Timestamp(nanoseconds: packet.time), wireLength: frame.count, bytes: raw))
      }
    }
    try writer.flush()
    writer.close()
  }

  /// A pcapng file written byte by byte (libpcap reads pcapng but cannot write it): a section
  /// header, one interface of `linkType`, one enhanced packet block per packet.
  static func pcapng(_ packets: [TestPacket], link: CaptureLinkType) -> Data {
    var data = Data()
    func u32(_ value: UInt32) {
      withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }
    func u16(_ value: UInt16) {
      withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }
    // Section header block.
    u32(0x0A0D_0D0A)
    u32(28)
    u32(0x1A2B_3C4D)
    u16(1)
    u16(0)
    u32(0xFFFF_FFFF)
    u32(0xFFFF_FFFF)
    u32(28)
    // Interface description block (microsecond timestamps by default).
    u32(1)
    u32(20)
    u16(UInt16(link.dlt == 12 ? 101 : link.dlt))
    u16(0)
    u32(65535)
    u32(20)
    for packet in packets {
      let frame = packet.frame(link)
      let padded = (frame.count + 3) / 4 * 4
      let total = UInt32(32 + padded)
      let micros = UInt64(packet.time / 1000)
      u32(6)
      u32(total)
      u32(0)
      u32(UInt32(micros >> 32))
      u32(UInt32(micros & 0xFFFF_FFFF))
      u32(UInt32(frame.count))
      u32(UInt32(frame.count))
      data.append(contentsOf: frame)
      data.append(contentsOf: [UInt8](repeating: 0, count: padded - frame.count))
      u32(total)
    }
    return data
  }

  /// A classic pcap file header (microsecond, little-endian) for `dlt`, written by hand.
  static func pcapHeader(dlt: UInt32, snapshotLength: UInt32 = 65535) -> Data {
    var data = Data()
    func u32(_ value: UInt32) {
      withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }
    func u16(_ value: UInt16) {
      withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }
    u32(0xA1B2_C3D4)
    u16(2)
    u16(4)
    u32(0)
    u32(0)
    u32(snapshotLength)
    u32(dlt)
    return data
  }

  /// One classic pcap record header.
  static func recordHeader(seconds: UInt32, captured: UInt32, original: UInt32) -> Data {
    var data = Data()
    for value in [seconds, 0, captured, original] {
      withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }
    return data
  }
}

/// Reads an NDJSON output: one object per line.
func jsonLines(_ result: CommandResult) throws -> [[String: Any]] {
  try result.output.split(separator: "\n").map { line in
    guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else {
      throw TestSetupError("not a JSON object: \(line)")
    }
    return object
  }
}

/// The flows of one report, by "proto local lport remote rport".
func flowsByKey(_ report: [String: Any]) -> [String: [String: Any]] {
  var out: [String: [String: Any]] = [:]
  for flow in report["flows"] as? [[String: Any]] ?? [] {
    func port(_ value: Any?) -> String { (value as? NSNumber).map { "\($0.intValue)" } ?? "-" }
    let key =
      "\(flow["protocol"] as? String ?? "?") \(flow["local_address"] as? String ?? "?") \(port(flow["local_port"])) "
      + "\(flow["remote_address"] as? String ?? "?") \(port(flow["remote_port"]))"
    out[key] = flow
  }
  return out
}
