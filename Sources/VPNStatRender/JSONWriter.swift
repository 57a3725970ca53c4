import VPNStatModel

/// A streaming writer of compact JSON. Hand-written rather than Codable: the contract needs
/// explicit `null`s, a fixed key order and exact integers, and this is also several times faster.
package struct JSONWriter {
  private var output: OutputBytes
  /// Whether the next element of the open container needs a comma before it. No stack is
  /// needed: a container that closes was an element of its parent, which then needs one.
  private var needsComma = false

  /// Where the bytes go as they are written, if anywhere before the end (`passOnIfFull`).
  package var sink: ((UnsafeRawBufferPointer) -> Void)?

  /// How much is handed to the sink at a time.
  package static let piece = 64 * 1024

  package init(capacity: Int = 1024) { output = OutputBytes(capacity: capacity) }

  /// Hands what is written to the sink once there is a piece of it, and reuses the buffer.
  @inline(__always)
  package mutating func passOnIfFull() {
    if let sink, output.count >= Self.piece { output.drain(sink) }
  }

  /// Hands whatever is written to the sink.
  package mutating func passOn() {
    if let sink { output.drain(sink) }
  }

  /// What has been written.
  package var bytes: [UInt8] { output.array }

  /// Lends what has been written, without copying it.
  package func withBytes<T>(_ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
    try output.withBytes { try body(UnsafeRawBufferPointer($0)) }
  }

  /// Ends a document: a newline, for the one-document-per-line outputs.
  package mutating func newline() {
    output.append(0x0A)
    needsComma = false
  }

  @inline(__always)
  private mutating func separate() {
    if needsComma { output.append(0x2C) }
    needsComma = true
  }

  package mutating func beginObject() {
    separate()
    output.append(0x7B)
    needsComma = false
  }
  package mutating func endObject() {
    output.append(0x7D)
    needsComma = true
  }
  package mutating func beginArray() {
    separate()
    output.append(0x5B)
    needsComma = false
  }
  package mutating func endArray() {
    output.append(0x5D)
    needsComma = true
  }

  /// Writes a key; the next value call writes its value.
  package mutating func key(_ key: StaticString) {
    if needsComma {
      output.append(0x2C, 0x22)
    } else {
      output.append(0x22)
    }
    output.append(key)
    output.append(0x22, 0x3A)
    needsComma = false
  }
  /// A key that is not a literal (class names, dynamic keys); escaped like any string.
  /// Disfavoured so that literal keys take the StaticString overload above: without it a
  /// literal resolves to String (the default literal type) and is escaped byte by byte.
  @_disfavoredOverload
  package mutating func key(_ key: String) {
    separate()
    appendQuoted(key)
    output.append(0x3A)
    needsComma = false
  }

  package mutating func string(_ value: String) {
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
    output.append(0x22)
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
        if runStart < i { output.append(UnsafeBufferPointer(rebasing: utf8[runStart..<i])) }
        switch byte {
        case 0x22:
          output.append(0x5C, 0x22)
        case 0x5C:
          output.append(0x5C, 0x5C)
        case 0x0A:
          output.append(0x5C, 0x6E)
        case 0x0D:
          output.append(0x5C, 0x72)
        case 0x09:
          output.append(0x5C, 0x74)
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
      if runStart < utf8.count { output.append(UnsafeBufferPointer(rebasing: utf8[runStart...])) }
    }
    output.append(0x22)
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
    output.append(hexByte(UInt8(truncatingIfNeeded: unit >> 8)))
    output.append(hexByte(UInt8(truncatingIfNeeded: unit)))
  }

  /// Appends a literal's bytes without making an Array of them first.
  private mutating func append(_ literal: StaticString) {
    output.append(literal)
  }
  package mutating func string(_ value: String?) {
    if let value { string(value) } else { null() }
  }

  package mutating func number(_ value: UInt64) {
    separate()
    appendDigits(value)
  }
  package mutating func number(_ value: UInt64?) {
    if let value { number(value) } else { null() }
  }
  package mutating func number(_ value: Int64) {
    separate()
    if value < 0 {
      output.append(0x2D)
      appendDigits(value.magnitude)
    } else {
      appendDigits(UInt64(value))
    }
  }
  package mutating func number(_ value: Int) { number(Int64(value)) }
  /// A rate or ratio: rounded to an integer when large, else to three decimals.
  package mutating func number(_ value: Double?) {
    guard let value, value.isFinite else { return null() }
    if value.magnitude >= 1e15 || value == value.rounded() {
      // Beyond Int64 (a rate from a counter that jumped by 2^64 in a millisecond), JSON's own
      // exponent form: 1.8446744073709552e+22.
      guard let whole = Int64(exactly: value.rounded()) else {
        separate()
        output.append("\(value)")
        return
      }
      number(whole)
      return
    }
    separate()
    let scaled = (value * 1000).rounded() / 1000
    output.append("\(scaled)")
  }
  // A key and its value in one call, `null` when the value is nil: the shape nearly every
  // field of the JSON contract has.

  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: String?) {
    key(name)
    string(value)
  }
  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: UInt64?) {
    key(name)
    number(value)
  }
  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: Int?) {
    key(name)
    if let value { number(value) } else { null() }
  }
  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: Int64?) {
    key(name)
    if let value { number(value) } else { null() }
  }
  /// A rate or ratio, as `number(_: Double?)` writes it.
  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: Double?) {
    key(name)
    number(value)
  }
  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: Bool?) {
    key(name)
    if let value { bool(value) } else { null() }
  }
  /// An array of strings (notes, warnings).
  @inline(__always)
  package mutating func field(_ name: StaticString, _ values: [String]) {
    key(name)
    strings(values)
  }

  /// An interface name under `key`, and how to read it under `encodingKey`; both null for none.
  /// A name of printable ASCII without a quote or a backslash (most of them) is written as its
  /// bytes, without making a String of it.
  package mutating func name(_ name: InterfaceName?, key nameKey: StaticString, encodingKey: StaticString) {
    key(nameKey)
    guard let name else {
      null()
      key(encodingKey)
      null()
      return
    }
    if name.bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) {
      separate()
      output.append(0x22)
      output.append(name.bytes)
      output.append(0x22)
      key(encodingKey)
      string("utf8")
      return
    }
    string(name.jsonText)
    key(encodingKey)
    string(name.jsonEncoding)
  }

  /// An array of strings (notes, warnings).
  package mutating func strings(_ values: [String]) {
    beginArray()
    for value in values { string(value) }
    endArray()
  }

  /// The four traffic counts every report writes, under their contract names.
  package mutating func trafficCounts(_ counts: TrafficCounts) {
    field("rx_bytes", counts.rxBytes)
    field("tx_bytes", counts.txBytes)
    field("rx_packets", counts.rxPackets)
    field("tx_packets", counts.txPackets)
  }

  /// The envelope every vpnstat JSON object opens with: schema version, time, the estimate flag
  /// and, when given, the notes saying why.
  package mutating func envelope(generatedAt: Timestamp, estimateNotes: [String]?) {
    field("schema_version", StatusJSON.schemaVersion)
    field("generated_at", generatedAt.rfc3339(fractionDigits: 3))
    field("estimate", true)
    if let estimateNotes { field("estimate_notes", estimateNotes) }
  }

  package mutating func bool(_ value: Bool) {
    separate()
    append(value ? "true" : "false")
  }
  package mutating func null() {
    separate()
    append("null")
  }

  private mutating func appendDigits(_ value: UInt64) { output.appendDecimal(value) }
}
