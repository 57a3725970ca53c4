/// The flow table's index: where each key lies in the table's `keys`, in an open-addressed array
/// of positions keyed by a multiply-mix of the key's words (as the ledger's `NameTable`). A
/// `Dictionary` ran SipHash over every packet's key and probed 10,000 flows' buckets in hash
/// order, most of `flows --read`'s time per packet.
struct FlowIndex {
  /// Position + 1 of the key that hashes (or probes) to each slot; 0: empty. A power of two,
  /// at most half full.
  private var slots: [UInt32] = []

  /// The index of `keys`, each at its position.
  init(_ keys: [FlowKey] = []) {
    guard !keys.isEmpty else { return }
    rebuild(keys, capacity: keys.count)
  }

  /// The position of `key` in `keys`, or nil.
  @inline(__always)
  func position(of key: FlowKey, in keys: [FlowKey]) -> Int? {
    guard !slots.isEmpty else { return nil }
    return slots.withUnsafeBufferPointer { slots in
      keys.withUnsafeBufferPointer { keys in
        let mask = slots.count - 1
        var slot = Self.hash(key) & mask
        while true {
          let stored = Int(slots[slot])
          if stored == 0 { return nil }
          if keys[stored - 1] == key { return stored - 1 }
          slot = (slot + 1) & mask
        }
      }
    }
  }

  /// Records the last of `keys`, just appended (and not in the index before).
  mutating func appended(to keys: [FlowKey]) {
    if keys.count * 2 > slots.count {
      rebuild(keys, capacity: keys.count)
    } else {
      Self.place(keys[keys.count - 1], keys.count - 1, in: &slots)
    }
  }

  private mutating func rebuild(_ keys: [FlowKey], capacity: Int) {
    var size = 64
    while size < capacity * 4 { size *= 2 }
    slots = [UInt32](repeating: 0, count: size)
    for (position, key) in keys.enumerated() { Self.place(key, position, in: &slots) }
  }

  private static func place(_ key: FlowKey, _ position: Int, in slots: inout [UInt32]) {
    let mask = slots.count - 1
    var slot = hash(key) & mask
    while slots[slot] != 0 { slot = (slot + 1) & mask }
    slots[slot] = UInt32(position + 1)
  }

  /// A multiply-mix of the key's words: every bit of each reaches the low bits the mask keeps.
  @inline(__always)
  static func hash(_ key: FlowKey) -> Int {
    var h = key.a.high &* 0x9E37_79B9_7F4A_7C15
    h = (h ^ key.a.low) &* 0xBF58_476D_1CE4_E5B9
    h = (h ^ key.b.high) &* 0x94D0_49BB_1331_11EB
    h = (h ^ key.b.low) &* 0x9E37_79B9_7F4A_7C15
    h = (h ^ (UInt64(key.ports) << 9 | UInt64(key.ipProtocol) << 1 | (key.portsKnown ? 1 : 0))) &* 0xBF58_476D_1CE4_E5B9
    return Int(truncatingIfNeeded: h ^ (h >> 29))
  }
}
