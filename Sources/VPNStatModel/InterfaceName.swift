/// An interface name exactly as the kernel holds it: 1 to 15 bytes, not `.` or `..`, and no NUL,
/// `/`, `:` or whitespace (see `kernelProblem`). Names are bytes, not text — the kernel accepts
/// ESC, quotes and non-UTF-8 — so every way of showing one is an explicit, escaping conversion.
///
/// A name of up to 15 bytes (every name the kernel gives) is kept in two words, no array: a
/// recorder looks a thousand names up in its tables every second, and hashing and comparing two
/// words, and copying an entry without a reference to count, cost a fraction of an array's bytes.
/// A longer one (only what a person or a file says, which the kernel would refuse) keeps its bytes.
public struct InterfaceName: Hashable, Comparable, Sendable, CustomStringConvertible {
  /// The two forms. Each name has exactly one (a name of 15 bytes or fewer is always `packed`),
  /// so equal names have equal storage and the synthesized equality and hash agree with the bytes.
  @usableFromInline
  enum Storage: Hashable, Sendable {
    /// Bytes 0–7 in the first word and 8–14 in the second, byte i at bits 8·(i mod 8) (the low
    /// byte first); the count in the second word's top byte; unused bytes zero.
    case packed(UInt64, UInt64)
    /// More than 15 bytes.
    case long([UInt8])
  }
  @usableFromInline
  let storage: Storage

  /// The most bytes kept in two words: the kernel's longest name (IFNAMSIZ − 1).
  static let packedCapacity = 15

  public init(bytes: some Sequence<UInt8>) {
    // Bytes that lie together (an array, a netlink attribute) and fit: two loads, no loop.
    if let packed = bytes.withContiguousStorageIfAvailable({ Self.packed($0) }), let packed {
      storage = packed
      return
    }
    var words: (UInt64, UInt64) = (0, 0)
    var count = 0
    var long: [UInt8]?
    for byte in bytes {
      if var spilled = long {
        long = nil
        spilled.append(byte)
        long = spilled
        continue
      }
      if count == Self.packedCapacity {
        var spilled = Self.unpack(words.0, words.1, count: count)
        spilled.append(byte)
        long = spilled
        continue
      }
      if count < 8 {
        words.0 |= UInt64(byte) << (8 * UInt64(count))
      } else {
        words.1 |= UInt64(byte) << (8 * UInt64(count - 8))
      }
      count += 1
    }
    if let long {
      storage = .long(long)
    } else {
      storage = .packed(words.0, words.1 | UInt64(count) << 56)
    }
  }

  /// `init(bytes:)` for bytes in memory (a netlink attribute, a database blob): not generic, so
  /// a caller in another module makes each name in two loads rather than through the generic
  /// sequence's witnesses (a report reads a thousand names).
  public init(bytes: UnsafeRawBufferPointer) {
    let buffer = UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    storage = Self.packed(buffer) ?? .long(Array(buffer))
  }

  public init(_ string: String) { self.init(bytes: string.utf8) }

  /// The name's bytes.
  public var bytes: [UInt8] {
    switch storage {
    case .packed(let low, let high): Self.unpack(low, high, count: Int(high >> 56))
    case .long(let bytes): bytes
    }
  }

  /// How many bytes the name has.
  public var count: Int {
    switch storage {
    case .packed(_, let high): Int(high >> 56)
    case .long(let bytes): bytes.count
    }
  }

  /// Calls `body` with the name's bytes where they lie — a packed name's two words on the stack —
  /// rather than in a new array as `bytes` makes: for whatever reads every name of a sample
  /// (the JSON of a thousand interfaces).
  @inlinable
  public func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    switch storage {
    case .packed(let low, let high):
      var words = (low.littleEndian, (high & 0x00FF_FFFF_FFFF_FFFF).littleEndian)
      let count = Int(high >> 56)
      return try withUnsafeBytes(of: &words) { try body(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
    case .long(let bytes):
      return try bytes.withUnsafeBytes(body)
    }
  }

  /// The hash `LedgerTable` indexes by: a packed name's two words mixed by two multiplies (a
  /// longer name's bytes folded first), where `hash(into:)` runs SipHash over them. Names come
  /// from the kernel of this namespace and the database of record, neither of which an
  /// unprivileged user fills; and colliding names would only cost probes, never a wrong entry.
  @inlinable
  var tableHash: UInt64 {
    var x: UInt64
    switch storage {
    case .packed(let low, let high):
      x = low &* 0x9E37_79B9_7F4A_7C15 ^ high
    case .long(let bytes):
      x = 0xCBF2_9CE4_8422_2325
      for byte in bytes { x = (x ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    }
    x ^= x >> 29
    x &*= 0xBF58_476D_1CE4_E5B9
    return x ^ x >> 32
  }

  /// The packed form of `bytes`, or nil when they are too many.
  private static func packed(_ bytes: UnsafeBufferPointer<UInt8>) -> Storage? {
    guard bytes.count <= packedCapacity else { return nil }
    var words: (UInt64, UInt64) = (0, 0)
    withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(bytes)) }
    return .packed(UInt64(littleEndian: words.0), UInt64(littleEndian: words.1) | UInt64(bytes.count) << 56)
  }

  private static func unpack(_ low: UInt64, _ high: UInt64, count: Int) -> [UInt8] {
    var bytes = [UInt8]()
    bytes.reserveCapacity(count)
    for i in 0..<count {
      bytes.append(UInt8(truncatingIfNeeded: i < 8 ? low >> (8 * UInt64(i)) : high >> (8 * UInt64(i - 8))))
    }
    return bytes
  }

  /// Parses the escaped form (`\xHH` for a raw byte, `\\` for a backslash) that `escaped`
  /// produces, so a name printed by vpnstat can be given back to it.
  public init(parsingEscaped text: String) {
    var out = [UInt8]()
    let b = Array(text.utf8)
    var i = 0
    while i < b.count {
      if b[i] == 0x5C, i + 1 < b.count {
        if b[i + 1] == 0x5C {
          out.append(0x5C)
          i += 2
          continue
        }
        if b[i + 1] == 0x78, i + 3 < b.count, let hi = hexValue(b[i + 2]), let lo = hexValue(b[i + 3]) {
          out.append(hi << 4 | lo)
          i += 4
          continue
        }
      }
      out.append(b[i])
      i += 1
    }
    self.init(bytes: out)
  }

  @inlinable
  public static func == (a: InterfaceName, b: InterfaceName) -> Bool {
    if case .packed(let al, let ah) = a.storage, case .packed(let bl, let bh) = b.storage {
      return al == bl && ah == bh
    }
    return a.storage == b.storage
  }

  /// The two words where the name has them (the count is in the second), else the count and the
  /// bytes as one block. Equal names have the same form, so the hash agrees with `==`.
  @inlinable
  public func hash(into hasher: inout Hasher) {
    switch storage {
    case .packed(let low, let high):
      hasher.combine(low)
      hasher.combine(high)
    case .long(let bytes):
      hasher.combine(bytes.count)
      bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
  }

  /// What a dictionary keyed by names hashes: a name's two words mixed in one multiplication
  /// (wyhash's), keyed by the table's seed — which holds the process's random seed — instead of
  /// a `Hasher` round per word and its finalization: a recorder makes four such lookups per
  /// interface per sample, and the `Hasher` was most of each. A longer name goes through the
  /// `Hasher`, seeded. Equal names have the same form and words, so this agrees with `==`.
  @inlinable
  public func _rawHashValue(seed: Int) -> Int {
    switch storage {
    case .packed(let low, let high):
      let product = (low ^ UInt64(UInt(bitPattern: seed)) ^ 0xA076_1D64_78BD_642F).multipliedFullWidth(
        by: high ^ 0xE703_7ED1_A0B4_28DB)
      return Int(truncatingIfNeeded: product.high ^ product.low)
    case .long(let bytes):
      var hasher = Hasher()
      hasher.combine(seed)
      hasher.combine(bytes.count)
      bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
      return hasher.finalize()
    }
  }

  /// Inlinable, like `==`: sorting a thousand names (`export`, `status`) calls it ten thousand
  /// times, and as a call through the sort's generic comparison each cost ~200 instructions.
  @inlinable
  public static func < (a: InterfaceName, b: InterfaceName) -> Bool {
    if case .packed(let al, let ah) = a.storage, case .packed(let bl, let bh) = b.storage {
      // Byte order is the words' order once the first byte is the most significant; the unused
      // bytes are zero, so where the padded bytes tie, the shorter name is a prefix: the counts
      // (the top bytes, cleared for the comparison) decide.
      if al != bl { return al.byteSwapped < bl.byteSwapped }
      let x = (ah & 0x00FF_FFFF_FFFF_FFFF).byteSwapped
      let y = (bh & 0x00FF_FFFF_FFFF_FFFF).byteSwapped
      if x != y { return x < y }
      return ah >> 56 < bh >> 56
    }
    return byteOrder(a, b)
  }

  /// For a packed name, two words that compare as `<` compares the names (first word, then
  /// second): the bytes with the first most significant, the count in the second word's lowest
  /// byte (the byte `<` clears, so it decides only where the bytes tie). Nil for a longer name.
  /// A sort of a thousand names compares these ten thousand times, not the names.
  var orderKey: (UInt64, UInt64)? {
    guard case .packed(let low, let high) = storage else { return nil }
    return (low.byteSwapped, (high & 0x00FF_FFFF_FFFF_FFFF).byteSwapped | high >> 56)
  }

  /// The positions `0..<count` in the order of their ranks, then of their names (bytes
  /// compared, as `<`). Positions are sorted, not what they stand for (a report or a ledger
  /// entry is some hundred bytes, moved many times by a sort), over the names' order keys side
  /// by side with the ranks — the names themselves only when one is too long to have a key.
  /// Sorting a thousand reports by class and name through the names cost `status --json`
  /// 676,000 instructions, a ninth of the command.
  package static func order(count: Int, rank: (Int) -> Int, name: (Int) -> InterfaceName) -> [Int] {
    func byNames() -> [Int] {
      (0..<count).sorted { a, b in rank(a) != rank(b) ? rank(a) < rank(b) : name(a) < name(b) }
    }
    // A few: the keys' array would cost the runtime more to set up (its type's metadata, the
    // first time) than the sort it saves.
    guard count > 32 else { return byNames() }
    var keys: [(Int, UInt64, UInt64)] = []
    keys.reserveCapacity(count)
    for position in 0..<count {
      guard let key = name(position).orderKey else { return byNames() }
      keys.append((rank(position), key.0, key.1))
    }
    return keys.withUnsafeBufferPointer { keys in keys.indices.sorted { keys[$0] < keys[$1] } }
  }

  /// `<` for a name that is not packed: byte by byte.
  @usableFromInline
  static func byteOrder(_ a: InterfaceName, _ b: InterfaceName) -> Bool {
    let x = a.bytes
    let y = b.bytes
    for i in 0..<min(x.count, y.count) where x[i] != y[i] { return x[i] < y[i] }
    return x.count < y.count
  }

  /// Why the kernel would refuse this name, or nil when it could name an interface. The kernel's
  /// rule (`dev_valid_name`): not empty, at most 15 bytes, not `.` or `..`, and no `/`, `:` or
  /// byte its `isspace` calls a space — tab, line feed, vertical tab, form feed, carriage
  /// return, space, and 0xA0 (Latin-1's no-break space). Checked on Linux 6.18.
  public var kernelProblem: String? {
    let bytes = self.bytes
    if bytes.isEmpty { return "is empty" }
    if bytes.count > 15 { return "is longer than 15 bytes" }
    if bytes == [0x2E] || bytes == [0x2E, 0x2E] { return "is '.' or '..'" }
    if bytes.contains(0) { return "contains a NUL byte" }
    if bytes.contains(0x2F) { return "contains '/'" }
    if bytes.contains(0x3A) { return "contains ':'" }
    if bytes.contains(where: { (0x09...0x0D).contains($0) || $0 == 0x20 || $0 == 0xA0 }) {
      return "contains whitespace (space, tab, line break or the byte 0xA0)"
    }
    return nil
  }

  /// True when the name is valid UTF-8.
  public var isValidUTF8: Bool { String(validating: bytes, as: UTF8.self) != nil }

  /// The name as text when it is valid UTF-8, else the lossless escaped form.
  /// (JSON says which, in `name_encoding`.)
  public var jsonText: String {
    if let text = String(validating: bytes, as: UTF8.self) { return text }
    return escaped
  }

  /// How `jsonText` is to be read: `utf8` (exact) or `escaped` (vpnstat's escaped form).
  public var jsonEncoding: String { isValidUTF8 ? "utf8" : "escaped" }

  /// Lossless, printable, ASCII-only text: printable ASCII as itself, a backslash as `\\`, every
  /// other byte as `\xHH`. Safe for a terminal, a log line or a file name.
  public var escaped: String {
    var out = ""
    out.reserveCapacity(bytes.count)
    for byte in bytes {
      if byte == 0x5C {
        out += "\\\\"
      } else if byte >= 0x20 && byte < 0x7F {
        out.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        out += "\\x" + hexByte(byte)
      }
    }
    return out
  }

  /// The name for a terminal: valid UTF-8 is kept where it is harmless (letters, CJK, emoji), and
  /// every control character, BiDi control, invisible format character, backslash and invalid
  /// byte is shown escaped, so a name can neither repaint the screen nor reorder a line.
  public var terminalText: String {
    // Nearly every name is printable ASCII without a backslash, shown as it is: made from its
    // bytes where they lie (a screen names thirty interfaces at every refresh).
    let plain = withBytes { bytes in
      bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\\") }
        ? String(decoding: bytes, as: UTF8.self) : nil
    }
    if let plain { return plain }
    guard let text = String(validating: bytes, as: UTF8.self) else { return escaped }
    var out = ""
    for scalar in text.unicodeScalars {
      if scalar == "\\" {
        out += "\\\\"
      } else if TerminalText.isUnsafe(scalar) {
        var utf8 = [UInt8]()
        utf8.append(contentsOf: String(scalar).utf8)
        for byte in utf8 { out += "\\x" + hexByte(byte) }
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  public var description: String { terminalText }
}

/// The value of one hexadecimal digit, either case, or nil.
func hexValue(_ c: UInt8) -> UInt8? {
  switch c {
  case 0x30...0x39: c - 0x30
  case 0x41...0x46: c - 0x41 + 10
  case 0x61...0x66: c - 0x61 + 10
  default: nil
  }
}

/// Two lower-case hex digits: how every escape vpnstat writes spells a byte.
public func hexByte(_ byte: UInt8) -> String {
  let digits: [Character] = Array("0123456789abcdef")
  return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
}

/// An argument as text: itself when it is UTF-8, else vpnstat's escaped form (an interface name
/// may hold any byte), so that no byte is lost to a replacement character.
public func argumentText(_ bytes: [UInt8]) -> String {
  String(validating: bytes, as: UTF8.self) ?? InterfaceName(bytes: bytes).escaped
}
