/// What may reach a terminal, and how wide it is there. Interface names are attacker-controlled
/// bytes; everything vpnstat prints to a screen goes through these rules.
public enum TerminalText {
  /// Scalars that must never reach a terminal raw: controls (C0, DEL, C1), BiDi and other format
  /// characters, line and paragraph separators, combining marks (they would fuse with the cell
  /// before them), and anything unassigned, private or a surrogate.
  public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    if value < 0x20 || (value >= 0x7F && value < 0xA0) { return true }
    if value < 0x7F { return false }
    // What vpnstat draws on every line (≈ and the other operators, a sparkline's blocks), assigned
    // symbols all: the general category is a table lookup per scalar, sixty per sparkline.
    if (0x2200...0x22FF).contains(value) || (0x2580...0x259F).contains(value) || value == 0x2026 { return false }
    switch scalar.properties.generalCategory {
    case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse,
      .unassigned, .nonspacingMark, .enclosingMark, .spacingMark:
      return true
    default:
      return false
    }
  }

  /// Columns a safe scalar takes: 2 for East Asian wide and fullwidth forms and emoji, else 1.
  public static func columns(_ scalar: Unicode.Scalar) -> Int {
    let v = scalar.value
    if v < 0x1100 { return 1 }
    // The ranges are sorted and apart: a binary search (the sparkline's blocks, sixty a line,
    // were each compared with every range).
    var low = 0
    var high = wideRanges.count
    while low < high {
      let middle = (low + high) / 2
      if wideRanges[middle].upperBound < v {
        low = middle + 1
      } else {
        high = middle
      }
    }
    return low < wideRanges.count && wideRanges[low].contains(v) ? 2 : 1
  }

  static let wideRanges: [ClosedRange<UInt32>] = [
    0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0...0x23F0,
    0x23F3...0x23F3, 0x25FD...0x25FE, 0x2614...0x2615, 0x2648...0x2653, 0x267F...0x267F,
    0x2693...0x2693, 0x26A1...0x26A1, 0x26AA...0x26AB, 0x26BD...0x26BE, 0x26C4...0x26C5,
    0x26CE...0x26CE, 0x26D4...0x26D4, 0x26EA...0x26EA, 0x26F2...0x26F3, 0x26F5...0x26F5,
    0x26FA...0x26FA, 0x26FD...0x26FD, 0x2705...0x2705, 0x270A...0x270B, 0x2728...0x2728,
    0x274C...0x274C, 0x274E...0x274E, 0x2753...0x2755, 0x2757...0x2757, 0x2795...0x2797,
    0x27B0...0x27B0, 0x27BF...0x27BF, 0x2B1B...0x2B1C, 0x2B50...0x2B50, 0x2B55...0x2B55,
    0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
    0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F,
    0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x18CFF, 0x1B000...0x1B2FF, 0x1F004...0x1F004,
    0x1F0CF...0x1F0CF, 0x1F18E...0x1F18E, 0x1F191...0x1F19A, 0x1F200...0x1F251,
    0x1F300...0x1F64F, 0x1F680...0x1F6FF, 0x1F7E0...0x1F7EB, 0x1F90C...0x1F9FF,
    0x1FA70...0x1FAFF, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
  ]

  /// Columns `text` takes on a terminal. `text` must already be safe (no escapes, no controls).
  public static func width(_ text: String) -> Int {
    // Through the UTF-8 where it lies, an ASCII byte a column: a screen's lines are mostly
    // ASCII, and the scalar view decoded each (a tenth of a `watch` refresh).
    var total = 0
    forEachScalar(of: text) { scalar in
      total += scalar.value < 0x80 ? 1 : columns(scalar)
      return true
    }
    return total
  }

  /// Whether any scalar of `text` is unsafe, read as `width` reads.
  private static func containsUnsafe(_ text: String) -> Bool {
    var found = false
    forEachScalar(of: text) { scalar in
      found = isUnsafe(scalar)
      return !found
    }
    return found
  }

  /// Hands `body` each scalar of `text`, decoded from the String's UTF-8 where it lies (an ASCII
  /// byte is its scalar), until `body` returns false.
  @inline(__always)
  private static func forEachScalar(of text: String, _ body: (Unicode.Scalar) -> Bool) {
    var text = text
    text.withUTF8 { utf8 in
      var i = 0
      while i < utf8.count {
        let lead = UInt32(utf8[i])
        if lead < 0x80 {
          guard body(Unicode.Scalar(UInt8(lead))) else { return }
          i += 1
          continue
        }
        let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
        var value = lead & (0x7F >> UInt32(length))
        for k in 1..<min(length, utf8.count - i) { value = value << 6 | UInt32(utf8[i + k] & 0x3F) }
        guard body(Unicode.Scalar(value) ?? "\u{FFFD}") else { return }
        i += length
      }
    }
  }

  /// `text` cut to at most `limit` columns, ending in `ellipsis` (one column) when it was cut.
  public static func truncate(_ text: String, to limit: Int, ellipsis: String = "…") -> String {
    guard limit > 0 else { return "" }
    if width(text) <= limit { return text }
    var out = ""
    var used = 0
    for scalar in text.unicodeScalars {
      let w = columns(scalar)
      if used + w > limit - 1 { break }
      out.unicodeScalars.append(scalar)
      used += w
    }
    return out + ellipsis
  }

  /// What marks a cut on a terminal that shows only ASCII (one column, as `…`).
  public static let asciiEllipsis = ">"

  /// Safe `text` for a terminal that shows only ASCII (a locale that is not UTF-8): the symbols
  /// vpnstat draws become ASCII of the same width (`≈` → `~`, `·` → `-`, a sparkline's blocks a
  /// ramp from `_` to `#`; `…` → `...`), and every other character beyond ASCII the `\xHH`
  /// escapes of its bytes, as names are escaped, so nothing is lost or garbled.
  public static func ascii(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      if scalar.isASCII {
        out.unicodeScalars.append(scalar)
      } else if let substitute = asciiSubstitutes[scalar] {
        out += substitute
      } else {
        for byte in String(scalar).utf8 { out += "\\x" + hexByte(byte) }
      }
    }
    return out
  }

  /// Safe `text` with every character beyond ASCII as the `\xHH` escapes of its bytes: an
  /// interface name's `terminalText` this way is its escaped form in ASCII.
  public static func escapingNonASCII(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      if scalar.isASCII {
        out.unicodeScalars.append(scalar)
      } else {
        for byte in String(scalar).utf8 { out += "\\x" + hexByte(byte) }
      }
    }
    return out
  }

  private static let asciiSubstitutes: [Unicode.Scalar: String] = [
    "≈": "~", "·": "-", "–": "-", "—": "-", "\u{2011}": "-", "−": "-", "→": ">", "×": "x", "≥": ">",
    "²": "2", "³": "3", "⁶": "6", "…": "...",
    // The sparkline's eighths, lowest to highest, and the history bar's.
    "▁": "_", "▂": ".", "▃": "-", "▄": "=", "▅": "+", "▆": "*", "▇": "%", "█": "#",
    "▏": "+", "▎": "+", "▍": "+", "▌": "+", "▋": "+", "▊": "+", "▉": "+",
  ]

  /// `text` padded with spaces to `width` columns, on the right (left-aligned) or on the left.
  public static func pad(_ text: String, to columns: Int, alignRight: Bool = false) -> String {
    let w = width(text)
    guard w < columns else { return text }
    let spaces = String(repeating: Character(" "), count: columns - w)
    return alignRight ? spaces + text : text + spaces
  }

  /// Any string made safe for a terminal: unsafe scalars become `\xHH` escapes of their bytes.
  public static func sanitize(_ text: String) -> String {
    // Nearly every text is safe as it is: look before building a copy (`watch` sanitises a
    // screenful of lines each refresh; the copy cost ~35,000 instructions a line).
    guard containsUnsafe(text) else { return text }
    var out = ""
    for scalar in text.unicodeScalars {
      if isUnsafe(scalar) {
        for byte in String(scalar).utf8 { out += "\\x" + hexByte(byte) }
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}

extension StringProtocol {
  /// This string without the characters of `set` at either end (FoundationEssentials has no
  /// CharacterSet).
  public func trimmingCharacters(in set: String) -> String {
    var scalars = Substring(self)
    while let first = scalars.first, set.contains(first) { scalars = scalars.dropFirst() }
    while let last = scalars.last, set.contains(last) { scalars = scalars.dropLast() }
    return String(scalars)
  }
}
