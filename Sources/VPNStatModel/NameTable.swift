/// A value that carries its interface name, by which a `NameTable` keeps it.
public protocol NameKeyed {
  var name: InterfaceName { get }
}

/// The ledger's entries: a `NameTable` of them.
public typealias LedgerTable = NameTable<LedgerEntry>

/// Values, one per interface name, side by side in an array in the order they came (name
/// order, for a ledger after a load), with a small index of their positions by name: the ledger's
/// entries (`LedgerTable`), a writer's unsaved traffic per name (`UnsavedTraffic`).
///
/// A `[InterfaceName: LedgerEntry]` of a thousand names is 2,048 buckets of ~180 bytes, most of
/// them empty, filled and read in hash order, and every look-up runs SipHash: a reader that loads
/// the ledger, advances it and reports it (`status --db`) spent about a millisecond there, most
/// of it faulting and missing the cache. Here the values take what they hold, are written and
/// read in order (a sample's order, every second, for the recorder), and the index is an
/// open-addressed table of 32-bit positions (a quarter of a page per hundred names) keyed by a
/// multiply-mix of the name's two words.
public struct NameTable<Value: NameKeyed>: Sequence {
  /// The values, in the order they were added (a removal moves the last into the gap). Changed
  /// in place only where each keeps its name: the index is by name.
  public internal(set) var values: [Value] {
    get { stored }
    _modify { yield &stored }
    set { stored = newValue }
  }
  /// What `values` reads and writes (inlinable code cannot name an internal setter).
  @usableFromInline
  var stored: [Value] = []
  /// Position + 1 of the entry whose name hashes to (or probes to) each slot; 0: empty. A power
  /// of two, at most half full.
  @usableFromInline
  var slots: [UInt32] = []

  @inlinable
  public init() {}

  @inlinable
  public init(minimumCapacity: Int) { reserveCapacity(minimumCapacity) }

  /// The values of a dictionary (keyed by their own names), in name order.
  @inlinable
  public init(_ entries: [InterfaceName: Value]) {
    reserveCapacity(entries.count)
    for name in entries.keys.sorted() { update(entries[name]!) }
  }

  @inlinable public var count: Int { stored.count }
  @inlinable public var isEmpty: Bool { stored.isEmpty }
  @inlinable public var keys: [InterfaceName] { stored.map(\.name) }

  /// The value of `name`, if the table has one. (Inlinable, as the look-ups below: a reader
  /// looks up every interface, and the caller then copies only the fields it reads.)
  @inlinable
  public subscript(name: InterfaceName) -> Value? {
    switch probe(name) {
    case .found(let position): stored[position]
    case .empty, nil: nil
    }
  }

  /// Where `name`'s value lies in `values`.
  @inlinable
  public func position(of name: InterfaceName) -> Int? {
    if case .found(let position) = probe(name) { return position }
    return nil
  }

  /// Where a probe for a name ends: at its value's position, or at the empty slot it would take.
  @usableFromInline
  enum Probe {
    case found(Int)
    case empty(slot: Int)
  }

  /// The probe for `name`; nil when the table has no slots yet.
  @inlinable @inline(__always)
  func probe(_ name: InterfaceName) -> Probe? {
    guard !slots.isEmpty else { return nil }
    return slots.withUnsafeBufferPointer { slots in
      stored.withUnsafeBufferPointer { values in
        let mask = slots.count - 1
        var slot = Self.slot(of: name, mask: mask)
        while slots[slot] != 0 {
          let position = Int(slots[slot] &- 1)
          if values[position].name == name { return .found(position) }
          slot = (slot &+ 1) & mask
        }
        return .empty(slot: slot)
      }
    }
  }

  /// Puts `entry` in place of its name's value, or adds it after the others.
  @inlinable
  public mutating func update(_ entry: consuming Value) {
    switch probe(entry.name) {
    case .found(let position): stored[position] = entry
    case .empty(let slot): append(entry, at: slot)
    case nil: append(entry, at: nil)
    }
  }

  /// Adds `entry`, whose name the table does not hold; false (and nothing added) when it does.
  @inlinable @discardableResult
  public mutating func insert(_ entry: consuming Value) -> Bool {
    switch probe(entry.name) {
    case .found: return false
    case .empty(let slot): append(entry, at: slot)
    case nil: append(entry, at: nil)
    }
    return true
  }

  @inlinable
  public mutating func reserveCapacity(_ capacity: Int) {
    stored.reserveCapacity(capacity)
    if Self.slotCount(for: capacity) > slots.count { rebuildIndex(slotCount: Self.slotCount(for: capacity)) }
  }

  /// Removes `name`'s value and returns it (nil: the table has none). The last value takes its
  /// place in `values`; the index closes the gap its slot leaves (a later name whose probe ran
  /// through that slot moves back), so every probe still ends at its name or an empty slot.
  @inlinable @discardableResult
  public mutating func remove(_ name: InterfaceName) -> Value? {
    guard case .found(let position) = probe(name) else { return nil }
    let mask = slots.count - 1
    var gap = slotHolding(position)
    var slot = (gap + 1) & mask
    while slots[slot] != 0 {
      // A value may move back to the gap when the gap lies on its probe, from its home slot on.
      let home = Self.slot(of: stored[Int(slots[slot] - 1)].name, mask: mask)
      if (slot &- home) & mask >= (slot &- gap) & mask {
        slots[gap] = slots[slot]
        gap = slot
      }
      slot = (slot + 1) & mask
    }
    slots[gap] = 0
    let last = stored.count - 1
    if position != last { slots[slotHolding(last)] = UInt32(position + 1) }
    stored.swapAt(position, last)
    return stored.removeLast()
  }

  /// Removes every value, keeping the room for as many.
  @inlinable
  public mutating func removeAll(keepingCapacity: Bool = false) {
    stored.removeAll(keepingCapacity: keepingCapacity)
    if keepingCapacity {
      for i in slots.indices { slots[i] = 0 }
    } else {
      slots = []
    }
  }

  /// `[name: transform(entry)]`.
  @inlinable
  public func mapValues<T>(_ transform: (Value) throws -> T) rethrows -> [InterfaceName: T] {
    var result: [InterfaceName: T] = [:]
    result.reserveCapacity(stored.count)
    for entry in stored { result[entry.name] = try transform(entry) }
    return result
  }

  @inlinable
  public func makeIterator() -> some IteratorProtocol<(key: InterfaceName, value: Value)> {
    stored.lazy.map { (key: $0.name, value: $0) }.makeIterator()
  }

  /// Adds `entry` whose name is not in the table; `slot` is the empty slot its probe ended at,
  /// which stays right unless the index grows.
  @inlinable
  mutating func append(_ entry: consuming Value, at slot: Int?) {
    let grows = Self.slotCount(for: stored.count + 1) > slots.count
    if grows { rebuildIndex(slotCount: Self.slotCount(for: Swift.max(stored.count + 1, 2 * stored.count))) }
    let mask = slots.count - 1
    var slot = slot ?? 0
    if grows || slots[slot] != 0 {
      slot = Self.slot(of: entry.name, mask: mask)
      while slots[slot] != 0 { slot = (slot + 1) & mask }
    }
    // Moved in, not copied: a copy would count the boot id's reference up and the caller's
    // release down again.
    stored.append(entry)
    slots[slot] = UInt32(stored.count)
  }

  /// The slot that holds `position` (which the table has).
  @inlinable
  func slotHolding(_ position: Int) -> Int {
    let mask = slots.count - 1
    var slot = Self.slot(of: stored[position].name, mask: mask)
    while slots[slot] != UInt32(position + 1) { slot = (slot + 1) & mask }
    return slot
  }

  @inlinable
  mutating func rebuildIndex(slotCount: Int) {
    slots = [UInt32](repeating: 0, count: slotCount)
    let mask = slotCount - 1
    slots.withUnsafeMutableBufferPointer { slots in
      for (position, entry) in stored.enumerated() {
        var slot = Self.slot(of: entry.name, mask: mask)
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = UInt32(position + 1)
      }
    }
  }

  /// Slots for `count` entries: a power of two, at least twice the count.
  @inlinable @inline(__always)
  static func slotCount(for count: Int) -> Int {
    count == 0 ? 0 : Swift.max(8, (2 * count).nextPowerOf2)
  }

  /// The slot a name's probe starts at (the top bits of the hash: a multiply's best mixed).
  @inlinable @inline(__always)
  static func slot(of name: InterfaceName, mask: Int) -> Int {
    Int(truncatingIfNeeded: name.tableHash >> 32) & mask
  }
}

extension NameTable: Sendable where Value: Sendable {}

extension NameTable: Equatable where Value: Equatable {
  /// The same names with the same values, in whatever order.
  @inlinable
  public static func == (a: NameTable, b: NameTable) -> Bool {
    a.count == b.count && a.stored.allSatisfy { b[$0.name] == $0 }
  }
}

extension Int {
  @inlinable
  var nextPowerOf2: Int { self <= 1 ? 1 : 1 << (Int.bitWidth - (self - 1).leadingZeroBitCount) }
}
