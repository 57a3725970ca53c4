import VPNStatModel

/// The whole ledger in one blob, stored by a writer beside the `interfaces` rows in the same
/// transaction, so that a reader decodes one value instead of nineteen columns of a thousand
/// rows. The rows stay the record: triggers on `interfaces` mark the snapshot stale whenever any
/// writer (an older vpnstat too) changes a row, and a reader that finds no current snapshot, or
/// one it cannot decode, reads the rows (`Store.loadLedger`).
///
/// Little-endian: a header (magic, entry count, text count), the texts (boot ids and class
/// names, each once: a length then its bytes), then per entry its name (a length then its
/// bytes) and fixed fields (class and boot id as text numbers, ifindex, width, sixteen 64-bit
/// figures).
enum LedgerSnapshot {
  static let magic: UInt32 = 0x3173_6C76  // "vls1"
  /// An entry's fields after its name: four 32-bit numbers, fourteen 64-bit figures.
  static let fixedLength = 4 * 4 + 14 * 8

  static func encode(_ ledger: Ledger) -> [UInt8] {
    var texts: [String] = []
    var textNumbers: [String: UInt32] = [:]
    func number(_ text: String, after last: inout (text: String, number: UInt32)?) -> UInt32 {
      // Most entries have the class and the boot id of the one before (the same String, which
      // compares at once): no hashing of it then.
      if let last, last.text == text { return last.number }
      let found: UInt32
      if let known = textNumbers[text] {
        found = known
      } else {
        found = UInt32(texts.count)
        texts.append(text)
        textNumbers[text] = found
      }
      last = (text, found)
      return found
    }
    var lastClass: (text: String, number: UInt32)?
    var lastBoot: (text: String, number: UInt32)?
    var records: [UInt8] = []
    records.reserveCapacity(ledger.entries.count * 160)
    // By name: a save that changed a few entries changes only their bytes (see `saveLedger`).
    // Each is read where it lies.
    let entries = ledger.entries.values
    for i in Ledger.nameOrder(entries) {
      entries[i].name.withBytes { name in
        records.append(UInt32(name.count))
        records.append(contentsOf: name)
      }
      let b = entries[i].baseline
      let t = entries[i].totals
      let numbers = (
        number(entries[i].interfaceClass.rawValue, after: &lastClass).littleEndian,
        number(b.instance.bootID, after: &lastBoot).littleEndian, UInt32(bitPattern: b.instance.index).littleEndian,
        UInt32(truncatingIfNeeded: b.width.rawValue).littleEndian
      )
      let figures = (
        b.counters.rxBytes.littleEndian, b.counters.txBytes.littleEndian, b.counters.rxPackets.littleEndian,
        b.counters.txPackets.littleEndian, UInt64(bitPattern: b.wall.nanoseconds).littleEndian,
        UInt64(bitPattern: b.boottime).littleEndian, t.traffic.rxBytes.littleEndian, t.traffic.txBytes.littleEndian,
        t.traffic.rxPackets.littleEndian, t.traffic.txPackets.littleEndian, t.resets.littleEndian,
        t.wraps.littleEndian, t.discarded.littleEndian, UInt64(bitPattern: t.firstSeenAt.nanoseconds).littleEndian
      )
      // Tuples of one type lie without padding: the fixed part is their bytes as they are.
      withUnsafeBytes(of: numbers) { records.append(contentsOf: $0) }
      withUnsafeBytes(of: figures) { records.append(contentsOf: $0) }
    }
    var out: [UInt8] = []
    out.reserveCapacity(records.count + 64)
    out.append(magic)
    out.append(UInt32(ledger.entries.count))
    out.append(UInt32(texts.count))
    for text in texts {
      out.append(UInt32(text.utf8.count))
      out.append(contentsOf: text.utf8)
    }
    out.append(contentsOf: records)
    return out
  }

  /// The ledger `bytes` hold, or nil when they are not a whole snapshot. A boot id equal to
  /// `sharingBootID` is that String itself (as `Store.loadLedger` promises).
  static func decode(_ bytes: UnsafeRawBufferPointer, sharingBootID: String?) -> Ledger? {
    var reader = Reader(whole: bytes)
    return decode(&reader, sharingBootID: sharingBootID)
  }

  /// The ledger in a blob of `count` bytes that `read` copies piece by piece (`read(into,
  /// offset)` fills `into` with the bytes from `offset` on; false: it could not), at most
  /// `piece` bytes at a time into one buffer: a stored snapshot is read this way, never whole
  /// (`Store.readVersionedSnapshot`).
  static func decode(
    count: Int, piece: Int = 32 * 1024, reading read: (UnsafeMutableRawBufferPointer, Int) -> Bool,
    sharingBootID: String?
  ) -> Ledger? {
    withoutActuallyEscaping(read) { read in
      var reader = Reader(count: count, piece: piece, reading: read)
      defer { reader.free() }
      return decode(&reader, sharingBootID: sharingBootID)
    }
  }

  private static func decode(_ reader: inout Reader, sharingBootID: String?) -> Ledger? {
    guard reader.u32() == magic, let count = reader.u32(), let textCount = reader.u32() else { return nil }
    // Each entry takes at least its name's length and its fixed part: a count no blob of this
    // size holds is damage.
    guard Int(count) <= reader.count / (4 + fixedLength), Int(textCount) <= reader.count / 4 else { return nil }
    var texts: [String] = []
    texts.reserveCapacity(Int(textCount))
    for _ in 0..<textCount {
      guard let length = reader.u32(), let text = reader.bytes(Int(length)) else { return nil }
      if let sharingBootID, sharingBootID.utf8.elementsEqual(text) {
        texts.append(sharingBootID)
      } else {
        texts.append(String(decoding: text, as: UTF8.self))
      }
    }
    // Class names decoded once each, as the rows decode them.
    let classes = texts.map { InterfaceClass(rawValue: $0) ?? .other }
    var entries = LedgerTable(minimumCapacity: Int(count))
    for _ in 0..<count {
      // The name and the fixed part in one piece: a next read may move the bytes at hand.
      guard let nameLength = reader.u32().map(Int.init), nameLength <= reader.count,
        let record = reader.bytes(nameLength + fixedLength)
      else { return nil }
      let fixed = UnsafeRawBufferPointer(rebasing: record[nameLength...])
      func u32(_ at: Int) -> UInt32 { UInt32(littleEndian: fixed.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
      func u64(_ at: Int) -> UInt64 {
        UInt64(littleEndian: fixed.loadUnaligned(fromByteOffset: 16 + 8 * at, as: UInt64.self))
      }
      let classNumber = Int(u32(0))
      let bootNumber = Int(u32(4))
      // A value no vpnstat writes is damage, as in the rows (`StoredNumber`): counters are any UInt64.
      guard classNumber < texts.count, bootNumber < texts.count,
        let width = CounterWidth(rawValue: Int(u32(12))),
        let sampledAt = Timestamp(stored: Int64(bitPattern: u64(4))),
        let boottime = ClockReading.boottime(stored: Int64(bitPattern: u64(5))),
        let firstSeenAt = Timestamp(stored: Int64(bitPattern: u64(13)))
      else { return nil }
      let name = InterfaceName(bytes: UnsafeRawBufferPointer(rebasing: record[..<nameLength]))
      let added = entries.insert(
        LedgerEntry(
          name: name, interfaceClass: classes[classNumber],
          baseline: LedgerBaseline(
            instance: InterfaceInstance(index: Int32(bitPattern: u32(8)), bootID: texts[bootNumber]),
            counters: TrafficCounts(rxBytes: u64(0), txBytes: u64(1), rxPackets: u64(2), txPackets: u64(3)),
            width: width, wall: sampledAt, boottime: boottime),
          totals: LedgerTotals(
            TrafficCounts(rxBytes: u64(6), txBytes: u64(7), rxPackets: u64(8), txPackets: u64(9)), resets: u64(10),
            wraps: u64(11), discarded: u64(12), firstSeenAt: firstSeenAt)))
      // A name twice is damage.
      guard added else { return nil }
    }
    guard reader.atEnd else { return nil }
    return Ledger(entries: entries)
  }

  /// Bounds-checked little-endian reads from the blob: from the whole of it in memory, or from
  /// a window of it that `read` refills (moving what is left of it to the front, and growing for
  /// a request larger than a piece). What `bytes` returns is valid until the next read.
  private struct Reader {
    /// The blob's size.
    let count: Int
    /// The bytes at hand, and where the next read starts in them.
    var window: UnsafeRawBufferPointer
    var offset = 0
    /// Where `window` starts in the blob.
    var windowStart = 0
    let piece: Int
    let read: ((UnsafeMutableRawBufferPointer, Int) -> Bool)?
    /// The window's memory, when the reader refills it.
    var storage: UnsafeMutableRawBufferPointer?

    init(whole bytes: UnsafeRawBufferPointer) {
      count = bytes.count
      window = bytes
      piece = 0
      read = nil
    }

    init(count: Int, piece: Int, reading read: @escaping (UnsafeMutableRawBufferPointer, Int) -> Bool) {
      self.count = count
      window = UnsafeRawBufferPointer(start: nil, count: 0)
      self.piece = Swift.max(piece, 8)
      self.read = read
    }

    func free() { storage?.deallocate() }

    var atEnd: Bool { windowStart + offset == count }

    @inline(__always)
    mutating func bytes(_ wanted: Int) -> UnsafeRawBufferPointer? {
      guard wanted >= 0, wanted <= count - windowStart - offset else { return nil }
      if wanted > window.count - offset {
        guard refill(wanted), wanted <= window.count - offset else { return nil }
      }
      defer { offset += wanted }
      return UnsafeRawBufferPointer(rebasing: window[offset..<offset + wanted])
    }

    mutating func u32() -> UInt32? {
      guard let bytes = bytes(4) else { return nil }
      return UInt32(littleEndian: bytes.loadUnaligned(as: UInt32.self))
    }

    /// Makes at least `wanted` bytes (all in the blob, checked by `bytes`) lie at hand.
    private mutating func refill(_ wanted: Int) -> Bool {
      guard let read else { return false }
      let kept = window.count - offset
      let size = Swift.max(piece, wanted)
      if let storage, storage.count >= size {
        if kept > 0, let base = storage.baseAddress, let from = window.baseAddress {
          base.copyMemory(from: from + offset, byteCount: kept)
        }
      } else {
        let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        if kept > 0, let base = larger.baseAddress, let from = window.baseAddress {
          base.copyMemory(from: from + offset, byteCount: kept)
        }
        storage?.deallocate()
        storage = larger
      }
      guard let storage else { return false }
      let next = windowStart + window.count
      let more = Swift.min(storage.count - kept, count - next)
      guard read(UnsafeMutableRawBufferPointer(rebasing: storage[kept..<kept + more]), next) else { return false }
      windowStart += offset
      offset = 0
      window = UnsafeRawBufferPointer(rebasing: storage[..<(kept + more)])
      return true
    }
  }
}

extension [UInt8] {
  fileprivate mutating func append(_ value: UInt32) {
    Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
  }
  fileprivate mutating func append(_ value: UInt64) {
    Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
  }
}
