import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// Names, JSON and tables: what leaves vpnstat is exact and safe whatever the names hold.
struct RenderingTests {
  static let hostile: [[UInt8]] = [
    Array("e\u{1B}[2Jv".utf8), Array("\u{1B}]0;pwned\u{07}".utf8), [0x62, 0xFF, 0xFE, 0x61],
    Array("\u{202E}lanigiro".utf8), Array("q\"\\'n".utf8), Array("\u{9B}31m".utf8),
    Array("a\\x41".utf8), Array("天気wg0".utf8), [0xC3], Array("tab\tnl\ncr\r".utf8),
  ]

  func snapshot(names: [[UInt8]]) -> StatusSnapshot {
    let reports = names.enumerated().map { (i, bytes) in
      InterfaceReport(
        name: InterfaceName(bytes: bytes), index: Int32(i + 2), interfaceClass: .tunnel,
        classBy: .kind, state: .up,
        counters: InterfaceCounters(
          TrafficCounts(rxBytes: UInt64(i) * 1_000_003, txBytes: 5, rxPackets: 1, txPackets: 2)),
        width: .bits64)
    }
    return StatusSnapshot(generatedAt: Timestamp(seconds: 1_800_000_000), source: .netlink, interfaces: reports)
  }

  @Test("status --json written in pieces is the document and a newline, the same bytes as rendered whole")
  func jsonInPieces() {
    for count in [0, 1, 7, 1500] {
      let names = (0..<count).map { Self.hostile[$0 % Self.hostile.count] + Array("\($0)".utf8) }
      let whole = StatusJSON.render(snapshot(names: names)) + [0x0A]
      #expect(StatusJSON.line(snapshot(names: names)) == whole)
      var pieces: [[UInt8]] = []
      StatusJSON.writeLine(snapshot(names: names)) { pieces.append(Array($0)) }
      #expect(pieces.joined().elementsEqual(whole), "\(count)")
      #expect(pieces.allSatisfy { !$0.isEmpty && $0.count < JSONWriter.piece + 4096 }, "\(count)")
      #expect(count < 1500 || pieces.count > 4)
    }
  }

  @Test("every name survives JSON exactly, by its documented encoding")
  func jsonRoundTrip() throws {
    let bytes = StatusJSON.render(snapshot(names: Self.hostile))
    let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    let entries = try #require(object["interfaces"] as? [[String: Any]])
    #expect(entries.count == Self.hostile.count)
    for (entry, original) in zip(entries, Self.hostile) {
      let text = try #require(entry["name"] as? String)
      switch entry["name_encoding"] as? String {
      case "utf8": #expect(Array(text.utf8) == original)
      case "escaped": #expect(InterfaceName(parsingEscaped: text).bytes == original)
      default: Issue.record("bad name_encoding")
      }
    }
    #expect(object["schema_version"] as? Int == 1)
    #expect(object["estimate"] as? Bool == true)
  }

  @Test("the escaped form is lossless for every byte")
  func escapedIsLossless() {
    for byte in UInt8.min...UInt8.max where byte != 0 && byte != 0x2F {
      let name = InterfaceName(bytes: [0x61, byte, 0x5C, byte])
      #expect(InterfaceName(parsingEscaped: name.escaped) == name)
      #expect(name.escaped.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
    }
  }

  @Test("tables never carry a raw control byte, BiDi control or C1 code, whatever the names")
  func tableIsSafe() {
    let text = StatusTable.render(snapshot(names: Self.hostile), options: DisplayOptions(color: false))
    for scalar in text.unicodeScalars {
      #expect(!(scalar.value < 0x20 && scalar != "\n"), "control \(scalar.value)")
      #expect(!(0x7F...0x9F).contains(scalar.value), "C1 \(scalar.value)")
      #expect(!(0x202A...0x202E).contains(scalar.value) && !(0x2066...0x2069).contains(scalar.value))
    }
    #expect(text.contains("e\\x1b[2Jv"))
    #expect(text.contains("天気wg0"))
    #expect(text.contains("≈"))
  }

  @Test("colour only adds SGR sequences, and none when off")
  func colour() {
    let snap = snapshot(names: [Array("wg0".utf8)])
    let plain = StatusTable.render(snap, options: DisplayOptions(color: false))
    let coloured = StatusTable.render(snap, options: DisplayOptions(color: true))
    #expect(!plain.contains("\u{1B}"))
    #expect(coloured.contains("\u{1B}[1m"))
    let stripped = coloured.replacing(/\x1B\[[0-9;]*m/, with: "")
    #expect(stripped == plain)
  }

  @Test("IEC units with three significant figures, rates in bytes or bits")
  func units() {
    #expect(Units.bytes(0) == "0 B")
    #expect(Units.bytes(1023) == "1023 B")
    #expect(Units.bytes(1536) == "1.50 KiB")
    #expect(Units.bytes(10 * 1024 * 1024 + 300_000) == "10.3 MiB")
    #expect(Units.bytes(5_000_000_000) == "4.66 GiB")
    #expect(Units.rate(1_250_000, bits: true) == "10.0 Mbit/s")
    #expect(Units.rate(512, bits: false) == "512 B/s")
    #expect(Units.duration(seconds: 31 * 60 + 12) == "31 min 12 s")
    #expect(Units.clock(seconds: 899) == "14:59")
  }

  @Test("RFC 3339 timestamps format and parse back")
  func timestamps() {
    let t = Timestamp(nanoseconds: 1_796_000_000_123_000_000)
    #expect(t.rfc3339 == "2026-11-30T00:53:20Z")
    #expect(t.rfc3339(fractionDigits: 3) == "2026-11-30T00:53:20.123Z")
    #expect(Timestamp(rfc3339: "2026-11-30T00:53:20.123Z") == t)
    #expect(Timestamp(rfc3339: "2026-11-30T01:53:20.123+01:00") == t)
    #expect(Timestamp(seconds: 0).rfc3339 == "1970-01-01T00:00:00Z")
    #expect(Timestamp(seconds: -1).rfc3339 == "1969-12-31T23:59:59Z")
    #expect(Timestamp(rfc3339: "2026-13-01T00:00:00Z") == nil)
    #expect(Timestamp(rfc3339: "yesterday") == nil)
  }

  @Test("terminal width: wide characters count twice, truncation marks the cut")
  func width() {
    #expect(TerminalText.width("abc") == 3)
    #expect(TerminalText.width("天気") == 4)
    #expect(TerminalText.truncate("abcdefgh", to: 5) == "abcd…")
    #expect(TerminalText.width(TerminalText.truncate("天気天気天気", to: 5)) <= 5)
  }

  @Test(
    "width and the unsafe check read UTF-8 bytes as the scalar view reads scalars, for 1-, 2-, 3- and 4-byte scalars; the symbols taken as safe without their category are safe by it"
  )
  func bytesReadAsScalars() {
    let pool: [Unicode.Scalar] = [
      "a", " ", "\u{7F}", "\u{1B}", "é", "·", "\u{85}", "≈", "…", "▁", "█", "天", "\u{202E}", "\u{301}", "😀",
      "\u{10FFFD}",
      "\u{E000}", "\u{FFFF}",
    ]
    var generator = SystemRandomNumberGenerator()
    for _ in 0..<2000 {
      var text = ""
      for _ in 0..<Int.random(in: 0...12, using: &generator) {
        text.unicodeScalars.append(pool.randomElement(using: &generator)!)
      }
      let width = text.unicodeScalars.reduce(0) { $0 + ($1.value < 0x80 ? 1 : TerminalText.columns($1)) }
      let unsafe = text.unicodeScalars.contains(where: TerminalText.isUnsafe)
      if !unsafe { #expect(TerminalText.width(text) == width, "\(text.debugDescription)") }
      #expect((TerminalText.sanitize(text) != text) == unsafe, "\(text.debugDescription)")
    }
    let unsafeCategories: [Unicode.GeneralCategory] = [
      .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned, .nonspacingMark,
      .enclosingMark, .spacingMark,
    ]
    // The wide ranges searched by halves answer as every range asked in turn.
    let ranges = TerminalText.wideRanges
    #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound })
    let probes = ranges.flatMap { [$0.lowerBound - 1, $0.lowerBound, $0.upperBound, $0.upperBound + 1] }
    for value in probes + Array(stride(from: UInt32(0x1000), to: 0x40000, by: 97)) {
      guard let scalar = Unicode.Scalar(value) else { continue }
      let wide = value >= 0x1100 && ranges.contains { $0.contains(value) }
      #expect(TerminalText.columns(scalar) == (wide ? 2 : 1), "U+\(String(value, radix: 16))")
    }
    // A printable ASCII name is itself on a terminal; a backslash or a control is escaped.
    for name in ["eth0", "wg-home", "tun_9", "a~b", "x.y:z"] {
      #expect(InterfaceName(name).terminalText == name)
    }
    #expect(InterfaceName("a\\b").terminalText == "a\\\\b")
    #expect(InterfaceName("a\u{1B}b").terminalText == "a\\x1bb")
    for value in Array(0x2200...0x22FF) + Array(0x2580...0x259F) + [0x2026] {
      let scalar = Unicode.Scalar(UInt32(value))!
      #expect(!unsafeCategories.contains(scalar.properties.generalCategory), "U+\(String(value, radix: 16))")
    }
  }
}
