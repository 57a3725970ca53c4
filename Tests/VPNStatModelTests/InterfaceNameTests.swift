import Testing
import VPNStatSimulation

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// An interface name kept as two words (up to 15 bytes) or as its bytes (longer): whichever the
/// form, a name is its bytes — equality, hash and order are the bytes', and the bytes come back
/// as given.
struct InterfaceNameTests {
  /// Names of every length from 0 to 20, hostile bytes among them: NUL (trailing too, where
  /// padding would hide it), 0xFF, ESC, a backslash, invalid UTF-8, a byte at each word's edge.
  static let names: [[UInt8]] = {
    var names: [[UInt8]] = [
      [], [0], [0, 0], [0x61], [0x61, 0], [0x61, 0, 0], [0xFF], [0xFF, 0xFF], [0x1B, 0x5B, 0x32, 0x4A],
      [0x5C], [0xC3, 0x28], Array("wg0".utf8), Array("wg0\u{0}".utf8), Array("tun-ünïcödé".utf8),
      Array("123456789012345".utf8), Array("1234567890123456".utf8), Array("12345678".utf8),
      Array("1234567".utf8), Array("123456789".utf8), [UInt8](repeating: 0xFF, count: 15),
      [UInt8](repeating: 0xFF, count: 16), [UInt8](repeating: 0, count: 15), [UInt8](repeating: 0, count: 16),
      [UInt8](repeating: 0x80, count: 8) + [0x01], [UInt8](repeating: 0x80, count: 8) + [0x01, 0x00],
    ]
    var random = SplitMix(seed: 22)
    for _ in 0..<400 {
      let count = Int(random.next() % 21)
      // Few distinct bytes, so equal prefixes and equal names are common.
      names.append((0..<count).map { _ in [0x00, 0x61, 0x62, 0x7F, 0x80, 0xFF][Int(random.next() % 6)] })
    }
    return names
  }()

  @Test("a name gives back its bytes, and its count, however long and whatever they are")
  func roundTrip() {
    for bytes in Self.names {
      let name = InterfaceName(bytes: bytes)
      #expect(name.bytes == bytes)
      #expect(name.count == bytes.count)
      #expect(InterfaceName(bytes: bytes[...]) == name)
      // Where they lie, and from where they lie (the contiguous path), the same bytes.
      #expect(name.withBytes { Array($0) } == bytes)
      #expect(bytes.withUnsafeBytes { InterfaceName(bytes: $0) } == name)
      #expect(InterfaceName(bytes: AnySequence(bytes)) == name)
      #expect(InterfaceName(parsingEscaped: name.escaped).bytes == bytes)
      if let text = String(validating: bytes, as: UTF8.self) { #expect(InterfaceName(text) == name) }
    }
  }

  @Test(
    "the escaped form (enforce's lock, presence and spool names) is one-to-one: a backslash is escaped too, so q<0xff> and the text q\\xff differ"
  )
  func escapedIsInjective() {
    // Every name of up to 4 bytes from bytes that spell escapes: backslash, x, f, 0, 1, 0xff, 0x01.
    let alphabet: [UInt8] = [0x5C, 0x78, 0x66, 0x30, 0x31, 0xFF, 0x01]
    var names: [[UInt8]] = [[]]
    for _ in 0..<4 {
      names += names.filter { $0.count == names.last!.count }.flatMap { n in alphabet.map { n + [$0] } }
    }
    var seen: [String: [UInt8]] = [:]
    for bytes in names {
      let escaped = InterfaceName(bytes: bytes).escaped
      let earlier = seen.updateValue(bytes, forKey: escaped)
      #expect(earlier == nil, "\(bytes) and \(earlier ?? []) share \(escaped)")
      #expect(InterfaceName(parsingEscaped: escaped).bytes == bytes, "\(escaped)")
    }
    #expect(InterfaceName(bytes: [0x71, 0xFF]).escaped == "q\\xff")
    #expect(InterfaceName("q\\xff").escaped == "q\\\\xff")
  }

  @Test("equality, hash and order are the bytes' own: lexicographic, a prefix first")
  func agreesWithBytes() {
    for a in Self.names {
      for b in Self.names {
        let x = InterfaceName(bytes: a)
        let y = InterfaceName(bytes: b)
        #expect((x == y) == (a == b), "\(a) vs \(b)")
        #expect((x < y) == a.lexicographicallyPrecedes(b), "\(a) < \(b)")
        if a == b { #expect(x.hashValue == y.hashValue) }
      }
    }
  }

  @Test("names as dictionary keys and in a sort: no two names merge, the order is the bytes'")
  func keysAndSorting() {
    var table: [InterfaceName: [UInt8]] = [:]
    for bytes in Self.names { table[InterfaceName(bytes: bytes)] = bytes }
    #expect(table.count == Set(Self.names).count)
    for (name, bytes) in table { #expect(name.bytes == bytes) }
    let sorted = Self.names.map { InterfaceName(bytes: $0) }.sorted().map(\.bytes)
    #expect(sorted == Self.names.sorted { $0.lexicographicallyPrecedes($1) })
  }

  @Test("a ledger's name order is the bytes' order: by the names' keys, and by the names when one is long")
  func ledgerNameOrder() {
    func entries(_ names: [[UInt8]]) -> [LedgerEntry] {
      // Each name once, as a ledger holds them, in an order that is not the sorted one.
      var seen = Set<[UInt8]>()
      return names.reversed().filter { seen.insert($0).inserted }.map {
        LedgerEntry(
          name: InterfaceName(bytes: $0), interfaceClass: .other,
          baseline: LedgerBaseline(
            instance: InterfaceInstance(index: 1, bootID: ""), counters: .zero, width: .bits64,
            wall: Timestamp(nanoseconds: 0), boottime: 0),
          totals: LedgerTotals(firstSeenAt: Timestamp(nanoseconds: 0)))
      }
    }
    for names in [Self.names.filter { $0.count <= 15 }, Self.names] {
      let given = entries(names)
      let ordered = Ledger.nameOrder(given).map { given[$0].name.bytes }
      #expect(ordered == given.map(\.name.bytes).sorted { $0.lexicographicallyPrecedes($1) })
    }
    #expect(InterfaceName(bytes: [UInt8](repeating: 0x61, count: 16)).orderKey == nil)
  }

  @Test("positions in rank order, then the names' byte order: by the keys, and by the names when one is long")
  func rankedOrder() {
    // Many (sorted over keys) and a few (sorted over the names), each with and without long names.
    let keyed = Array(Set(Self.names.filter { $0.count <= 15 }))
    let all = Array(Set(Self.names))
    for names in [
      keyed, all, Array(keyed.prefix(20)), Array(all.filter { $0.count > 15 }.prefix(3) + keyed.prefix(17)),
    ] {
      let given = names.map { InterfaceName(bytes: $0) }
      // A rank that is not the names' order: by the last byte's parity.
      func rank(_ name: InterfaceName) -> Int { Int(name.bytes.last ?? 0) % 2 }
      let ordered = InterfaceName.order(count: given.count, rank: { rank(given[$0]) }, name: { given[$0] })
        .map { given[$0] }
      let expected = given.sorted { a, b in
        rank(a) != rank(b) ? rank(a) < rank(b) : a.bytes.lexicographicallyPrecedes(b.bytes)
      }
      #expect(ordered.map(\.bytes) == expected.map(\.bytes))
      #expect(Set(ordered.map(\.bytes)).count == given.count)
    }
  }

  @Test("the kernel's longest name (15 bytes) is held in two words; a longer one keeps its bytes")
  func forms() {
    let longest = InterfaceName("123456789012345")
    guard case .packed = longest.storage else {
      Issue.record("a 15-byte name is not packed")
      return
    }
    let tooLong = InterfaceName("1234567890123456")
    guard case .long(let bytes) = tooLong.storage else {
      Issue.record("a 16-byte name is packed")
      return
    }
    #expect(bytes == Array("1234567890123456".utf8))
    #expect(longest.kernelProblem == nil)
    #expect(tooLong.kernelProblem == "is longer than 15 bytes")
  }
}
