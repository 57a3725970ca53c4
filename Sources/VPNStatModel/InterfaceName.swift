/// An interface name exactly as the kernel holds it: 1 to 15 bytes, not `.` or `..`, and no NUL,
/// `/`, `:` or whitespace (see `kernelProblem`). Names are bytes, not text — the kernel accepts
/// ESC, quotes and non-UTF-8 — so every way of showing one is an explicit, escaping conversion.
public struct InterfaceName: Hashable, Comparable, Sendable, CustomStringConvertible {
  public let bytes: [UInt8]

  public init(bytes: some Sequence<UInt8>) { self.bytes = Array(bytes) }
  public init(_ string: String) { self.bytes = Array(string.utf8) }

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
    bytes = out
  }

  /// The bytes hashed as one block, after their count. The synthesized form feeds the hasher one
  /// byte at a time: with a few table lookups per interface per sample, that was a tenth of a
  /// cold `status` of a thousand interfaces.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(bytes.count)
    bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
  }

  public static func < (a: InterfaceName, b: InterfaceName) -> Bool {
    a.bytes.withUnsafeBufferPointer { x in
      b.bytes.withUnsafeBufferPointer { y in
        for i in 0..<min(x.count, y.count) where x[i] != y[i] { return x[i] < y[i] }
        return x.count < y.count
      }
    }
  }

  /// Why the kernel would refuse this name, or nil when it could name an interface. The kernel's
  /// rule (`dev_valid_name`): not empty, at most 15 bytes, not `.` or `..`, and no `/`, `:` or
  /// byte its `isspace` calls a space — tab, line feed, vertical tab, form feed, carriage
  /// return, space, and 0xA0 (Latin-1's no-break space). Checked on Linux 6.18.
  public var kernelProblem: String? {
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
