/// The flow table's index: where each flow's key lies in the table's `tallies`, in an
/// open-addressed array of positions keyed by a multiply-mix of the key's words (as the ledger's
/// `NameTable`). A `Dictionary` ran SipHash over every packet's key and probed 10,000 flows'
/// buckets in hash order, most of `flows --read`'s time per packet. The key is compared in the
/// flow's tally itself, which the packet updates next.
struct FlowIndex {
  /// Position + 1 of the key that hashes (or probes) to each slot; 0: empty. A power of two,
  /// at most half full.
  private var slots: [UInt32] = []

  /// The index of `flows`, each at its position.
  init(_ flows: [FlowTally] = []) {
    guard !flows.isEmpty else { return }
    rebuild(flows, capacity: flows.count)
  }

  /// The position of the flow whose key is `key` in `flows`, or nil.
  @inline(__always)
  func position(of key: FlowKey, in flows: [FlowTally]) -> Int? {
    guard !slots.isEmpty else { return nil }
    return slots.withUnsafeBufferPointer { slots in
      flows.withUnsafeBufferPointer { flows in
        let mask = slots.count - 1
        var slot = Self.hash(key) & mask
        while true {
          let stored = Int(slots[slot])
          if stored == 0 { return nil }
          if flows[stored - 1].key == key { return stored - 1 }
          slot = (slot + 1) & mask
        }
      }
    }
  }

  /// Records the last of `flows`, just appended (and not in the index before).
  mutating func appended(to flows: [FlowTally]) {
    if flows.count * 2 > slots.count {
      rebuild(flows, capacity: flows.count)
    } else {
      Self.place(flows[flows.count - 1].key, flows.count - 1, in: &slots)
    }
  }

  private mutating func rebuild(_ flows: [FlowTally], capacity: Int) {
    var size = 64
    while size < capacity * 4 { size *= 2 }
    slots = [UInt32](repeating: 0, count: size)
    for (position, flow) in flows.enumerated() { Self.place(flow.key, position, in: &slots) }
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
