import VPNStatModel

/// A streaming writer of compact JSON. Hand-written rather than Codable: the contract needs
/// explicit `null`s, a fixed key order and exact integers, and this is also several times faster.
package struct JSONWriter {
  private var output: OutputBytes
  /// Whether the next element of the open container needs a comma before it. No stack is
  /// needed: a container that closes was an element of its parent, which then needs one.
  private var needsComma = false
  /// The whole second `field(_:rfc3339:)` last wrote, and its text: the interfaces of a report
  /// were mostly first seen in one sample, so their thousand `first_seen_at` are one text, made
  /// once. Lent to each room (`JSONRoom`), which writes times the same way.
  private var lastTime: TimeText?

  /// A whole second and its RFC 3339 text (at most 32 bytes, held in four words).
  fileprivate struct TimeText {
    var seconds: Int64
    var count: Int
    var text: (UInt64, UInt64, UInt64, UInt64)
  }

  /// Where the bytes go as they are written, if anywhere before the end (`passOnIfFull`).
  package var sink: ((UnsafeRawBufferPointer) -> Void)?

  /// How much is handed to the sink at a time.
  package static let piece = 64 * 1024

  package init(capacity: Int = 1024) { output = OutputBytes(capacity: capacity) }

  /// Hands what is written to the sink once there is a piece of it, and reuses the buffer. The
  /// count first: `let sink` copies the closure (a retain and a release of its context), and
  /// this runs for every line.
  @inline(__always)
  package mutating func passOnIfFull() {
    if output.count >= Self.piece, let sink { output.drain(sink) }
  }

  /// Hands whatever is written to the sink.
  package mutating func passOn() {
    if let sink { output.drain(sink) }
  }

  /// Lends `body` room for `most` bytes at the end of the output, reserved at once: what it writes
  /// there is checked against that room alone, not against the buffer field by field.
  @inline(__always)
  package mutating func withRoom(_ most: Int, _ body: (inout JSONRoom) -> Void) {
    var needsComma = self.needsComma
    var lastTime = self.lastTime
    output.append(atMost: most) { start in
      var room = JSONRoom(start, count: most, needsComma: needsComma, lastTime: lastTime)
      body(&room)
      needsComma = room.needsComma
      lastTime = room.lastTime
      return room.at - start
    }
    self.needsComma = needsComma
    self.lastTime = lastTime
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
    if key.hasPointerRepresentation {
      let comma = needsComma
      output.append(atMost: key.utf8CodeUnitCount + 4) { Self.key(key, comma: comma, at: $0) }
    } else {
      if needsComma { output.append(0x2C) }
      output.append(0x22)
      output.append(key)
      output.append(0x22, 0x3A)
    }
    needsComma = false
  }

  /// Writes `,"key":` at `at` (the comma when `comma`), which has room for the key and 4 bytes
  /// more; returns how many bytes it wrote. A key and the value after it are written in one
  /// reservation of the output (`field`): keys are half of what a report writes, and a check of
  /// the buffer for each piece of each was a third of the time of writing them.
  @inline(__always)
  fileprivate static func key(_ key: StaticString, comma: Bool, at: UnsafeMutablePointer<UInt8>) -> Int {
    var written = 0
    if comma {
      at[0] = 0x2C
      written = 1
    }
    at[written] = 0x22
    let length = key.utf8CodeUnitCount
    (at + written + 1).update(from: key.utf8Start, count: length)
    at[written + 1 + length] = 0x22
    at[written + 2 + length] = 0x3A
    return written + 3 + length
  }

  /// Writes `null` at `at`; returns 4.
  @inline(__always)
  fileprivate static func null(at: UnsafeMutablePointer<UInt8>) -> Int {
    at[0] = 0x6E
    at[1] = 0x75
    at[2] = 0x6C
    at[3] = 0x6C
    return 4
  }

  /// Writes `value` (or `null`) at `at`, which has room for 21 bytes; returns how many it wrote.
  @inline(__always)
  fileprivate static func integer(_ value: Int64?, at: UnsafeMutablePointer<UInt8>) -> Int {
    guard let value else { return null(at: at) }
    guard value < 0 else { return OutputBytes.decimal(UInt64(value), at: at) }
    at[0] = 0x2D
    return 1 + OutputBytes.decimal(value.magnitude, at: at + 1)
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
    guard name.hasPointerRepresentation else {
      key(name)
      return number(value)
    }
    withRoom(JSONRoom.room(name, value: OutputBytes.maximumDigits)) { $0.field(name, value) }
  }
  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: Int?) {
    field(name, value.map(Int64.init))
  }
  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: Int64?) {
    guard name.hasPointerRepresentation else {
      key(name)
      if let value { number(value) } else { null() }
      return
    }
    withRoom(JSONRoom.room(name, value: OutputBytes.maximumDigits + 1)) { $0.field(name, value) }
  }
  /// A rate or ratio, as `number(_: Double?)` writes it.
  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: Double?) {
    guard value == nil else {
      key(name)
      return number(value)
    }
    field(name, nil as UInt64?)
  }
  /// A time as RFC 3339 in UTC (whole seconds), `null` for none: written straight into the
  /// output with its key, no String made of it.
  package mutating func field(_ name: StaticString, rfc3339 time: Timestamp?) {
    guard let time, name.hasPointerRepresentation else {
      key(name)
      return string(time?.rfc3339)
    }
    withRoom(JSONRoom.room(name, value: JSONRoom.timeTextRoom)) { $0.field(name, rfc3339: time) }
  }

  /// A time as RFC 3339 in UTC with `fractionDigits` digits of the second (`null` for none),
  /// written straight into the output with its key: a flow report writes two a flow.
  package mutating func field(_ name: StaticString, rfc3339 time: Timestamp?, fractionDigits: Int) {
    guard let time, fractionDigits > 0 else { return field(name, rfc3339: time) }
    var text: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    withUnsafeMutableBytes(of: &text) { raw in
      let bytes = UnsafeMutableBufferPointer(
        start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: raw.count)
      let count = time.rfc3339(fractionDigits: fractionDigits, into: bytes)
      field(name, plain: UnsafeBufferPointer(rebasing: bytes[..<count]))
    }
  }
  /// Whole fields written out beforehand (`"a":null,"b":null`), as the next elements of the open
  /// object: a report's fields that are all `null` together (no ledger, no rate, no WireGuard,
  /// no manager) are a dozen of its thirty, and one copy of them costs what one field did.
  package mutating func fields(_ run: StaticString) {
    withRoom(run.utf8CodeUnitCount + 1) { $0.fields(run) }
  }

  /// A key and an enum's raw value given as a literal (`InterfaceClass.word`): no String to
  /// read the bytes of.
  package mutating func field(_ name: StaticString, word value: StaticString) {
    field(name, literal: value)
  }

  /// A key and a word for its value — an enum's raw value, a protocol's name, an address's
  /// text: printable ASCII with nothing to escape (asserted), so it is copied as it is, with
  /// the key, in one reservation.
  package mutating func field(_ name: StaticString, word value: String) {
    var value = value
    value.withUTF8 { word in
      assert(word.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }, "a word needs no escape")
      field(name, plain: word)
    }
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

  /// `key`: an array of `{name, name_encoding}` objects, one per interface name.
  package mutating func names(_ key: StaticString, _ names: [InterfaceName]) {
    self.key(key)
    beginArray()
    for name in names {
      beginObject()
      self.name(name, key: "name", encodingKey: "name_encoding")
      endObject()
    }
    endArray()
  }

  /// An interface name under `key`, and how to read it under `encodingKey`; both null for none.
  /// A name of printable ASCII without a quote or a backslash (most of them) is written as its
  /// bytes, without making a String of it.
  @inline(__always)
  package mutating func name(_ name: InterfaceName?, key nameKey: StaticString, encodingKey: StaticString) {
    guard let name else {
      key(nameKey)
      null()
      key(encodingKey)
      null()
      return
    }
    let plain = name.withBytes { bytes in
      guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C }) else { return false }
      let utf8: StaticString = "utf8"
      withRoom(
        JSONRoom.room(nameKey, value: bytes.count + 2) + JSONRoom.room(encodingKey, value: utf8.utf8CodeUnitCount + 2)
      ) { room in
        room.field(nameKey, plain: bytes.assumingMemoryBound(to: UInt8.self))
        room.field(encodingKey, word: utf8)
      }
      return true
    }
    if plain { return }
    key(nameKey)
    string(name.jsonText)
    key(encodingKey)
    string(name.jsonEncoding)
  }

  /// A key and a string value known to need no escape: both in one reservation.
  private mutating func field(_ name: StaticString, literal value: StaticString) {
    guard value.hasPointerRepresentation else {
      key(name)
      return string(value.description)
    }
    field(name, plain: UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
  }

  /// A key and a string of `bytes` that need no escape (the caller checked), quoted: both in one
  /// reservation.
  private mutating func field(_ name: StaticString, plain bytes: UnsafeBufferPointer<UInt8>) {
    guard name.hasPointerRepresentation else {
      key(name)
      separate()
      output.append(0x22)
      output.append(bytes)
      return output.append(0x22)
    }
    withRoom(JSONRoom.room(name, value: bytes.count + 2)) { $0.field(name, plain: bytes) }
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

/// Room reserved at the end of a writer's output (`JSONWriter.withRoom`) for fields whose largest
/// size is known beforehand: each is written after one comparison of two pointers, where a
/// field written on its own checks the buffer's capacity and that no copy shares it. A report's
/// thirty fields, each checked on its own, took a third of the time of writing them.
package struct JSONRoom {
  fileprivate var at: UnsafeMutablePointer<UInt8>
  private let end: UnsafeMutablePointer<UInt8>
  /// Whether the next element of the open container needs a comma before it (as the writer's).
  fileprivate var needsComma: Bool
  /// The writer's last time and its text (`JSONWriter.lastTime`), lent for the room's life.
  fileprivate var lastTime: JSONWriter.TimeText?

  fileprivate init(
    _ start: UnsafeMutablePointer<UInt8>, count: Int, needsComma: Bool, lastTime: JSONWriter.TimeText?
  ) {
    at = start
    end = start + count
    self.needsComma = needsComma
    self.lastTime = lastTime
  }

  /// The most a time's text takes in `field(_:rfc3339:)`, with its quotes.
  package static let timeTextRoom = 32 + 2

  /// The most `field` writes for a key `name` and a value of at most `value` bytes: a comma,
  /// the quoted key and its colon besides.
  @inline(__always)
  package static func room(_ name: StaticString, value: Int) -> Int { name.utf8CodeUnitCount + 4 + value }

  /// Where the next `most` bytes go. Writing past the room would write past the buffer: a room
  /// too small for what is written in it stops the program rather than do that.
  @inline(__always)
  private func claim(_ most: Int) -> UnsafeMutablePointer<UInt8> {
    precondition(end - at >= most, "JSONRoom: more written than the room reserved")
    return at
  }

  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: UInt64?) {
    let start = claim(Self.room(name, value: OutputBytes.maximumDigits))
    let written = JSONWriter.key(name, comma: needsComma, at: start)
    at = start + written
    at += value.map { OutputBytes.decimal($0, at: at) } ?? JSONWriter.null(at: at)
    needsComma = true
  }

  @inline(__always)
  package mutating func field(_ name: StaticString, _ value: Int64?) {
    let start = claim(Self.room(name, value: OutputBytes.maximumDigits + 1))
    let written = JSONWriter.key(name, comma: needsComma, at: start)
    at = start + written
    at += JSONWriter.integer(value, at: at)
    needsComma = true
  }

  /// A key and an enum's raw value given as a literal (`InterfaceClass.word`).
  @inline(__always)
  package mutating func field(_ name: StaticString, word value: StaticString) {
    field(name, plain: UnsafeBufferPointer(start: value.utf8Start, count: value.utf8CodeUnitCount))
  }

  /// A key and a string of `bytes` that need no escape (the caller checked), quoted.
  @inline(__always)
  package mutating func field(_ name: StaticString, plain bytes: UnsafeBufferPointer<UInt8>) {
    let start = claim(Self.room(name, value: bytes.count + 2))
    var written = JSONWriter.key(name, comma: needsComma, at: start)
    start[written] = 0x22
    if let base = bytes.baseAddress { (start + written + 1).update(from: base, count: bytes.count) }
    written += bytes.count + 1
    start[written] = 0x22
    at = start + written + 1
    needsComma = true
  }

  /// A key and a time in RFC 3339, whole seconds, UTC, quoted. The text of the last second
  /// written is kept (`JSONWriter.lastTime`): a report's thousand `first_seen_at` are mostly
  /// one second, formatted once.
  package mutating func field(_ name: StaticString, rfc3339 time: Timestamp) {
    let seconds = time.seconds
    var last: JSONWriter.TimeText
    if let known = lastTime, known.seconds == seconds {
      last = known
    } else {
      last = JSONWriter.TimeText(seconds: seconds, count: 0, text: (0, 0, 0, 0))
      last.count = withUnsafeMutableBytes(of: &last.text) { raw in
        time.rfc3339(
          fractionDigits: 0,
          into: UnsafeMutableBufferPointer(
            start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: raw.count))
      }
      lastTime = last
    }
    withUnsafeBytes(of: last.text) { raw in
      field(
        name, plain: UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: last.count)
      )
    }
  }

  /// Whole fields written out beforehand (`"a":null,"b":null`), as the next elements of the
  /// open object (`JSONWriter.fields`).
  @inline(__always)
  package mutating func fields(_ run: StaticString) {
    let start = claim(run.utf8CodeUnitCount + 1)
    var written = 0
    if needsComma {
      start[0] = 0x2C
      written = 1
    }
    (start + written).update(from: run.utf8Start, count: run.utf8CodeUnitCount)
    at = start + written + run.utf8CodeUnitCount
    needsComma = true
  }

  /// Closes the open object.
  @inline(__always)
  package mutating func endObject() {
    claim(1).pointee = 0x7D
    at += 1
    needsComma = true
  }
}
