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
    var reader = Reader(bytes: bytes)
    guard reader.u32() == magic, let count = reader.u32(), let textCount = reader.u32() else { return nil }
    // Each entry takes at least its name's length and its fixed part: a count no blob of this
    // size holds is damage.
    guard Int(count) <= bytes.count / (4 + fixedLength), Int(textCount) <= bytes.count / 4 else { return nil }
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
      guard let nameLength = reader.u32(), let nameBytes = reader.bytes(Int(nameLength)),
        let fixed = reader.bytes(fixedLength)
      else { return nil }
      func u32(_ at: Int) -> UInt32 { UInt32(littleEndian: fixed.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
      func u64(_ at: Int) -> UInt64 {
        UInt64(littleEndian: fixed.loadUnaligned(fromByteOffset: 16 + 8 * at, as: UInt64.self))
      }
      let classNumber = Int(u32(0))
      let bootNumber = Int(u32(4))
      guard classNumber < texts.count, bootNumber < texts.count else { return nil }
      let name = InterfaceName(bytes: nameBytes)
      let added = entries.insert(
        LedgerEntry(
          name: name, interfaceClass: classes[classNumber],
          baseline: LedgerBaseline(
            instance: InterfaceInstance(index: Int32(bitPattern: u32(8)), bootID: texts[bootNumber]),
            counters: TrafficCounts(rxBytes: u64(0), txBytes: u64(1), rxPackets: u64(2), txPackets: u64(3)),
            width: CounterWidth(rawValue: Int(u32(12))) ?? .bits64,
            wall: Timestamp(nanoseconds: Int64(bitPattern: u64(4))), boottime: Int64(bitPattern: u64(5))),
          totals: LedgerTotals(
            TrafficCounts(rxBytes: u64(6), txBytes: u64(7), rxPackets: u64(8), txPackets: u64(9)), resets: u64(10),
            wraps: u64(11), discarded: u64(12), firstSeenAt: Timestamp(nanoseconds: Int64(bitPattern: u64(13))))))
      // A name twice is damage.
      guard added else { return nil }
    }
    guard reader.atEnd else { return nil }
    return Ledger(entries: entries)
  }

  /// Bounds-checked little-endian reads from the blob.
  private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    var atEnd: Bool { offset == bytes.count }

    mutating func bytes(_ count: Int) -> UnsafeRawBufferPointer? {
      guard count >= 0, count <= bytes.count - offset else { return nil }
      defer { offset += count }
      return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
    }
    mutating func u32() -> UInt32? {
      guard 4 <= bytes.count - offset else { return nil }
      defer { offset += 4 }
      return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
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
