import VPNStatModel

/// One value of the D-Bus type system: what a method call carries and a reply brings back.
/// vpnstat sends bytes, booleans, integers, strings, object paths, signatures, variants and
/// `a{sv}` dictionaries; it reads every type, because a reply or a header field it does not
/// know must still be skipped exactly, and every one of them is checked as it is read.
package enum BusValue: Hashable, Sendable {
  case byte(UInt8)
  case boolean(Bool)
  case int16(Int16)
  case uint16(UInt16)
  case int32(Int32)
  case uint32(UInt32)
  case int64(Int64)
  case uint64(UInt64)
  case double(Double)
  case string(String)
  case objectPath(String)
  case signature(String)
  /// An index into the descriptors a message carries (vpnstat never asks for any).
  case unixFD(UInt32)
  /// The elements and their one type (given, so an empty array has a signature too).
  case array(element: String, [BusValue])
  case structure([BusValue])
  /// One entry of a dictionary: an array of these is `a{KV}`.
  indirect case dictionaryEntry(key: BusValue, value: BusValue)
  indirect case variant(BusValue)

  /// An `a{sv}` dictionary, entries in the order given: how freedesktop interfaces pass options.
  package static func dictionary(_ entries: [(String, BusValue)]) -> BusValue {
    .array(element: "{sv}", entries.map { .dictionaryEntry(key: .string($0.0), value: .variant($0.1)) })
  }

  /// An `as` array.
  package static func strings(_ strings: [String]) -> BusValue {
    .array(element: "s", strings.map { .string($0) })
  }

  /// The value's type, as a signature.
  package var signature: String {
    switch self {
    case .byte: "y"
    case .boolean: "b"
    case .int16: "n"
    case .uint16: "q"
    case .int32: "i"
    case .uint32: "u"
    case .int64: "x"
    case .uint64: "t"
    case .double: "d"
    case .string: "s"
    case .objectPath: "o"
    case .signature: "g"
    case .unixFD: "h"
    case .array(let element, _): "a" + element
    case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
    case .dictionaryEntry(let key, let value): "{" + key.signature + value.signature + "}"
    case .variant: "v"
    }
  }
}

/// One D-Bus message: a header (its kind, serial and fields) and a body of values. Encoded
/// little-endian; decoded in either byte order, every length, offset, padding byte and field
/// checked against the specification (a message from the bus is another program's bytes).
package struct BusMessage: Hashable, Sendable {
  package enum Kind: Hashable, Sendable {
    case methodCall
    case methodReturn
    case error
    case signal
    /// A kind this version of the protocol does not have: the specification says to ignore it.
    case other(UInt8)

    var code: UInt8 {
      switch self {
      case .methodCall: 1
      case .methodReturn: 2
      case .error: 3
      case .signal: 4
      case .other(let code): code
      }
    }

    init(code: UInt8) {
      switch code {
      case 1: self = .methodCall
      case 2: self = .methodReturn
      case 3: self = .error
      case 4: self = .signal
      default: self = .other(code)
      }
    }
  }

  /// The header's flags: the sender expects no reply; the bus must not start a service for it.
  package static let noReplyExpected: UInt8 = 0x1
  package static let noAutoStart: UInt8 = 0x2

  package var kind: Kind
  package var flags: UInt8 = 0
  /// The sender's number for this message: never 0.
  package var serial: UInt32
  package var path: String?
  package var interface: String?
  package var member: String?
  package var errorName: String?
  package var replySerial: UInt32?
  package var destination: String?
  package var sender: String?
  package var body: [BusValue] = []

  package init(
    kind: Kind, serial: UInt32, path: String? = nil, interface: String? = nil, member: String? = nil,
    errorName: String? = nil, replySerial: UInt32? = nil, destination: String? = nil, sender: String? = nil,
    body: [BusValue] = []
  ) {
    self.kind = kind
    self.serial = serial
    self.path = path
    self.interface = interface
    self.member = member
    self.errorName = errorName
    self.replySerial = replySerial
    self.destination = destination
    self.sender = sender
    self.body = body
  }

  /// The body's signature: its values' types in order.
  package var bodySignature: String { body.map(\.signature).joined() }

  /// Why bytes are not a D-Bus message (or a value cannot become one): said once, with where.
  package struct Malformed: Error, Hashable, Sendable, CustomStringConvertible {
    package var reason: String
    package init(_ reason: String) { self.reason = reason }
    package var description: String { reason }
  }

  /// The longest message the specification allows (128 MiB); a connection's own limit is lower.
  package static let maximumLength = 134_217_728
  /// The longest array the specification allows (64 MiB of elements).
  static let maximumArrayLength = 67_108_864

  // MARK: Encoding

  /// The message in the wire format, little-endian. Throws for what no bus would take: a
  /// string with a NUL in it, an invalid object path or signature, an array whose elements
  /// are not all of its type, a method call without a path or member.
  package func encoded() throws(Malformed) -> [UInt8] {
    guard serial != 0 else { throw Malformed("serial 0") }
    try checkRequiredFields()
    var body = BusEncoder()
    for value in self.body { try body.append(value) }
    var fields: [BusValue] = []
    func field(_ code: UInt8, _ value: BusValue?) {
      if let value { fields.append(.structure([.byte(code), .variant(value)])) }
    }
    field(1, path.map { .objectPath($0) })
    field(2, interface.map { .string($0) })
    field(3, member.map { .string($0) })
    field(4, errorName.map { .string($0) })
    field(5, replySerial.map { .uint32($0) })
    field(6, destination.map { .string($0) })
    field(7, sender.map { .string($0) })
    let signature = bodySignature
    field(8, signature.isEmpty ? nil : .signature(signature))
    var header = BusEncoder()
    header.bytes = [0x6C, kind.code, flags, 1]  // 'l': little-endian, protocol version 1
    header.appendFixed(UInt64(body.bytes.count), size: 4)
    header.appendFixed(UInt64(serial), size: 4)
    try header.append(.array(element: "(yv)", fields))
    header.pad(to: 8)
    guard header.bytes.count + body.bytes.count <= Self.maximumLength else { throw Malformed("longer than 128 MiB") }
    return header.bytes + body.bytes
  }

  private func checkRequiredFields() throws(Malformed) {
    switch kind {
    case .methodCall:
      guard path != nil, member != nil else { throw Malformed("a method call without a path or member") }
    case .signal:
      guard path != nil, interface != nil, member != nil else {
        throw Malformed("a signal without a path, interface or member")
      }
    case .error:
      guard errorName != nil, replySerial != nil else { throw Malformed("an error without a name or reply serial") }
    case .methodReturn:
      guard replySerial != nil else { throw Malformed("a method return without a reply serial") }
    case .other(let code):
      guard code != 0 else { throw Malformed("message type 0") }
    }
    if let replySerial, replySerial == 0 { throw Malformed("reply serial 0") }
  }

  // MARK: Decoding

  /// How long the message starting at `start` in `buffer` is, from its fixed 16-byte start
  /// (what a reader needs to know how much more to read); nil while fewer than 16 bytes are
  /// there. The length is computed in full, never wrapped: a caller compares it with its limit
  /// before reading on. Throws when the start is not a message's.
  package static func length(of buffer: [UInt8], at start: Int = 0) throws(Malformed) -> Int? {
    guard start >= 0, buffer.count - start >= 16 else { return nil }
    let bigEndian: Bool
    switch buffer[start] {
    case 0x6C: bigEndian = false
    case 0x42: bigEndian = true
    default: throw Malformed("byte order \(buffer[start]) is neither 'l' nor 'B'")
    }
    guard buffer[start + 1] != 0 else { throw Malformed("message type 0") }
    guard buffer[start + 3] == 1 else { throw Malformed("protocol version \(buffer[start + 3]), not 1") }
    func word(_ offset: Int) -> Int {
      var value = 0
      for index in 0..<4 {
        let byte = Int(buffer[start + offset + (bigEndian ? index : 3 - index)])
        value = value << 8 | byte
      }
      return value
    }
    let bodyLength = word(4)
    let fieldsLength = word(12)
    return (16 + fieldsLength + 7) / 8 * 8 + bodyLength
  }

  /// Decodes the message that is exactly `bytes`. Every length, offset and padding byte is
  /// checked; the header must have the fields its kind requires, each of its type; the body
  /// must be exactly what its signature says.
  package init(decoding bytes: [UInt8]) throws(Malformed) {
    guard let length = try Self.length(of: bytes) else {
      throw Malformed("shorter than a header (\(bytes.count) bytes)")
    }
    guard length == bytes.count else { throw Malformed("\(bytes.count) bytes for a message of \(length)") }
    let bigEndian = bytes[0] == 0x42
    var decoder = BusDecoder(bytes: bytes, bigEndian: bigEndian)
    decoder.position = 4
    let bodyLength = Int(try decoder.fixed(size: 4))
    serial = UInt32(try decoder.fixed(size: 4))
    guard serial != 0 else { throw Malformed("serial 0") }
    kind = Kind(code: bytes[1])
    flags = bytes[2]
    let fields = try decoder.values(of: Array("a(yv)".utf8))
    try decoder.align(8)
    guard decoder.position + bodyLength == bytes.count else { throw Malformed("the header does not end where it says") }
    var signature = ""
    var seen: Set<UInt8> = []
    guard case .array(_, let entries) = fields.first else { throw Malformed("no header fields") }
    for entry in entries {
      guard case .structure(let parts) = entry, parts.count == 2, case .byte(let code) = parts[0],
        case .variant(let value) = parts[1]
      else { throw Malformed("a header field that is not (yv)") }
      guard (1...9).contains(code) else { continue }  // unknown fields are ignored, as the specification says
      guard seen.insert(code).inserted else { throw Malformed("header field \(code) twice") }
      switch (code, value) {
      case (1, .objectPath(let text)): path = text
      case (2, .string(let text)): interface = text
      case (3, .string(let text)): member = text
      case (4, .string(let text)): errorName = text
      case (5, .uint32(let number)): replySerial = number
      case (6, .string(let text)): destination = text
      case (7, .string(let text)): sender = text
      case (8, .signature(let text)): signature = text
      case (9, .uint32): break  // descriptors: never asked for, so never passed
      default: throw Malformed("header field \(code) of type \(value.signature)")
      }
    }
    try checkRequiredFields()
    body = try decoder.values(of: Array(signature.utf8))
    guard decoder.position == bytes.count else {
      throw Malformed("\(bytes.count - decoder.position) bytes after a body of signature \"\(signature)\"")
    }
  }
}

/// Signatures: the type grammar and its limits (255 bytes, 32 nested arrays, 32 nested
/// structures), checked before any value is read with one.
enum BusSignature {
  static let basic: Set<UInt8> = Set("ybnqiuxtdsogh".utf8)

  /// Where the single complete type that starts at `start` ends; throws when there is none.
  static func endOfType(_ signature: [UInt8], at start: Int, arrays: Int = 0, structures: Int = 0) throws(BusMessage
    .Malformed) -> Int
  {
    guard start < signature.count else { throw .init("signature \"\(text(signature))\" ends inside a type") }
    let code = signature[start]
    if basic.contains(code) || code == UInt8(ascii: "v") { return start + 1 }
    switch code {
    case UInt8(ascii: "a"):
      guard arrays < 32 else { throw .init("arrays nested deeper than 32") }
      if start + 1 < signature.count, signature[start + 1] == UInt8(ascii: "{") {
        guard structures < 32 else { throw .init("structures nested deeper than 32") }
        guard start + 2 < signature.count, basic.contains(signature[start + 2]) else {
          throw .init("a dictionary key that is not a basic type in \"\(text(signature))\"")
        }
        let valueEnd = try endOfType(signature, at: start + 3, arrays: arrays + 1, structures: structures + 1)
        guard valueEnd < signature.count, signature[valueEnd] == UInt8(ascii: "}") else {
          throw .init("a dictionary entry without exactly two types in \"\(text(signature))\"")
        }
        return valueEnd + 1
      }
      return try endOfType(signature, at: start + 1, arrays: arrays + 1, structures: structures)
    case UInt8(ascii: "("):
      guard structures < 32 else { throw .init("structures nested deeper than 32") }
      var index = start + 1
      guard index < signature.count, signature[index] != UInt8(ascii: ")") else {
        throw .init("an empty or unclosed structure in \"\(text(signature))\"")
      }
      while index < signature.count, signature[index] != UInt8(ascii: ")") {
        index = try endOfType(signature, at: index, arrays: arrays, structures: structures + 1)
      }
      guard index < signature.count else { throw .init("an unclosed structure in \"\(text(signature))\"") }
      return index + 1
    default:
      throw .init("type code \(code) in signature \"\(text(signature))\"")
    }
  }

  /// Throws unless `signature` is a valid sequence of complete types.
  static func validate(_ signature: [UInt8]) throws(BusMessage.Malformed) {
    guard signature.count <= 255 else { throw .init("a signature of \(signature.count) bytes") }
    var index = 0
    while index < signature.count { index = try endOfType(signature, at: index) }
  }

  /// The boundary a value of the type starting with `code` is aligned to.
  static func alignment(_ code: UInt8) -> Int {
    switch code {
    case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
    case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "h"), UInt8(ascii: "s"),
      UInt8(ascii: "o"), UInt8(ascii: "a"):
      4
    case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): 8
    default: 1
    }
  }

  static func text(_ signature: [UInt8]) -> String { String(decoding: signature, as: UTF8.self) }

  /// True for a valid object path: `/`, or `/`-separated elements of `[A-Za-z0-9_]`.
  static func isObjectPath(_ bytes: some Collection<UInt8>) -> Bool {
    guard bytes.first == UInt8(ascii: "/") else { return false }
    if bytes.count == 1 { return true }
    var previousWasSlash = false
    for byte in bytes {
      if byte == UInt8(ascii: "/") {
        if previousWasSlash { return false }
        previousWasSlash = true
      } else {
        let allowed =
          (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
          || byte == 0x5F
        guard allowed else { return false }
        previousWasSlash = false
      }
    }
    return !previousWasSlash
  }
}

/// Writes values in the wire format, little-endian, aligned from the start of its bytes (a
/// body starts on an 8-byte boundary of its message, so its alignment is the message's).
struct BusEncoder {
  var bytes: [UInt8] = []

  mutating func pad(to boundary: Int) {
    while bytes.count % boundary != 0 { bytes.append(0) }
  }

  mutating func appendFixed(_ value: UInt64, size: Int) {
    pad(to: size)
    for index in 0..<size { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
  }

  private mutating func appendText(_ text: String, lengthSize: Int) throws(BusMessage.Malformed) {
    let utf8 = Array(text.utf8)
    guard !utf8.contains(0) else { throw .init("a string with a NUL byte") }
    appendFixed(UInt64(utf8.count), size: lengthSize)
    bytes += utf8
    bytes.append(0)
  }

  mutating func append(_ value: BusValue, depth: Int = 0) throws(BusMessage.Malformed) {
    guard depth <= 64 else { throw .init("values nested deeper than 64") }
    switch value {
    case .byte(let byte): bytes.append(byte)
    case .boolean(let flag): appendFixed(flag ? 1 : 0, size: 4)
    case .int16(let number): appendFixed(UInt64(UInt16(bitPattern: number)), size: 2)
    case .uint16(let number): appendFixed(UInt64(number), size: 2)
    case .int32(let number): appendFixed(UInt64(UInt32(bitPattern: number)), size: 4)
    case .uint32(let number): appendFixed(UInt64(number), size: 4)
    case .int64(let number): appendFixed(UInt64(bitPattern: number), size: 8)
    case .uint64(let number): appendFixed(number, size: 8)
    case .double(let number): appendFixed(number.bitPattern, size: 8)
    case .string(let text): try appendText(text, lengthSize: 4)
    case .objectPath(let text):
      guard BusSignature.isObjectPath(text.utf8) else { throw .init("\"\(text)\" is not an object path") }
      try appendText(text, lengthSize: 4)
    case .signature(let text):
      try BusSignature.validate(Array(text.utf8))
      try appendText(text, lengthSize: 1)
    case .unixFD: throw .init("a descriptor, which this connection cannot pass")
    case .array(let element, let elements):
      let elementSignature = Array(element.utf8)
      let arraySignature = [UInt8(ascii: "a")] + elementSignature
      guard !elementSignature.isEmpty, try BusSignature.endOfType(arraySignature, at: 0) == arraySignature.count
      else { throw .init("array element type \"\(element)\" is not one complete type") }
      appendFixed(0, size: 4)
      let lengthAt = bytes.count - 4
      pad(to: BusSignature.alignment(elementSignature[0]))
      let start = bytes.count
      for value in elements {
        guard value.signature == element else { throw .init("a \(value.signature) in an array of \(element)") }
        try append(value, depth: depth + 1)
      }
      let length = bytes.count - start
      guard length <= BusMessage.maximumArrayLength else { throw .init("an array of \(length) bytes") }
      for index in 0..<4 { bytes[lengthAt + index] = UInt8(truncatingIfNeeded: length >> (8 * index)) }
    case .structure(let fields):
      guard !fields.isEmpty else { throw .init("an empty structure") }
      pad(to: 8)
      for field in fields { try append(field, depth: depth + 1) }
    case .dictionaryEntry(let key, let value):
      guard BusSignature.basic.contains(key.signature.utf8.first ?? 0) else {
        throw .init("a dictionary key of type \(key.signature)")
      }
      pad(to: 8)
      try append(key, depth: depth + 1)
      try append(value, depth: depth + 1)
    case .variant(let inner):
      try appendText(inner.signature, lengthSize: 1)
      try append(inner, depth: depth + 1)
    }
  }
}

/// Reads values from one whole message, in its byte order. It never reads past `end` (the
/// message's, or the array's it is inside), and it throws — never traps — on anything the
/// specification forbids: lengths past the end, non-zero padding, invalid UTF-8, a NUL inside a
/// string, a boolean other than 0 or 1, nesting deeper than 64.
struct BusDecoder {
  let bytes: [UInt8]
  let bigEndian: Bool
  var position = 0
  var end: Int

  init(bytes: [UInt8], bigEndian: Bool) {
    self.bytes = bytes
    self.bigEndian = bigEndian
    end = bytes.count
  }

  mutating func align(_ boundary: Int) throws(BusMessage.Malformed) {
    let aligned = (position + boundary - 1) / boundary * boundary
    guard aligned <= end else { throw .init("padding past the end at offset \(position)") }
    while position < aligned {
      guard bytes[position] == 0 else { throw .init("non-zero padding at offset \(position)") }
      position += 1
    }
  }

  mutating func fixed(size: Int) throws(BusMessage.Malformed) -> UInt64 {
    try align(size)
    guard end - position >= size else { throw .init("a \(size)-byte value past the end at offset \(position)") }
    var value: UInt64 = 0
    for index in 0..<size {
      let byte = UInt64(bytes[position + (bigEndian ? index : size - 1 - index)])
      value = value << 8 | byte
    }
    position += size
    return value
  }

  private mutating func text(lengthSize: Int) throws(BusMessage.Malformed) -> [UInt8] {
    let length = Int(try fixed(size: lengthSize))
    guard length < end - position else { throw .init("a string of \(length) bytes past the end at offset \(position)") }
    let text = Array(bytes[position..<position + length])
    guard bytes[position + length] == 0 else { throw .init("a string without its NUL at offset \(position + length)") }
    guard !text.contains(0) else { throw .init("a NUL inside a string at offset \(position)") }
    position += length + 1
    return text
  }

  private mutating func string(lengthSize: Int) throws(BusMessage.Malformed) -> String {
    let utf8 = try text(lengthSize: lengthSize)
    guard let string = String(validating: utf8, as: UTF8.self) else {
      throw .init("a string that is not UTF-8 before offset \(position)")
    }
    return string
  }

  /// The values of a whole signature, in order.
  mutating func values(of signature: [UInt8], depth: Int = 0) throws(BusMessage.Malformed) -> [BusValue] {
    try BusSignature.validate(signature)
    var values: [BusValue] = []
    var index = 0
    while index < signature.count {
      let typeEnd = try BusSignature.endOfType(signature, at: index)
      values.append(try value(signature, index, typeEnd, depth: depth))
      index = typeEnd
    }
    return values
  }

  /// The value of the (valid) complete type `signature[start..<typeEnd]`.
  mutating func value(_ signature: [UInt8], _ start: Int, _ typeEnd: Int, depth: Int) throws(BusMessage.Malformed)
    -> BusValue
  {
    guard depth <= 64 else { throw .init("values nested deeper than 64") }
    switch signature[start] {
    case UInt8(ascii: "y"): return .byte(UInt8(try fixed(size: 1)))
    case UInt8(ascii: "b"):
      let flag = try fixed(size: 4)
      guard flag <= 1 else { throw .init("a boolean of \(flag) at offset \(position - 4)") }
      return .boolean(flag == 1)
    case UInt8(ascii: "n"): return .int16(Int16(bitPattern: UInt16(try fixed(size: 2))))
    case UInt8(ascii: "q"): return .uint16(UInt16(try fixed(size: 2)))
    case UInt8(ascii: "i"): return .int32(Int32(bitPattern: UInt32(try fixed(size: 4))))
    case UInt8(ascii: "u"): return .uint32(UInt32(try fixed(size: 4)))
    case UInt8(ascii: "h"): return .unixFD(UInt32(try fixed(size: 4)))
    case UInt8(ascii: "x"): return .int64(Int64(bitPattern: try fixed(size: 8)))
    case UInt8(ascii: "t"): return .uint64(try fixed(size: 8))
    case UInt8(ascii: "d"): return .double(Double(bitPattern: try fixed(size: 8)))
    case UInt8(ascii: "s"): return .string(try string(lengthSize: 4))
    case UInt8(ascii: "o"):
      let path = try text(lengthSize: 4)
      guard BusSignature.isObjectPath(path) else { throw .init("an invalid object path before offset \(position)") }
      return .objectPath(String(decoding: path, as: UTF8.self))
    case UInt8(ascii: "g"):
      let inner = try text(lengthSize: 1)
      try BusSignature.validate(inner)
      return .signature(String(decoding: inner, as: UTF8.self))
    case UInt8(ascii: "v"):
      let inner = try text(lengthSize: 1)
      guard !inner.isEmpty, try BusSignature.endOfType(inner, at: 0) == inner.count else {
        throw .init("a variant of \"\(BusSignature.text(inner))\", not one complete type")
      }
      return .variant(try value(inner, 0, inner.count, depth: depth + 1))
    case UInt8(ascii: "a"):
      let length = Int(try fixed(size: 4))
      guard length <= BusMessage.maximumArrayLength else { throw .init("an array of \(length) bytes") }
      try align(BusSignature.alignment(signature[start + 1]))
      guard length <= end - position else {
        throw .init("an array of \(length) bytes past the end at offset \(position)")
      }
      let arrayEnd = position + length
      let outerEnd = end
      end = arrayEnd
      defer { end = outerEnd }
      var elements: [BusValue] = []
      while position < arrayEnd {
        elements.append(try value(signature, start + 1, typeEnd, depth: depth + 1))
      }
      return .array(element: String(decoding: signature[(start + 1)..<typeEnd], as: UTF8.self), elements)
    case UInt8(ascii: "("):
      try align(8)
      var fields: [BusValue] = []
      var index = start + 1
      while index < typeEnd - 1 {
        let fieldEnd = try BusSignature.endOfType(signature, at: index)
        fields.append(try value(signature, index, fieldEnd, depth: depth + 1))
        index = fieldEnd
      }
      return .structure(fields)
    case UInt8(ascii: "{"):
      try align(8)
      let keyEnd = start + 2
      let key = try value(signature, start + 1, keyEnd, depth: depth + 1)
      let entry = try value(signature, keyEnd, typeEnd - 1, depth: depth + 1)
      return .dictionaryEntry(key: key, value: entry)
    default:
      throw .init("type code \(signature[start])")
    }
  }
}
