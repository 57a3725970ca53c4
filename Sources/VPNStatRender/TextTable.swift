import VPNStatModel

/// A text style for a cell; applied after padding so colour never changes a width.
package enum TextStyle: Sendable {
  case plain, bold, dim, green, red, yellow, cyan

  var sgr: String {
    switch self {
    case .plain: ""
    case .bold: "\u{1B}[1m"
    case .dim: "\u{1B}[2m"
    case .green: "\u{1B}[32m"
    case .red: "\u{1B}[31m"
    case .yellow: "\u{1B}[33m"
    case .cyan: "\u{1B}[36m"
    }
  }

  /// `text` wrapped in this style's escape codes when `color` is on.
  package func apply(_ text: String, color: Bool) -> String {
    guard color, self != .plain, !text.isEmpty else { return text }
    return sgr + text + "\u{1B}[0m"
  }
}

/// A column-aligned text table. Cells must already be terminal-safe text (names go through
/// `InterfaceName.terminalText`); the table only measures, pads and styles.
package struct TextTable {
  package struct Column {
    package var header: String
    package var alignRight: Bool
    package init(_ header: String, alignRight: Bool = false) {
      self.header = header
      self.alignRight = alignRight
    }
  }
  package struct Cell {
    package var text: String
    package var style: TextStyle
    package init(_ text: String, _ style: TextStyle = .plain) {
      self.text = text
      self.style = style
    }
  }
  enum Row {
    case cells([Cell])
    /// A line spanning the table (a group heading).
    case line(Cell)
  }

  package var columns: [Column]
  var rows: [Row] = []
  package init(columns: [Column]) { self.columns = columns }

  package mutating func add(_ cells: [Cell]) { rows.append(.cells(cells)) }
  package mutating func addLine(_ cell: Cell) { rows.append(.line(cell)) }

  /// The table as lines. With `maxWidth`, every line is cut to fit it, a cut marked `ellipsis`.
  package func render(color: Bool, maxWidth: Int? = nil, ellipsis: String = "…") -> [String] {
    var widths = columns.map { TerminalText.width($0.header) }
    for case .cells(let cells) in rows {
      for (i, cell) in cells.enumerated() where i < widths.count {
        widths[i] = max(widths[i], TerminalText.width(cell.text))
      }
    }
    func line(_ cells: [Cell]) -> String {
      var parts: [String] = []
      for (i, column) in columns.enumerated() {
        let cell = i < cells.count ? cells[i] : Cell("")
        var text = cell.text
        if let maxWidth { text = TerminalText.truncate(text, to: maxWidth, ellipsis: ellipsis) }
        // The last column is not padded on the left-aligned side: no trailing spaces.
        let padded =
          (i == columns.count - 1 && !column.alignRight)
          ? text : TerminalText.pad(text, to: widths[i], alignRight: column.alignRight)
        parts.append(padded)
      }
      return fit(parts.joined(separator: "  "), cells: cells)
    }
    func fit(_ text: String, cells: [Cell]) -> String {
      var plain = text
      while plain.hasSuffix(" ") { plain.removeLast() }
      if let maxWidth, TerminalText.width(plain) > maxWidth {
        return TerminalText.truncate(plain, to: maxWidth, ellipsis: ellipsis)
      }
      guard color else { return plain }
      // Re-render with styles now that the plain width is known to fit.
      var parts: [String] = []
      for (i, column) in columns.enumerated() {
        let cell = i < cells.count ? cells[i] : Cell("")
        let padded =
          (i == columns.count - 1 && !column.alignRight)
          ? cell.text : TerminalText.pad(cell.text, to: widths[i], alignRight: column.alignRight)
        let core = padded.trimmingTrailingSpaces
        let trailing = String(repeating: " ", count: padded.count - core.count)
        let leading = column.alignRight ? String(padded.prefix(while: { $0 == " " })) : ""
        let body = column.alignRight ? String(core.dropFirst(leading.count)) : core
        parts.append(leading + cell.style.apply(body, color: true) + trailing)
      }
      var styled = parts.joined(separator: "  ")
      while styled.hasSuffix(" ") { styled.removeLast() }
      return styled
    }
    var out: [String] = []
    out.append(line(columns.map { Cell($0.header, .bold) }))
    for row in rows {
      switch row {
      case .cells(let cells): out.append(line(cells))
      case .line(let cell):
        var text = cell.text
        if let maxWidth { text = TerminalText.truncate(text, to: maxWidth, ellipsis: ellipsis) }
        out.append(cell.style.apply(text, color: color))
      }
    }
    return out
  }
}

extension String {
  var trimmingTrailingSpaces: String {
    var copy = self
    while copy.hasSuffix(" ") { copy.removeLast() }
    return copy
  }
}
