import Foundation
import Testing
import VPNStatSimulation

@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Bytes written as hex, whitespace ignored.
func hexBytes(_ text: String) -> [UInt8] {
  let digits = text.filter { !$0.isWhitespace }
  var bytes: [UInt8] = []
  var index = digits.startIndex
  while index < digits.endIndex {
    let next = digits.index(index, offsetBy: 2)
    bytes.append(UInt8(digits[index..<next], radix: 16)!)
    index = next
  }
  return bytes
}

func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

func littleEndian32(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

/// A method return (serial 7, answering serial 1) with the body signature and body given as
/// bytes, made by hand so that both can be anything, valid or not.
func rawReply(signature: [UInt8], body: [UInt8], serial: Int = 7) -> [UInt8] {
  var fields = hexBytes("05017500 01000000")  // REPLY_SERIAL, variant "u", 1
  if !signature.isEmpty { fields += hexBytes("08016700") + [UInt8(signature.count)] + signature + [0] }
  var message =
    hexBytes("6c020001") + littleEndian32(body.count) + littleEndian32(serial) + littleEndian32(fields.count)
  message += fields
  while message.count % 8 != 0 { message.append(0) }
  return message + body
}

/// The D-Bus wire format as vpnstat writes and reads it: byte sequences worked out by hand from
/// the specification, bytes GLib's gdbus and dunst sent on a real bus (captured with
/// `dbus-monitor --binary`), and malformed bytes that must be refused, never crash.
struct BusMessageTests {
  /// `Hello` as the specification lays it out: the 12-byte fixed header, the field array's
  /// length (109), then each field — a structure, so on an 8-byte boundary — of its code, its
  /// variant's signature, and its value (a string: 4-byte length, bytes, NUL), the header padded
  /// to 8 bytes, and no body (no SIGNATURE field).
  static let hello =
    // 'l', method call, no flags, version 1; no body; serial 1; 109 bytes of fields.
    hexBytes("6c 01 00 01  00000000  01000000  6d000000")
    // PATH, an object path, then padding to 48.
    + hexBytes("01 01 6f 00  15000000") + ascii("/org/freedesktop/DBus") + hexBytes("00  0000")
    // INTERFACE, a string, then padding to 80.
    + hexBytes("02 01 73 00  14000000") + ascii("org.freedesktop.DBus") + hexBytes("00  000000")
    // MEMBER, then padding to 96.
    + hexBytes("03 01 73 00  05000000") + ascii("Hello") + hexBytes("00  0000")
    // DESTINATION, then the header's padding to 128.
    + hexBytes("06 01 73 00  14000000") + ascii("org.freedesktop.DBus") + hexBytes("00  000000")

  @Test("Hello is encoded byte for byte as the specification lays it out, and decodes to its fields")
  func helloAsTheSpecificationSays() throws {
    let message = BusMessage(
      kind: .methodCall, serial: 1, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "Hello",
      destination: "org.freedesktop.DBus")
    #expect(try message.encoded() == Self.hello)
    #expect(Self.hello.count == 128)
    #expect(try BusMessage.length(of: Self.hello) == 128)
    #expect(try BusMessage(decoding: Self.hello) == message)
  }

  @Test("an a{sv} is a length, padding to 8, then key, variant signature and value per entry")
  func dictionaryAsTheSpecificationSays() throws {
    var encoder = BusEncoder()
    try encoder.append(.dictionary([("urgency", .byte(2))]))
    // Length 16 (from offset 8, where the first entry starts, to 24), 4 bytes of padding,
    // "urgency" as a string, the variant's signature "y", the byte.
    let expected = hexBytes("10000000 00000000 07000000") + ascii("urgency") + hexBytes("00 01 79 00 02")
    #expect(encoder.bytes == expected)
    var decoder = BusDecoder(bytes: expected, bigEndian: false)
    #expect(try decoder.values(of: ascii("a{sv}")) == [.dictionary([("urgency", .byte(2))])])
  }

  @Test("a big-endian message is read in its own byte order")
  func bigEndian() throws {
    let bytes =
      hexBytes("42 02 00 01  00000004  00000002  0000000f")  // 'B', method return, body 4, serial 2, fields 15
      + hexBytes("05 01 75 00  00000001")  // REPLY_SERIAL u 1
      + hexBytes("08 01 67 00  01 75 00  00")  // SIGNATURE g "u", padding to 32
      + hexBytes("0000002a")  // 42
    let message = try BusMessage(decoding: bytes)
    #expect(message.kind == .methodReturn)
    #expect(message.serial == 2)
    #expect(message.replySerial == 1)
    #expect(message.body == [.uint32(42)])
  }

  /// gdbus's `Notify` to dunst: `'vpnstat'`, `uint32 0`, `''`, `'Session ends in 5 minutes'`,
  /// `'wg0 disconnects at 14:32.'`, `@as []`, `{'urgency': <byte 2>, 'category': <'network'>,
  /// 'desktop-entry': <'vpnstat'>}`, `int32 60000`, as the bus passed it on (with SENDER).
  static let gdbusNotify = hexBytes(
    """
    6c010001b800000003000000ad00000001016f001e0000002f6f72672f667265656465736b746f702f4e6f7469666963
    6174696f6e730000020173001d0000006f72672e667265656465736b746f702e4e6f74696669636174696f6e73000000
    060173001d0000006f72672e667265656465736b746f702e4e6f74696669636174696f6e73000000080167000d737573
    73736173617b73767d6900000000000003017300060000004e6f74696679000007017300040000003a312e3600000000
    0700000076706e73746174000000000000000000000000001900000053657373696f6e20656e647320696e2035206d69
    6e757465730000001900000077673020646973636f6e6e656374732061742031343a33322e0000000000000054000000
    07000000757267656e637900017900020800000063617465676f727900017300070000006e6574776f726b0000000000
    0d0000006465736b746f702d656e747279000173000000000700000076706e737461740060ea0000
    """)
  /// dunst's reply to it: the id 2.
  static let dunstNotifyReply = hexBytes(
    """
    6c02010104000000040000002d00000006017300040000003a312e360000000008016700017500000501750003000000
    07017300040000003a312e310000000002000000
    """)
  /// dunst's answer to `GetServerInformation`.
  static let dunstServerInformation = hexBytes(
    """
    6c02010138000000060000003500000006017300040000003a312e370000000008016700047373737300000000000000
    050175000300000007017300040000003a312e31000000000500000064756e7374000000070000006b6e6f70776f6200
    12000000312e392e302028323032322d30362d323729000003000000312e3200
    """)
  /// dbus-daemon's error for a call to a name nobody owns.
  static let busServiceUnknown = hexBytes(
    """
    6c03010147000000040000007500000006017300040000003a312e380000000004017300290000006f72672e66726565
    6465736b746f702e444275732e4572726f722e53657276696365556e6b6e6f776e000000000000000501750003000000
    080167000173000007017300140000006f72672e667265656465736b746f702e44427573000000004200000054686520
    6e616d65206f72672e6578616d706c652e4e6f626f647920776173206e6f742070726f766964656420627920616e7920
    2e736572766963652066696c657300
    """)

  static let notifyArguments: [BusValue] = [
    .string("vpnstat"), .uint32(0), .string(""), .string("Session ends in 5 minutes"),
    .string("wg0 disconnects at 14:32."), .strings([]),
    .dictionary([("urgency", .byte(2)), ("category", .string("network")), ("desktop-entry", .string("vpnstat"))]),
    .int32(60000),
  ]

  @Test("gdbus's Notify decodes to its arguments, and those arguments encode to gdbus's very body bytes")
  func sameBodyAsGDBus() throws {
    let message = try BusMessage(decoding: Self.gdbusNotify)
    #expect(message.kind == .methodCall)
    #expect(message.member == "Notify")
    #expect(message.interface == "org.freedesktop.Notifications")
    #expect(message.path == "/org/freedesktop/Notifications")
    #expect(message.destination == "org.freedesktop.Notifications")
    #expect(message.sender == ":1.6")
    #expect(message.bodySignature == "susssasa{sv}i")
    #expect(message.body == Self.notifyArguments)
    var body = BusEncoder()
    for value in Self.notifyArguments { try body.append(value) }
    #expect(body.bytes.count == 0xb8)
    #expect(body.bytes == Array(Self.gdbusNotify.suffix(0xb8)))
  }

  @Test("dunst's replies and dbus-daemon's error decode to what they say")
  func repliesFromRealPeers() throws {
    let reply = try BusMessage(decoding: Self.dunstNotifyReply)
    #expect(reply.kind == .methodReturn)
    #expect(reply.replySerial == 3)
    #expect(reply.body == [.uint32(2)])
    let information = try BusMessage(decoding: Self.dunstServerInformation)
    #expect(information.body == [.string("dunst"), .string("knopwob"), .string("1.9.0 (2022-06-27)"), .string("1.2")])
    let error = try BusMessage(decoding: Self.busServiceUnknown)
    #expect(error.kind == .error)
    #expect(error.errorName == "org.freedesktop.DBus.Error.ServiceUnknown")
    #expect(error.sender == "org.freedesktop.DBus")
    #expect(
      error.body == [.string("The name org.example.Nobody was not provided by any .service files")])
  }

  static let everyType = BusMessage(
    kind: .signal, serial: 9, path: "/a/b_1", interface: "x.y", member: "Z",
    body: [
      .byte(0xFF), .boolean(true), .int16(-2), .uint16(65535), .int32(-3), .uint32(4_000_000_000), .int64(-5),
      .uint64(UInt64.max), .double(-0.5), .string("ünïcode"), .objectPath("/"), .signature("a{sv}(ii)"),
      .array(element: "(yx)", []),
      .array(element: "(yx)", [.structure([.byte(1), .int64(2)]), .structure([.byte(3), .int64(4)])]),
      .array(element: "{ub}", [.dictionaryEntry(key: .uint32(1), value: .boolean(false))]),
      .variant(.variant(.array(element: "ay", [.array(element: "y", [.byte(1)])]))),
      .structure([.string(""), .structure([.double(1)])]),
    ])

  @Test("every type round-trips, alignment included (an empty array of structures is padded too)")
  func everyTypeRoundTrips() throws {
    let bytes = try Self.everyType.encoded()
    #expect(try BusMessage.length(of: bytes) == bytes.count)
    #expect(try BusMessage(decoding: bytes) == Self.everyType)
  }

  @Test("every prefix of a message is incomplete, never a message and never a crash")
  func truncated() throws {
    for bytes in [Self.hello, Self.gdbusNotify, try Self.everyType.encoded()] {
      for count in 0..<bytes.count {
        let prefix = Array(bytes[..<count])
        #expect(try BusMessage.length(of: prefix) == (count < 16 ? nil : bytes.count))
        #expect(throws: BusMessage.Malformed.self) { try BusMessage(decoding: prefix) }
      }
    }
  }

  @Test("mutated messages (every byte set to edge values; 20,000 random mutations) are refused or read consistently")
  func mutations() throws {
    var refused = 0
    var read = 0
    func check(_ bytes: [UInt8]) {
      guard let message = try? BusMessage(decoding: bytes) else {
        refused += 1
        return
      }
      read += 1
      // What was read is a valid message: it encodes (unless it holds a descriptor, which
      // vpnstat never sends), and what that encoding reads back as encodes to the same bytes.
      let again: [UInt8]
      do {
        again = try message.encoded()
      } catch {
        if !error.reason.contains("descriptor") {
          Issue.record("a decoded message does not encode: \(error) \(message)")
        }
        return
      }
      #expect((try? BusMessage(decoding: again).encoded()) == again)
    }
    let originals = [Self.hello, Self.gdbusNotify, Self.dunstServerInformation, try Self.everyType.encoded()]
    for original in originals {
      for index in original.indices {
        for value: UInt8 in [0x00, 0x01, 0x7F, 0x80, 0xFF, original[index] &+ 1] {
          var bytes = original
          bytes[index] = value
          check(bytes)
        }
      }
    }
    var random = SplitMix(seed: 23)  // the same mutations on every run
    for _ in 0..<20_000 {
      var bytes = originals[Int.random(in: 0..<originals.count, using: &random)]
      for _ in 0..<Int.random(in: 1...4, using: &random) {
        bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
      }
      if Bool.random(using: &random) { bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random))) }
      check(bytes)
    }
    #expect(refused > 10_000)
    #expect(read > 100)
  }

  @Test(
    "malformed bodies are refused with the reason",
    arguments: [
      (ascii("as"), littleEndian32(100), "past the end"),
      (ascii("as"), littleEndian32(0x7FFF_FFF0), "an array of 2147483632 bytes"),
      (ascii("ay"), littleEndian32(0xFFFF_FFFF), "an array of 4294967295 bytes"),
      (ascii("t"), hexBytes("00000000"), "past the end"),
      (ascii("yt"), hexBytes("01 00000001000000 0100000000000000"), "non-zero padding"),
      (ascii("s"), littleEndian32(3) + ascii("abcd"), "without its NUL"),
      (ascii("s"), littleEndian32(3) + hexBytes("61 00 62 00"), "a NUL inside a string"),
      (ascii("s"), littleEndian32(2) + hexBytes("c3 28 00"), "not UTF-8"),
      (ascii("s"), littleEndian32(5) + ascii("abc"), "past the end"),
      (ascii("b"), littleEndian32(2), "a boolean of 2"),
      (ascii("o"), littleEndian32(3) + ascii("//a") + [0], "object path"),
      (ascii("o"), littleEndian32(2) + ascii("/a/") + [0], "without its NUL"),
      (ascii("o"), littleEndian32(3) + ascii("/a/") + [0], "object path"),
      (ascii("g"), hexBytes("01 7b 00"), "type code 123"),
      (ascii("v"), hexBytes("02 75 75 00") + littleEndian32(1), "not one complete type"),
      (ascii("v"), hexBytes("00 00"), "not one complete type"),
      (ascii("u"), littleEndian32(1) + littleEndian32(2), "bytes after a body"),
      (ascii("uu"), littleEndian32(1), "past the end"),
      (ascii("a"), [], "ends inside a type"),
      (ascii("("), [], "unclosed"),
      (ascii("()"), [], "empty or unclosed structure"),
      (ascii("{sv}"), [], "type code 123"),
      (ascii("a{vs}"), [], "not a basic type"),
      (ascii("a{sss}"), [], "without exactly two types"),
      (ascii(String(repeating: "a", count: 33) + "y"), [], "arrays nested deeper than 32"),
      (ascii(String(repeating: "(", count: 33) + "y" + String(repeating: ")", count: 33)), [], "structures nested"),
      (ascii("z"), [], "type code 122"),
    ] as [([UInt8], [UInt8], String)])
  func malformedBodies(signature: [UInt8], body: [UInt8], reason: String) throws {
    let bytes = rawReply(signature: signature, body: body)
    do {
      let message = try BusMessage(decoding: bytes)
      Issue.record("read as \(message)")
    } catch {
      #expect(error.reason.contains(reason), "\(error.reason)")
    }
  }

  @Test("a signature longer than 255 bytes and variants nested past 64 are refused, not followed")
  func limits() throws {
    let long = ascii(String(repeating: "y", count: 256))
    #expect(throws: BusMessage.Malformed("a signature of 256 bytes")) {
      var decoder = BusDecoder(bytes: [], bigEndian: false)
      _ = try decoder.values(of: long)
    }
    // A variant holding a variant … 100 deep: a bus must not make vpnstat recurse without end.
    let nested = Array(repeating: hexBytes("01 76 00"), count: 100).flatMap { $0 }
    let bytes = rawReply(signature: ascii("v"), body: nested + hexBytes("01 79 00 05"))
    #expect(throws: BusMessage.Malformed("values nested deeper than 64")) { try BusMessage(decoding: bytes) }
  }

  @Test("headers: required fields, their types, duplicates, serial 0, byte order, version and type are checked")
  func malformedHeaders() throws {
    func refused(_ bytes: [UInt8], _ reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
      do {
        let message = try BusMessage(decoding: bytes)
        Issue.record("read as \(message)", sourceLocation: sourceLocation)
      } catch {
        #expect(error.reason.contains(reason), "\(error.reason)", sourceLocation: sourceLocation)
      }
    }
    let valid = rawReply(signature: ascii("u"), body: littleEndian32(5))
    #expect(try BusMessage(decoding: valid).body == [.uint32(5)])
    var bytes = valid
    bytes[0] = 0x41
    refused(bytes, "byte order 65")
    bytes = valid
    bytes[3] = 2
    refused(bytes, "protocol version 2")
    bytes = valid
    bytes[1] = 0
    refused(bytes, "message type 0")
    refused(rawReply(signature: ascii("u"), body: littleEndian32(5), serial: 0), "serial 0")
    // A method return without REPLY_SERIAL (the field's code changed to an unknown one, 42).
    bytes = valid
    bytes[16] = 42
    refused(bytes, "without a reply serial")
    // REPLY_SERIAL as a string; REPLY_SERIAL twice; REPLY_SERIAL 0.
    var encoder = BusEncoder()
    encoder.bytes = hexBytes("6c020001") + littleEndian32(0) + littleEndian32(7)
    try encoder.append(.array(element: "(yv)", [.structure([.byte(5), .variant(.string("1"))])]))
    encoder.pad(to: 8)
    refused(encoder.bytes, "header field 5 of type s")
    encoder.bytes = hexBytes("6c020001") + littleEndian32(0) + littleEndian32(7)
    let field = BusValue.structure([.byte(5), .variant(.uint32(1))])
    try encoder.append(.array(element: "(yv)", [field, field]))
    encoder.pad(to: 8)
    refused(encoder.bytes, "header field 5 twice")
    encoder.bytes = hexBytes("6c020001") + littleEndian32(0) + littleEndian32(7)
    try encoder.append(.array(element: "(yv)", [.structure([.byte(5), .variant(.uint32(0))])]))
    encoder.pad(to: 8)
    refused(encoder.bytes, "reply serial 0")
    // The body is shorter than the header says.
    refused(rawReply(signature: ascii("uu"), body: littleEndian32(5)), "past the end")
    // A body without a signature.
    refused(rawReply(signature: [], body: littleEndian32(5)), "bytes after a body")
  }

  @Test("unknown header fields are skipped and unknown message types are read as such, as the specification says")
  func unknownIsIgnored() throws {
    var encoder = BusEncoder()
    encoder.bytes = hexBytes("6c090001") + littleEndian32(0) + littleEndian32(7)
    try encoder.append(
      .array(element: "(yv)", [.structure([.byte(200), .variant(.array(element: "s", [.string("x")]))])]))
    encoder.pad(to: 8)
    let message = try BusMessage(decoding: encoder.bytes)
    #expect(message.kind == .other(9))
    #expect(message.body.isEmpty)
  }

  @Test("what no bus would take is not encoded: NUL in a string, bad paths, mixed arrays, missing fields")
  func unencodable() {
    func refused(_ message: BusMessage, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
      do {
        _ = try message.encoded()
        Issue.record("encoded", sourceLocation: sourceLocation)
      } catch {
        #expect(error.reason.contains(reason), "\(error.reason)", sourceLocation: sourceLocation)
      }
    }
    let call = BusMessage(kind: .methodCall, serial: 1, path: "/a", member: "M")
    var message = call
    message.body = [.string("a\u{0}b")]
    refused(message, "NUL")
    message.body = [.objectPath("a/b")]
    refused(message, "not an object path")
    message.body = [.array(element: "s", [.uint32(1)])]
    refused(message, "a u in an array of s")
    message.body = [.array(element: "ss", [])]
    refused(message, "not one complete type")
    message.body = [.structure([])]
    refused(message, "an empty structure")
    message.body = [.signature("a")]
    refused(message, "ends inside a type")
    message.body = [.unixFD(0)]
    refused(message, "descriptor")
    message.body = [.array(element: "{vs}", [])]
    refused(message, "not a basic type")
    message = call
    message.member = nil
    refused(message, "without a path or member")
    message = call
    message.serial = 0
    refused(message, "serial 0")
  }
}
