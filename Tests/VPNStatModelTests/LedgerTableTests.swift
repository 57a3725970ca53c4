import Testing
import VPNStatSimulation

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// The ledger's table (a `NameTable`): every name found where it was put, through growth,
/// colliding probes, removals and names of every form, in the order the entries came; equal as a
/// map of names.
struct LedgerTableTests {
  static func entry(_ name: InterfaceName, _ figure: UInt64) -> LedgerEntry {
    LedgerEntry(
      name: name, interfaceClass: .tunnel,
      baseline: LedgerBaseline(
        instance: InterfaceInstance(index: Int32(truncatingIfNeeded: figure), bootID: "boot"),
        counters: TrafficCounts(rxBytes: figure, txBytes: 0, rxPackets: 0, txPackets: 0), width: .bits64,
        wall: Timestamp(seconds: 1), boottime: 1),
      totals: LedgerTotals(firstSeenAt: Timestamp(seconds: 1)))
  }

  /// Names of every form: packed ones of 1 to 15 bytes, NUL and 0xFF among them, and longer ones.
  static let names: [InterfaceName] = {
    var names: [InterfaceName] = []
    for i in 0..<3000 { names.append(InterfaceName("if\(i)")) }
    for length in 1...20 {
      names.append(InterfaceName(bytes: [UInt8](repeating: 0, count: length)))
      names.append(InterfaceName(bytes: [UInt8](repeating: 0xFF, count: length)))
    }
    names.append(InterfaceName("a-very-long-interface-name"))
    return names
  }()

  /// `count` names whose probes all start at slot 0 of a 64-slot index ("c" and a number).
  static func colliding(_ count: Int) -> [InterfaceName] {
    var colliding: [InterfaceName] = []
    var i = 0
    while colliding.count < count {
      let name = InterfaceName("c\(i)")
      if LedgerTable.slot(of: name, mask: 63) == 0 { colliding.append(name) }
      i += 1
    }
    return colliding
  }

  @Test("every name is found where it was put, as the table grows from nothing through many rehashes")
  func grows() {
    var table = LedgerTable()
    var reference: [InterfaceName: LedgerEntry] = [:]
    for (i, name) in Self.names.enumerated() {
      #expect(table[name] == nil)
      let inserted = table.insert(Self.entry(name, UInt64(i)))
      #expect(inserted)
      reference[name] = Self.entry(name, UInt64(i))
      // After each growth, every name so far.
      if i.nonzeroBitCount == 1 || i == Self.names.count - 1 {
        for (name, entry) in reference { #expect(table[name] == entry) }
      }
    }
    #expect(table.count == Self.names.count)
    // In the order they came.
    #expect(table.keys == Self.names)
    #expect(Array(table.map(\.key)) == Self.names)
    #expect(table.mapValues(\.baseline.counters.rxBytes) == reference.mapValues(\.baseline.counters.rxBytes))
    #expect(table == LedgerTable(reference))
  }

  @Test("a name already there is not inserted twice; an update replaces it in place")
  func updates() throws {
    var table = LedgerTable(minimumCapacity: 4)
    let names = Self.names.prefix(40)
    for (i, name) in names.enumerated() { table.update(Self.entry(name, UInt64(i))) }
    let insertedAgain = table.insert(Self.entry(names[names.startIndex + 7], 999))
    #expect(!insertedAgain)
    #expect(table[names[names.startIndex + 7]]?.baseline.counters.rxBytes == 7)
    table.update(Self.entry(names[names.startIndex + 7], 999))
    #expect(table.count == names.count)
    #expect(table.position(of: names[names.startIndex + 7]) == 7)
    #expect(table[names[names.startIndex + 7]]?.baseline.counters.rxBytes == 999)
    #expect(table.position(of: InterfaceName("absent")) == nil)
  }

  @Test("names whose probes start at one slot are each found (linear probing past the others)")
  func collisions() {
    let colliding = Self.colliding(20)
    var table = LedgerTable(minimumCapacity: 32)
    for (i, name) in colliding.enumerated() { table.insert(Self.entry(name, UInt64(i))) }
    for (i, name) in colliding.enumerated() { #expect(table[name]?.baseline.counters.rxBytes == UInt64(i)) }
    // A name missing from the table but probing through the same run is not found.
    var absent = InterfaceName("x")
    var i = 0
    while LedgerTable.slot(of: absent, mask: 63) != 0 || colliding.contains(absent) {
      absent = InterfaceName("x\(i)")
      i += 1
    }
    #expect(table[absent] == nil)
  }

  @Test("equality is the names' and entries', whatever the order")
  func equality() {
    let names = Self.names.prefix(50)
    var forward = LedgerTable()
    for (i, name) in names.enumerated() { forward.insert(Self.entry(name, UInt64(i))) }
    var backward = LedgerTable()
    for (i, name) in names.enumerated().reversed() { backward.insert(Self.entry(name, UInt64(i))) }
    #expect(forward == backward)
    backward.update(Self.entry(names[names.startIndex], 12345))
    #expect(forward != backward)
    var fewer = LedgerTable()
    for (i, name) in names.dropLast().enumerated() { fewer.insert(Self.entry(name, UInt64(i))) }
    #expect(forward != fewer)
  }
  @Test(
    "a removed name is gone and every other is still found, through colliding probes, growth and emptying; the last value fills the gap"
  )
  func removals() {
    // Names whose probes all start at one slot, among others that do not.
    let colliding = Self.colliding(12)
    let names = colliding + Self.names.prefix(18)
    var table = LedgerTable(minimumCapacity: 30)
    var reference: [InterfaceName: LedgerEntry] = [:]
    for (i, name) in names.enumerated() {
      table.insert(Self.entry(name, UInt64(i)))
      reference[name] = Self.entry(name, UInt64(i))
    }
    // From the middle of the colliding run, its start, its end, then the others in turn.
    let order =
      [colliding[5], colliding[0], colliding[11]]
      + names.filter { ![colliding[5], colliding[0], colliding[11]].contains($0) }
    for (removed, name) in order.enumerated() {
      let last = table.values.last?.name
      let position = table.position(of: name)
      #expect(table.remove(name) == reference.removeValue(forKey: name))
      #expect(table.remove(name) == nil)
      #expect(table[name] == nil)
      #expect(table.count == names.count - removed - 1)
      if let last, last != name, let position { #expect(table.values[position].name == last) }
      for (other, entry) in reference { #expect(table[other] == entry, "\(other) after removing \(name)") }
    }
    #expect(table.isEmpty)
    // Emptied, then filled again past its first size.
    for (i, name) in Self.names.prefix(100).enumerated() { table.insert(Self.entry(name, UInt64(i))) }
    for (i, name) in Self.names.prefix(100).enumerated() {
      #expect(table[name]?.baseline.counters.rxBytes == UInt64(i))
    }
    table.removeAll(keepingCapacity: true)
    #expect(table.isEmpty && table[Self.names[0]] == nil)
    table.insert(Self.entry(Self.names[1], 1))
    #expect(table[Self.names[1]]?.baseline.counters.rxBytes == 1 && table.count == 1)
  }

  @Test("a long run of inserts, updates and removals agrees with a dictionary at every step")
  func agreesWithDictionary() {
    var table = LedgerTable()
    var reference: [InterfaceName: LedgerEntry] = [:]
    var random = SplitMix(seed: 22)
    let pool = Array(Self.names.prefix(300))
    for step in 0..<6000 {
      let name = pool[Int(random.next() % UInt64(pool.count))]
      switch random.next() % 3 {
      case 0:
        #expect(table.insert(Self.entry(name, UInt64(step))) == (reference[name] == nil))
        if reference[name] == nil { reference[name] = Self.entry(name, UInt64(step)) }
      case 1:
        table.update(Self.entry(name, UInt64(step)))
        reference[name] = Self.entry(name, UInt64(step))
      default:
        #expect(table.remove(name) == reference.removeValue(forKey: name))
      }
      #expect(table[name] == reference[name])
      if step % 500 == 0 { #expect(table == LedgerTable(reference)) }
    }
    #expect(table == LedgerTable(reference))
    #expect(Set(table.keys) == Set(reference.keys) && table.count == reference.count)
  }
}
