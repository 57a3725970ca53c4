import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatTestSupport

/// Names leave vpnstat distinct and harmless in every format: JSON that reaches a terminal
/// carries no C1, BiDi or invisible character raw, and OpenMetrics label values are injective.
struct EscapingTests {
  /// A JSON string as `JSONWriter` writes it, without the quotes.
  static func json(_ text: String) -> String {
    var writer = JSONWriter()
    writer.string(text)
    return String(decoding: writer.bytes.dropFirst().dropLast(), as: UTF8.self)
  }

  @Test(
    "JSON escapes C1 controls, BiDi and invisible format characters as \\uXXXX (status --json sent c2 9b raw)",
    arguments: [
      ("\u{9B}31m", "\\u009b31m"), ("a\u{85}b", "a\\u0085b"), ("\u{80}\u{9F}", "\\u0080\\u009f"),
      ("\u{202E}lanigiro", "\\u202elanigiro"), ("a\u{202A}\u{202B}\u{202C}\u{202D}b", "a\\u202a\\u202b\\u202c\\u202db"),
      ("\u{2066}\u{2067}\u{2068}\u{2069}", "\\u2066\\u2067\\u2068\\u2069"),
      ("\u{200E}\u{200F}\u{061C}", "\\u200e\\u200f\\u061c"),
      ("w\u{200B}g\u{200C}0\u{200D}", "w\\u200bg\\u200c0\\u200d"), ("\u{2060}\u{FEFF}", "\\u2060\\ufeff"),
      ("\u{2028}\u{2029}", "\\u2028\\u2029"), ("del\u{7F}", "del\\u007f"), ("esc\u{1B}[2J", "esc\\u001b[2J"),
      // Outside the Basic Multilingual Plane: a surrogate pair (a language tag, a private-use scalar).
      ("\u{E0001}x", "\\udb40\\udc01x"), ("\u{F0000}", "\\udb80\\udc00"),
    ])
  func jsonEscapes(text: String, expected: String) throws {
    #expect(Self.json(text) == expected)
    // A parser reads the escapes back as the same scalars: nothing is lost.
    let parsed = try JSONSerialization.jsonObject(with: Data("[\"\(expected)\"]".utf8)) as? [String]
    #expect(parsed?.first == text)
  }

  @Test(
    "a terminal line: safe text (ASCII, CJK, the screen's own symbols) as it is; each unsafe scalar as \\x escapes of its bytes"
  )
  func terminalLines() {
    for safe in ["", "eth0  1.2 MB ≈", "vpnstat watch · netlink · every 1s", "wg0 ▁▂▃▅▇ …", "日本語", "é"] {
      #expect(TerminalText.sanitize(safe) == safe)
    }
    let cases: [(String, String)] = [
      ("a\u{1B}[2Jb", "a\\x1b[2Jb"), ("\u{7F}", "\\x7f"), ("x\u{85}", "x\\xc2\\x85"),
      ("\u{202E}evil", "\\xe2\\x80\\xaeevil"), ("e\u{301}", "e\\xcc\\x81"), ("a\u{2028}b", "a\\xe2\\x80\\xa8b"),
      ("\u{E000}", "\\xee\\x80\\x80"), ("ok\n", "ok\\x0a"),
    ]
    for (raw, shown) in cases { #expect(TerminalText.sanitize(raw) == shown, "\(Array(raw.unicodeScalars))") }
  }

  @Test("JSON keeps letters, CJK, emoji and the plain ASCII punctuation as they are")
  func jsonKeepsSafeText() {
    for text in ["wg0", "é", "天気wg0", "🦀", "naïve café", "tab-less ~!@#$%^&*()_+{}|:<>?", "𝔘"] {
      #expect(Self.json(text) == text, "\(text)")
    }
    #expect(Self.json("q\"\\n\n\t\r") == "q\\\"\\\\n\\n\\t\\r")
  }

  @Test("no status --json byte sequence is a C1 control, BiDi or invisible character, whatever the names")
  func statusJSONBytes() throws {
    let names: [[UInt8]] = [
      Array("\u{9B}31m".utf8), Array("\u{202E}x".utf8), Array("a\u{200B}b".utf8), Array("\u{FEFF}".utf8),
      Array("\u{2066}i".utf8), [0x62, 0xFF, 0xFE, 0x61], Array("e\u{1B}[2Jv".utf8),
    ]
    let reports = names.enumerated().map { (i, bytes) in
      InterfaceReport(
        name: InterfaceName(bytes: bytes), index: Int32(i + 2), interfaceClass: .tunnel, classBy: .kind,
        state: .up, counters: InterfaceCounters(TrafficCounts(rxBytes: 1, txBytes: 2, rxPackets: 1, txPackets: 1)),
        width: .bits64)
    }
    let bytes = StatusJSON.render(
      StatusSnapshot(generatedAt: Timestamp(seconds: 1_800_000_000), source: .netlink, interfaces: reports))
    let text = String(decoding: bytes, as: UTF8.self)
    for scalar in text.unicodeScalars {
      #expect(!TerminalText.isUnsafe(scalar), "raw U+\(String(scalar.value, radix: 16)) in JSON")
    }
    let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    let shown = (object["interfaces"] as? [[String: Any]] ?? []).map { entry in
      let name = entry["name"] as? String ?? ""
      return entry["name_encoding"] as? String == "utf8"
        ? Array(name.utf8) : InterfaceName(parsingEscaped: name).bytes
    }
    #expect(Set(shown) == Set(names))
  }

  // MARK: - OpenMetrics label values

  /// A label value as an OpenMetrics parser reads it: `\\`, `\"` and `\n` unescaped.
  static func unescapeLabel(_ value: String) -> String {
    var out = ""
    var escaping = false
    for scalar in value.unicodeScalars {
      if escaping {
        switch scalar {
        case "n": out += "\n"
        default: out.unicodeScalars.append(scalar)
        }
        escaping = false
      } else if scalar == "\\" {
        escaping = true
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  static let hostile: [[UInt8]] = [
    [0x01, 0x02], Array("\\x01\\x02".utf8), Array("q\"x".utf8), Array("q\\\"x".utf8), Array("a\\b".utf8),
    Array("a\\\\b".utf8), Array("a\\\\\\b".utf8), Array("nl\nx".utf8), Array("nl\\nx".utf8), Array("tab\tx".utf8),
    [0x62, 0xFF, 0xFE, 0x61], Array("b\\xff\\xfea".utf8), Array("b\\xFF\\xFEa".utf8), [0xC3], Array("\u{202E}x".utf8),
    Array("\\xe2\\x80\\xaex".utf8), Array("天気".utf8), Array("\\xe5\\xa4\\xa9\\xe6\\xb0\\x97".utf8), Array("wg0".utf8),
    Array("\u{1B}[2J".utf8), Array("\\x1b[2J".utf8), [0x7F], Array("\\x7f".utf8), Array("\u{9B}".utf8),
  ]

  @Test("label values: quote, backslash and newline escaped as the format says, never raw")
  func labelEscapes() {
    #expect(OpenMetrics.label(InterfaceName("wg0")) == "wg0")
    #expect(OpenMetrics.label(InterfaceName("天気")) == "天気")
    #expect(OpenMetrics.label(InterfaceName("q\"x")) == "q\\\"x")
    // A backslash is vpnstat's `\\`, and each of those two the format's `\\`.
    #expect(OpenMetrics.label(InterfaceName("a\\b")) == "a\\\\\\\\b")
    #expect(OpenMetrics.label(InterfaceName("nl\nx")) == "nl\\\\x0ax")
    #expect(OpenMetrics.label(InterfaceName(bytes: [0x01, 0x02])) == "\\\\x01\\\\x02")
    #expect(OpenMetrics.label(InterfaceName(bytes: [0x62, 0xFF])) == "b\\\\xff")
    for bytes in Self.hostile {
      let label = OpenMetrics.label(InterfaceName(bytes: bytes))
      #expect(!label.unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{7F}" || TerminalText.isUnsafe($0) })
      // Every quote is escaped: the label cannot end early.
      let unescapedQuote = label.unicodeScalars.indices.contains { index in
        label.unicodeScalars[index] == "\""
          && label.unicodeScalars[..<index].reversed().prefix { $0 == "\\" }.count % 2 == 0
      }
      #expect(!unescapedQuote, "\(label)")
    }
  }

  @Test("label values are injective: the bytes 01 02 and the text \\x01\\x02 differ, and every value reads back")
  func labelInjective() {
    let labels = Self.hostile.map { OpenMetrics.label(InterfaceName(bytes: $0)) }
    #expect(Set(labels).count == labels.count, "\(labels)")
    #expect(labels[0] != labels[1])
    for (bytes, label) in zip(Self.hostile, labels) {
      #expect(InterfaceName(parsingEscaped: Self.unescapeLabel(label)).bytes == bytes, "\(label)")
    }
  }
}
