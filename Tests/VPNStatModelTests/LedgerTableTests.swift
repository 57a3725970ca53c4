import Testing

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// The ledger's table: every name found where it was put, through growth, colliding probes and
/// names of every form, in the order the entries came; equal as a map of names.
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
    // Names that all start at slot 0 of a 64-slot index.
    var colliding: [InterfaceName] = []
    var i = 0
    while colliding.count < 20 {
      let name = InterfaceName("c\(i)")
      if LedgerTable.slot(of: name, mask: 63) == 0 { colliding.append(name) }
      i += 1
    }
    var table = LedgerTable(minimumCapacity: 32)
    for (i, name) in colliding.enumerated() { table.insert(Self.entry(name, UInt64(i))) }
    for (i, name) in colliding.enumerated() { #expect(table[name]?.baseline.counters.rxBytes == UInt64(i)) }
    // A name missing from the table but probing through the same run is not found.
    var absent = InterfaceName("x")
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
}
