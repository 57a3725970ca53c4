import VPNStatModel

/// A streaming writer of compact JSON. Hand-written rather than Codable: the contract needs
/// explicit `null`s, a fixed key order and exact integers, and this is also several times faster.
public struct JSONWriter {
  public private(set) var bytes: [UInt8] = []
  /// Per open container: has it had an element yet (so the next one needs a comma)?
  private var needsComma: [Bool] = [false]

  public init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

  private mutating func separate() {
    if needsComma[needsComma.count - 1] { bytes.append(0x2C) }
    needsComma[needsComma.count - 1] = true
  }

  public mutating func beginObject() {
    separate()
    bytes.append(0x7B)
    needsComma.append(false)
  }
  public mutating func endObject() {
    needsComma.removeLast()
    bytes.append(0x7D)
  }
  public mutating func beginArray() {
    separate()
    bytes.append(0x5B)
    needsComma.append(false)
  }
  public mutating func endArray() {
    needsComma.removeLast()
    bytes.append(0x5D)
  }

  /// Writes a key; the next value call writes its value.
  public mutating func key(_ key: StaticString) {
    separate()
    bytes.append(0x22)
    key.withUTF8Buffer { bytes.append(contentsOf: $0) }
    bytes.append(0x22)
    bytes.append(0x3A)
    needsComma[needsComma.count - 1] = false
  }
  /// A key that is not a literal (class names, dynamic keys); escaped like any string.
  /// Disfavoured so that literal keys take the StaticString overload above: without it a
  /// literal resolves to String (the default literal type) and is escaped byte by byte.
  @_disfavoredOverload
  public mutating func key(_ key: String) {
    separate()
    appendQuoted(key)
    bytes.append(0x3A)
    needsComma[needsComma.count - 1] = false
  }

  public mutating func string(_ value: String) {
    separate()
    appendQuoted(value)
  }

  /// Appends `value` quoted and escaped. Runs of bytes that need no escape (nearly all of them)
  /// are copied in one append rather than byte by byte: a `status --json` of 1000 interfaces
  /// writes ~30,000 strings, keys included, and this loop was most of its time.
  ///
  /// Besides what JSON requires (quote, backslash, C0 controls), every scalar the terminal rule
  /// (`TerminalText.isUnsafe`) refuses is written as `\uXXXX`: C1 controls such as U+009B (CSI),
  /// BiDi and invisible format characters, DEL. JSON output meets terminals (`status --json`
  /// run by hand), and a parser reads the escape back as the same scalar, so nothing is lost.
  private mutating func appendQuoted(_ value: String) {
    bytes.append(0x22)
    var value = value
    value.withUTF8 { utf8 in
      var runStart = 0
      var i = 0
      while i < utf8.count {
        let byte = utf8[i]
        if byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C {
          i += 1
          continue
        }
        var length = 1
        if byte >= 0x80 {
          let scalar: Unicode.Scalar
          (scalar, length) = Self.scalar(in: utf8, at: i)
          if !TerminalText.isUnsafe(scalar) {
            i += length
            continue
          }
        }
        if runStart < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
        switch byte {
        case 0x22:
          bytes.append(0x5C)
          bytes.append(0x22)
        case 0x5C:
          bytes.append(0x5C)
          bytes.append(0x5C)
        case 0x0A:
          bytes.append(0x5C)
          bytes.append(0x6E)
        case 0x0D:
          bytes.append(0x5C)
          bytes.append(0x72)
        case 0x09:
          bytes.append(0x5C)
          bytes.append(0x74)
        case 0x80...:
          let value = Self.scalar(in: utf8, at: i).0.value
          if value > 0xFFFF {
            // Outside the BMP JSON spells a scalar as its UTF-16 surrogate pair.
            appendUnicodeEscape(0xD800 + ((value - 0x10000) >> 10))
            appendUnicodeEscape(0xDC00 + ((value - 0x10000) & 0x3FF))
          } else {
            appendUnicodeEscape(value)
          }
        default:
          appendUnicodeEscape(UInt32(byte))
        }
        i += length
        runStart = i
      }
      if runStart < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...])) }
    }
    bytes.append(0x22)
  }

  /// The scalar whose UTF-8 starts at `index` (valid: it comes from a String), and its length.
  private static func scalar(in utf8: UnsafeBufferPointer<UInt8>, at index: Int) -> (Unicode.Scalar, Int) {
    let lead = UInt32(utf8[index])
    let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
    var value = lead & (0x7F >> length)
    for offset in 1..<length { value = value << 6 | UInt32(utf8[index + offset] & 0x3F) }
    return (Unicode.Scalar(value) ?? "\u{FFFD}", length)
  }

  /// `\uXXXX` for one UTF-16 code unit.
  private mutating func appendUnicodeEscape(_ unit: UInt32) {
    append("\\u")
    bytes.append(contentsOf: hexByte(UInt8(truncatingIfNeeded: unit >> 8)).utf8)
    bytes.append(contentsOf: hexByte(UInt8(truncatingIfNeeded: unit)).utf8)
  }

  /// Appends a literal's bytes without making an Array of them first.
  private mutating func append(_ literal: StaticString) {
    literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
  }
  public mutating func string(_ value: String?) {
    if let value { string(value) } else { null() }
  }

  public mutating func number(_ value: UInt64) {
    separate()
    appendDigits(value)
  }
  public mutating func number(_ value: UInt64?) {
    if let value { number(value) } else { null() }
  }
  public mutating func number(_ value: Int64) {
    separate()
    if value < 0 {
      bytes.append(0x2D)
      appendDigits(value.magnitude)
    } else {
      appendDigits(UInt64(value))
    }
  }
  public mutating func number(_ value: Int) { number(Int64(value)) }
  /// A rate or ratio: rounded to an integer when large, else to three decimals.
  public mutating func number(_ value: Double?) {
    guard let value, value.isFinite else { return null() }
    if value.magnitude >= 1e15 || value == value.rounded() {
      // Beyond Int64 (a rate from a counter that jumped by 2^64 in a millisecond), JSON's own
      // exponent form: 1.8446744073709552e+22.
      guard let whole = Int64(exactly: value.rounded()) else {
        separate()
        bytes.append(contentsOf: Array("\(value)".utf8))
        return
      }
      number(whole)
      return
    }
    separate()
    let scaled = (value * 1000).rounded() / 1000
    bytes.append(contentsOf: Array("\(scaled)".utf8))
  }
  /// An interface name under `key`, and how to read it under `encodingKey`; both null for none.
  public mutating func name(_ name: InterfaceName?, key nameKey: StaticString, encodingKey: StaticString) {
    key(nameKey)
    string(name?.jsonText)
    key(encodingKey)
    string(name?.jsonEncoding)
  }

  /// An array of strings (notes, warnings).
  public mutating func strings(_ values: [String]) {
    beginArray()
    for value in values { string(value) }
    endArray()
  }

  /// The four traffic counts every report writes, under their contract names.
  public mutating func trafficCounts(_ counts: TrafficCounts) {
    key("rx_bytes")
    number(counts.rxBytes)
    key("tx_bytes")
    number(counts.txBytes)
    key("rx_packets")
    number(counts.rxPackets)
    key("tx_packets")
    number(counts.txPackets)
  }

  /// The envelope every vpnstat JSON object opens with: schema version, time, the estimate flag
  /// and, when given, the notes saying why.
  public mutating func envelope(generatedAt: Timestamp, estimateNotes: [String]?) {
    key("schema_version")
    number(StatusJSON.schemaVersion)
    key("generated_at")
    string(generatedAt.rfc3339(fractionDigits: 3))
    key("estimate")
    bool(true)
    if let estimateNotes {
      key("estimate_notes")
      strings(estimateNotes)
    }
  }

  public mutating func bool(_ value: Bool) {
    separate()
    append(value ? "true" : "false")
  }
  public mutating func null() {
    separate()
    append("null")
  }

  private mutating func appendDigits(_ value: UInt64) {
    if value < 10 {
      bytes.append(0x30 + UInt8(value))
      return
    }
    var digits:
      (
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
        UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
      ) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    var count = 0
    var rest = value
    withUnsafeMutableBytes(of: &digits) { buffer in
      while rest > 0 {
        buffer[19 - count] = 0x30 + UInt8(rest % 10)
        rest /= 10
        count += 1
      }
      bytes.append(contentsOf: buffer[(20 - count)...])
    }
  }
}
