import Foundation
import Testing
import VPNStatCapture
import VPNStatModel
import VPNStatSimulation

@testable import VPNStatTestSupport

/// vpnstat's own read of classic pcap files (`ClassicPcapFile`, behind `PcapFileSource`) against
/// libpcap's read of the same bytes: each byte order and resolution, records across its blocks
/// and larger than one, a snapshot length a writer misstated, damage, filters, and the files it
/// leaves to libpcap.
struct ClassicPcapFileTests {
  /// One record as written: its header's values and its bytes.
  struct Record {
    var seconds: UInt32
    var fraction: UInt32
    var bytes: [UInt8]
    var wireLength: UInt32
  }

  /// What a source gave: every packet, and the error that ended it, if one did.
  struct Reading: Equatable {
    struct Packet: Equatable {
      var nanoseconds: Int64
      var wireLength: Int
      var bytes: [UInt8]
    }
    var linkType: CaptureLinkType
    var snapshotLength: Int32
    var packets: [Packet] = []
    var failure: String?
  }

  /// A classic pcap file written byte by byte, in either byte order and resolution.
  static func file(
    _ records: [Record], nanosecond: Bool, bigEndian: Bool, minor: UInt16 = 4, snapshotLength: UInt32 = 65535,
    linkType: UInt32 = 101
  ) -> Data {
    var data = Data()
    func u32(_ value: UInt32) {
      withUnsafeBytes(of: bigEndian ? value.bigEndian : value.littleEndian) { data.append(contentsOf: $0) }
    }
    func u16(_ value: UInt16) {
      withUnsafeBytes(of: bigEndian ? value.bigEndian : value.littleEndian) { data.append(contentsOf: $0) }
    }
    u32(nanosecond ? 0xA1B2_3C4D : 0xA1B2_C3D4)
    u16(2)
    u16(minor)
    u32(0)
    u32(0)
    u32(snapshotLength)
    u32(linkType)
    for record in records {
      u32(record.seconds)
      u32(record.fraction)
      u32(UInt32(record.bytes.count))
      u32(record.wireLength)
      data.append(contentsOf: record.bytes)
    }
    return data
  }

  static func read(_ path: String, filter: String? = nil, libpcapOnly: Bool) throws -> Reading {
    let source = try PcapFileSource(path: path, filter: filter, libpcapOnly: libpcapOnly)
    var reading = Reading(linkType: source.linkType, snapshotLength: source.snapshotLength)
    do throws(CaptureError) {
      while let packet = try source.next() {
        reading.packets.append(
          .init(
            nanoseconds: packet.timestamp.nanoseconds, wireLength: packet.wireLength, bytes: Array(packet.bytes)))
      }
    } catch {
      reading.failure = error.message
    }
    return reading
  }

  /// Random bytes of random lengths up to `longest`, at increasing times.
  static func records(count: Int, longest: Int, nanosecond: Bool, seed: UInt64) -> [Record] {
    var generator = SplitMix(seed: seed)
    var seconds: UInt32 = 1_800_000_000
    return (0..<count).map { _ in
      seconds += UInt32(generator.next() % 3)
      let length = 1 + Int(generator.next() % UInt64(longest))
      let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
      let fraction = UInt32(generator.next() % (nanosecond ? 1_000_000_000 : 1_000_000))
      return Record(seconds: seconds, fraction: fraction, bytes: bytes, wireLength: UInt32(length + 40))
    }
  }

  @Test(
    "each byte order and resolution reads as libpcap reads it, across 256 KiB blocks",
    arguments: [(false, false), (true, false), (false, true), (true, true)])
  func variants(nanosecond: Bool, bigEndian: Bool) throws {
    let directory = try CaptureDirectory()
    let path = directory.path("variant.pcap")
    // About 900 KB: records cut by every block's end, at all alignments.
    let records = Self.records(count: 1200, longest: 1500, nanosecond: nanosecond, seed: 3)
    try Self.file(records, nanosecond: nanosecond, bigEndian: bigEndian).write(to: URL(fileURLWithPath: path))
    let ours = try Self.read(path, libpcapOnly: false)
    let libpcap = try Self.read(path, libpcapOnly: true)
    #expect(ours.packets.count == records.count)
    #expect(ours.failure == nil)
    #expect(ours == libpcap)
    // The times are the file's, in nanoseconds whatever its resolution.
    let last = try #require(records.last)
    let scale: Int64 = nanosecond ? 1 : 1000
    #expect(ours.packets.last?.nanoseconds == Int64(last.seconds) * 1_000_000_000 + Int64(last.fraction) * scale)
    #expect(ours.linkType == .rawIP)
  }

  @Test("a record larger than a block, and records longer than the header's snapshot length")
  func largeRecords() throws {
    let directory = try CaptureDirectory()
    var records = Self.records(count: 20, longest: 200, nanosecond: true, seed: 5)
    records.insert(
      Record(seconds: 1_800_000_000, fraction: 0, bytes: [UInt8](repeating: 0xAB, count: 262_144), wireLength: 262_144),
      at: 10)
    let large = directory.path("large.pcap")
    try Self.file(records, nanosecond: true, bigEndian: false, snapshotLength: 262_144)
      .write(to: URL(fileURLWithPath: large))
    let ours = try Self.read(large, libpcapOnly: false)
    #expect(ours.packets.count == records.count && ours.failure == nil)
    #expect(ours.packets[10].bytes.count == 262_144)
    #expect(ours == (try Self.read(large, libpcapOnly: true)))

    // A writer that said 64 and wrote up to 200: each packet is cut to 64, as libpcap cuts it.
    let misstated = directory.path("misstated.pcap")
    let short = Self.records(count: 50, longest: 200, nanosecond: false, seed: 6)
    try Self.file(short, nanosecond: false, bigEndian: true, snapshotLength: 64)
      .write(to: URL(fileURLWithPath: misstated))
    let cut = try Self.read(misstated, libpcapOnly: false)
    #expect(cut.snapshotLength == 64)
    #expect(cut.packets.count == short.count && cut.packets.allSatisfy { $0.bytes.count <= 64 })
    #expect(cut.packets.contains { $0.bytes.count == 64 })
    #expect(cut == (try Self.read(misstated, libpcapOnly: true)))
  }

  @Test("damage ends the read after the same packets as libpcap's, with the same kind of words")
  func damage() throws {
    let directory = try CaptureDirectory()
    let records = Self.records(count: 30, longest: 100, nanosecond: true, seed: 8)
    let whole = Self.file(records, nanosecond: true, bigEndian: false)
    let lastLength = 16 + records[29].bytes.count
    var absurd = Self.file(Array(records.prefix(5)), nanosecond: true, bigEndian: false)
    // A record header claiming 300,000 captured bytes, past any capture's.
    for value: UInt32 in [1_800_000_000, 0, 300_000, 300_000] {
      withUnsafeBytes(of: value.littleEndian) { absurd.append(contentsOf: $0) }
    }
    absurd.append(Data(repeating: 0, count: 64))
    for (name, bytes, read, words) in [
      ("in-data.pcap", whole.prefix(whole.count - 5), 29, "truncated"),
      ("in-header.pcap", whole.prefix(whole.count - lastLength + 7), 29, "truncated"),
      ("absurd.pcap", absurd, 5, "invalid packet capture length 300000"),
    ] {
      let path = directory.path(name)
      try bytes.write(to: URL(fileURLWithPath: path))
      let ours = try Self.read(path, libpcapOnly: false)
      let libpcap = try Self.read(path, libpcapOnly: true)
      #expect(ours.packets.count == read, "\(name)")
      #expect(ours.packets == libpcap.packets, "\(name)")
      let failure = try #require(ours.failure, "\(name) is damage")
      #expect(failure.contains("after \(read) packets") && failure.contains(words), "\(name): \(failure)")
      #expect(libpcap.failure?.contains("after \(read) packets") == true, "\(name): \(libpcap.failure ?? "")")
    }
    // Cut at a record's end is a whole file, for both.
    let clean = directory.path("clean.pcap")
    try whole.prefix(whole.count - lastLength).write(to: URL(fileURLWithPath: clean))
    let ours = try Self.read(clean, libpcapOnly: false)
    #expect(ours.failure == nil && ours.packets.count == 29)
  }

  @Test("a filter passes the packets it passes in libpcap's own read")
  func filters() throws {
    let directory = try CaptureDirectory()
    let traffic = KnownTraffic(seed: 11, flows: 12)
    let path = directory.path("known.pcap")
    try CaptureFiles.writePcap(traffic.packets, link: .ethernet, to: path)
    for filter in ["udp", "ip6 and tcp", "host 169.254.7.1"] {
      let ours = try Self.read(path, filter: filter, libpcapOnly: false)
      let libpcap = try Self.read(path, filter: filter, libpcapOnly: true)
      #expect(!ours.packets.isEmpty && ours.packets.count < traffic.packets.count, "\(filter)")
      #expect(ours == libpcap, "\(filter)")
    }
    #expect(throws: CaptureError.self) { try PcapFileSource(path: path, filter: "tcp and and") }
  }

  @Test("what it does not read (an older version, pcapng, an unknown link type) libpcap reads or refuses as before")
  func leftToLibpcap() throws {
    let directory = try CaptureDirectory()
    let records = Self.records(count: 40, longest: 300, nanosecond: false, seed: 12)
    let older = directory.path("older.pcap")
    // 2.2: the two lengths may be the other way round; libpcap's guess decides.
    try Self.file(records, nanosecond: false, bigEndian: false, minor: 2).write(to: URL(fileURLWithPath: older))
    #expect(try Self.read(older, libpcapOnly: false) == (try Self.read(older, libpcapOnly: true)))
    let wifi = directory.path("wifi.pcap")
    try Self.file(records, nanosecond: false, bigEndian: false, linkType: 105).write(to: URL(fileURLWithPath: wifi))
    let refused = #expect(throws: CaptureError.self) { try PcapFileSource(path: wifi) }
    #expect(refused?.message.contains("unsupported link type IEEE802_11") == true, "\(refused?.message ?? "")")
    let traffic = KnownTraffic(seed: 13, flows: 4)
    let pcapng = directory.path("known.pcapng")
    try CaptureFiles.pcapng(traffic.packets, link: .rawIP).write(to: URL(fileURLWithPath: pcapng))
    #expect(try Self.read(pcapng, libpcapOnly: false).packets.count == traffic.packets.count)
  }

  @Test("the framings' names, written without asking libpcap, are libpcap's")
  func linkTypeNames() {
    for link in [CaptureLinkType.rawIP, .ethernet, .linuxCooked, .linuxCooked2] {
      #expect(link.name == CaptureLinkType.name(dlt: link.dlt))
    }
  }

  @Test("a pcap file through a FIFO is libpcap's to read, whole, its writer waiting first")
  func fifo() throws {
    let directory = try CaptureDirectory()
    let traffic = KnownTraffic(seed: 14, flows: 4)
    let file = directory.path("known.pcap")
    try CaptureFiles.writePcap(traffic.packets, link: .rawIP, to: file)
    let fifo = directory.path("pipe.pcap")
    guard mkfifo(fifo, 0o600) == 0 else { throw TestSetupError("mkfifo failed: \(errno)") }
    // The writer waits in its open until a reader opens the FIFO; vpnstat must not take it for a
    // file of its own (nor wait on it before libpcap does).
    let writer = try BackgroundProcess("/bin/sh", ["-c", "cat \"$0\" > \"$1\"", file, fifo])
    defer { writer.stop() }
    Thread.sleep(forTimeInterval: 0.3)
    let result = try run(Built.vpnstat, ["flows", "--read", fifo, "--json"], timeout: 20)
    #expect(result.status == 0, "\(result.status): \(result.errors)")
    let report = try #require(try jsonLines(result).last)
    #expect(uint((report["captured"] as? [String: Any])?["packets"]) == UInt64(traffic.packets.count))
  }
}
