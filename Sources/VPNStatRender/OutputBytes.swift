/// The bytes a renderer writes, in one buffer grown by doubling and appended to without the
/// per-call checks of an Array: a `status --json` of 1000 interfaces is some 60,000 appends of a
/// few bytes each, and those checks were most of its time. The pointer, count and capacity live
/// in the value itself (a class's stored properties are checked for exclusive access on every
/// use); the class only owns the memory. A value: a copy that is appended to gets a buffer of
/// its own.
struct OutputBytes {
  /// Owns the allocation: freed with the last value that uses it.
  private final class Owner {
    var base: UnsafeMutablePointer<UInt8>
    init(_ base: UnsafeMutablePointer<UInt8>) { self.base = base }
    deinit { base.deallocate() }
  }

  private var owner: Owner
  private var base: UnsafeMutablePointer<UInt8>
  private(set) var count = 0
  private var capacity: Int

  init(capacity: Int) {
    self.capacity = max(capacity, 16)
    base = .allocate(capacity: self.capacity)
    owner = Owner(base)
  }

  /// The bytes written so far.
  var array: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

  /// Hands the bytes written so far to `sink` and starts again at the beginning of the same
  /// buffer: output written in pieces touches one piece's memory.
  mutating func drain(_ sink: (UnsafeRawBufferPointer) -> Void) {
    guard count > 0 else { return }
    withBytes { sink(UnsafeRawBufferPointer($0)) }
    if !isKnownUniquelyReferenced(&owner) { reallocate(capacity) }
    count = 0
  }

  /// Lends the bytes written so far, without copying them.
  func withBytes<T>(_ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
    try withExtendedLifetime(owner) { try body(UnsafeBufferPointer(start: base, count: count)) }
  }

  /// Room for `more` bytes at the end, in a buffer this value alone holds.
  @inline(__always)
  private mutating func reserve(_ more: Int) -> UnsafeMutablePointer<UInt8> {
    if count + more > capacity || !isKnownUniquelyReferenced(&owner) { reallocate(count + more) }
    return base + count
  }

  private mutating func reallocate(_ needed: Int) {
    while capacity < needed { capacity *= 2 }
    let fresh = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
    fresh.update(from: base, count: count)
    base = fresh
    owner = Owner(fresh)
  }

  @inline(__always)
  mutating func append(_ byte: UInt8) {
    reserve(1).pointee = byte
    count += 1
  }

  @inline(__always)
  mutating func append(_ a: UInt8, _ b: UInt8) {
    let at = reserve(2)
    at[0] = a
    at[1] = b
    count += 2
  }

  @inline(__always)
  mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
    guard let source = bytes.baseAddress, bytes.count > 0 else { return }
    reserve(bytes.count).update(from: source, count: bytes.count)
    count += bytes.count
  }

  @inline(__always)
  mutating func append(_ literal: StaticString) {
    if literal.hasPointerRepresentation {
      append(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    } else {
      literal.withUTF8Buffer { append($0) }
    }
  }

  mutating func append(_ bytes: [UInt8]) {
    bytes.withUnsafeBufferPointer { append($0) }
  }

  /// Disfavoured so that a literal takes the StaticString overload: without it a literal
  /// resolves to String (the default literal type) and is copied into a String first.
  @_disfavoredOverload
  mutating func append(_ text: String) {
    var text = text
    text.withUTF8 { append($0) }
  }

  /// `value` in decimal: the one way every renderer writes a count (JSON, OpenMetrics).
  mutating func appendDecimal(_ value: UInt64) {
    count += Self.decimal(value, at: reserve(Self.maximumDigits))
  }

  /// The most digits a count has (UInt64.max).
  static let maximumDigits = 20

  /// Writes `value` in decimal at `at`, which has room for `maximumDigits`; returns how many
  /// bytes it wrote. Two digits at a time from a table: a timestamp's ten digits one by one (a
  /// division, a multiplication, a store each) were most of what an exposition spent on a
  /// `_created` time.
  @inline(__always)
  static func decimal(_ value: UInt64, at: UnsafeMutablePointer<UInt8>) -> Int {
    if value < 10 {
      at.pointee = 0x30 + UInt8(truncatingIfNeeded: value)
      return 1
    }
    var digits = 2
    var scale: UInt64 = 100
    while digits < 20 && value >= scale {
      digits += 1
      scale &*= 10
    }
    var rest = value
    var end = digits
    let pairs = digitPairs.utf8Start
    while rest >= 100 {
      let pair = Int(truncatingIfNeeded: rest % 100) &* 2
      rest /= 100
      end &-= 2
      at[end] = pairs[pair]
      at[end &+ 1] = pairs[pair &+ 1]
    }
    if rest >= 10 {
      let pair = Int(truncatingIfNeeded: rest) &* 2
      at[0] = pairs[pair]
      at[1] = pairs[pair &+ 1]
    } else {
      at[0] = 0x30 &+ UInt8(truncatingIfNeeded: rest)
    }
    return digits
  }

  /// "00" to "99", each number's two digits at twice its value.
  private static var digitPairs: StaticString {
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
  }

  /// Copies `bytes` to `at`, which has room for them; returns how many it copied.
  @inline(__always)
  static func copy(_ bytes: UnsafeBufferPointer<UInt8>, to at: UnsafeMutablePointer<UInt8>) -> Int {
    guard let source = bytes.baseAddress else { return 0 }
    at.update(from: source, count: bytes.count)
    return bytes.count
  }

  /// Lets `body` write at most `most` bytes at the end in one reservation (one capacity and
  /// ownership check for several pieces); `body` returns how many it wrote.
  @inline(__always)
  mutating func append(atMost most: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
    count += body(reserve(most))
  }
}
