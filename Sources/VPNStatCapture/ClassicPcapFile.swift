@preconcurrency import CPcap
import VPNStatSystem

/// A classic pcap file — what `tcpdump -w` and libpcap's dump write: version 2.4, either byte
/// order, micro- or nanosecond times — read 256 KiB at a time, each record's 16-byte header
/// read where it lies. libpcap reads such a file with two stdio calls and a copy a packet, which
/// cost as much as the parser and the flow table together (88 against 103 ns a packet). What
/// this does not read — pcapng, the older and patched variants, a pipe, standard input —
/// `PcapFileSource` gives to libpcap, which also compiles the filters applied to it.
///
/// A value its one owner (`PcapFileSource`) keeps in place and closes: a class here was a retain
/// and a release a packet, 40 instructions of some 500.
struct ClassicPcapFile {
  /// Why the file could not be read further, in libpcap's words for the same damage.
  struct Damage: Error {
    var detail: String
  }

  /// One record: its header's values, and its bytes in the buffer until the next `next()`.
  struct Record {
    var seconds: Int
    /// Nanoseconds, whatever the file's resolution.
    var nanoseconds: Int
    var wireLength: UInt32
    var bytes: UnsafeRawBufferPointer
  }

  /// The file's link type as libpcap names it (a DLT: `LINKTYPE_RAW` is `DLT_RAW`).
  let dlt: Int32
  let linkType: CaptureLinkType
  /// The header's snapshot length, as libpcap adjusts it (0 or past the largest: the largest).
  let snapshotLength: Int32
  private let fd: FileDescriptor
  private let swapped: Bool
  /// Multiplies the header's fraction of a second into nanoseconds.
  private let fractionScale: Int
  private var buffer: UnsafeMutableRawBufferPointer
  private var start = 0
  private var end = 0
  /// Where in the file the buffer's `end` is.
  private var offset = 24
  private var atEnd = false

  static let fileHeaderLength = 24
  static let recordHeaderLength = 16
  static let blockSize = 256 << 10
  /// libpcap's MAXIMUM_SNAPLEN: a larger record, for these link types, is damage.
  static let largestRecord = 262_144
  static let microsecondMagic: UInt32 = 0xA1B2_C3D4
  static let nanosecondMagic: UInt32 = 0xA1B2_3C4D

  /// The file open at `fd`, when its header is one this reads; nil for any other (the descriptor
  /// is then still the caller's). Reads with `pread` from the header's end: where the
  /// descriptor's own offset is does not matter.
  init?(fd: FileDescriptor) {
    var header = [UInt8](repeating: 0, count: Self.fileHeaderLength)
    let count = header.withUnsafeMutableBytes { (try? fd.read(into: $0, at: 0)) ?? 0 }
    guard count == Self.fileHeaderLength else { return nil }
    func u32(_ at: Int) -> UInt32 { header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) } }
    func u16(_ at: Int) -> UInt16 { header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt16.self) } }
    let magic = u32(0)
    let swapped: Bool
    switch magic {
    case Self.microsecondMagic, Self.nanosecondMagic: swapped = false
    case Self.microsecondMagic.byteSwapped, Self.nanosecondMagic.byteSwapped: swapped = true
    default: return nil
    }
    let major = swapped ? u16(4).byteSwapped : u16(4)
    let minor = swapped ? u16(6).byteSwapped : u16(6)
    // 2.0–2.3 may hold the two lengths the other way round: libpcap guesses; so does it read them.
    guard major == 2, minor == 4 else { return nil }
    let snapshot = swapped ? u32(16).byteSwapped : u32(16)
    // The upper six bits say things about the frames (an FCS's length), not what they are.
    let fileLinkType = (swapped ? u32(20).byteSwapped : u32(20)) & 0x03FF_FFFF
    let dlt = fileLinkType == 101 ? DLT_RAW : Int32(fileLinkType)
    guard let linkType = CaptureLinkType(dlt: dlt) else { return nil }
    self.dlt = dlt
    self.linkType = linkType
    self.snapshotLength = snapshot == 0 || snapshot > Self.largestRecord ? Int32(Self.largestRecord) : Int32(snapshot)
    self.fd = fd
    self.swapped = swapped
    fractionScale = (swapped ? magic.byteSwapped : magic) == Self.nanosecondMagic ? 1 : 1000
    buffer = .allocate(byteCount: Self.blockSize, alignment: 16)
  }

  /// Frees the buffer and closes the file; the value is not used after.
  func close() {
    buffer.deallocate()
    fd.close()
  }

  /// The next record, nil at the file's end; throws at a record cut short, or larger than any
  /// capture makes.
  mutating func next() throws(Damage) -> Record? {
    let headerLength = Self.recordHeaderLength
    if end - start < headerLength {
      try fill(atLeast: headerLength)
      if start == end { return nil }
      guard end - start >= headerLength else {
        throw Damage(detail: "truncated dump file; tried to read \(headerLength) header bytes, only got \(end - start)")
      }
    }
    var header = UnsafeRawPointer(buffer.baseAddress!) + start
    var seconds = header.loadUnaligned(as: UInt32.self)
    var fraction = header.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
    var captured = header.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
    var wire = header.loadUnaligned(fromByteOffset: 12, as: UInt32.self)
    if swapped {
      seconds = seconds.byteSwapped
      fraction = fraction.byteSwapped
      captured = captured.byteSwapped
      wire = wire.byteSwapped
    }
    guard captured <= Self.largestRecord else {
      throw Damage(detail: "invalid packet capture length \(captured), bigger than maximum of \(Self.largestRecord)")
    }
    let length = headerLength + Int(captured)
    if end - start < length {
      try fill(atLeast: length)
      guard end - start >= length else {
        throw Damage(
          detail:
            "truncated dump file; tried to read \(captured) captured bytes, only got \(end - start - headerLength)")
      }
      header = UnsafeRawPointer(buffer.baseAddress!) + start
    }
    start += length
    // Past the snapshot length (a writer that misstated it): cut to it, as libpcap does.
    let kept = min(Int(captured), Int(snapshotLength))
    return Record(
      seconds: Int(seconds), nanoseconds: Int(fraction) * fractionScale, wireLength: wire,
      bytes: UnsafeRawBufferPointer(start: header + headerLength, count: kept))
  }

  /// Moves what is left of the buffer to its front and reads after it until the buffer is full
  /// or the file ends, the buffer grown first when one record needs more.
  private mutating func fill(atLeast needed: Int) throws(Damage) {
    let left = end - start
    if needed > buffer.count {
      let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: needed, alignment: 16)
      larger.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: left)
      buffer.deallocate()
      buffer = larger
    } else if start > 0 {
      // Overlapping ranges are allowed: it is a memmove.
      buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: left)
    }
    start = 0
    end = left
    while end < buffer.count, !atEnd {
      let count: Int
      do {
        count = try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[end...]), at: offset)
      } catch {
        throw Damage(detail: "error reading dump file: \(error)")
      }
      if count == 0 { atEnd = true }
      end += count
      offset += count
    }
  }
}
