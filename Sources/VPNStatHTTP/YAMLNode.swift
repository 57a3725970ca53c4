/// The part of YAML a web configuration uses: block mappings and sequences by indentation, plain
/// and quoted scalars, flow sequences of scalars, comments. What else YAML has (anchors, aliases,
/// tags, block scalars, flow mappings, several documents) is refused with its line, never
/// guessed at: the file decides who may read a person's usage.
indirect enum YAMLNode: Sendable {
  case scalar(String)
  case map([(String, YAMLNode)])
  case list([YAMLNode])

  struct Problem: Error, CustomStringConvertible {
    var description: String
  }

  private struct Line {
    var indent: Int
    var text: Substring
    var number: Int
  }

  static func parse(_ text: String) throws(Problem) -> YAMLNode {
    var lines: [Line] = []
    var documents = 0
    for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let number = offset + 1
      var line = Substring(raw)
      if line.last == "\r" { line = line.dropLast() }
      line = try stripComment(line, number)
      while line.last == " " || line.last == "\t" { line = line.dropLast() }
      let indent = line.prefix { $0 == " " }.count
      let content = line.dropFirst(indent)
      if content.isEmpty { continue }
      if content.first == "\t" { throw Problem(description: "line \(number): a tab in the indentation") }
      if indent == 0 && (content == "---" || content.hasPrefix("--- ")) {
        documents += 1
        guard documents == 1, lines.isEmpty else { throw Problem(description: "line \(number): a second document") }
        continue
      }
      if indent == 0 && content == "..." { break }
      lines.append(Line(indent: indent, text: content, number: number))
    }
    guard let first = lines.first else { return .scalar("") }
    var index = 0
    let node = try block(&lines, &index, indent: first.indent)
    if index < lines.count { throw Problem(description: "line \(lines[index].number): unexpected indentation") }
    return node
  }

  /// A comment starts at `#` at the start of the line or after a space, outside quotes.
  private static func stripComment(_ line: Substring, _ number: Int) throws(Problem) -> Substring {
    var quote: Character?
    var previous: Character = " "
    for index in line.indices {
      let character = line[index]
      if let open = quote {
        if character == open { quote = nil }
      } else if character == "\"" || character == "'" {
        if previous == " " || previous == ":" || previous == "[" || previous == "," || previous == "-" {
          quote = character
        }
      } else if character == "#", previous == " " || previous == "\t" {
        return line[..<index]
      }
      previous = character
    }
    return line
  }

  private static func block(_ lines: inout [Line], _ index: inout Int, indent: Int) throws(Problem) -> YAMLNode {
    let first = lines[index]
    if first.text == "-" || first.text.hasPrefix("- ") {
      var items: [YAMLNode] = []
      while index < lines.count, lines[index].indent == indent,
        lines[index].text == "-" || lines[index].text.hasPrefix("- ")
      {
        let line = lines[index]
        let rest = line.text.dropFirst(1).drop { $0 == " " }
        if rest.isEmpty {
          index += 1
          guard index < lines.count, lines[index].indent > indent else {
            items.append(.scalar(""))
            continue
          }
          items.append(try block(&lines, &index, indent: lines[index].indent))
        } else if splitKey(rest) != nil {
          // `- key: value`: a mapping whose first entry stands on the dash's line.
          lines[index] = Line(indent: indent + (line.text.count - rest.count), text: rest, number: line.number)
          items.append(try block(&lines, &index, indent: lines[index].indent))
        } else {
          items.append(try value(rest, line.number))
          index += 1
        }
      }
      return .list(items)
    }
    var entries: [(String, YAMLNode)] = []
    while index < lines.count, lines[index].indent == indent {
      let line = lines[index]
      guard let (key, rest) = splitKey(line.text) else {
        throw Problem(description: "line \(line.number): expected 'name: value'")
      }
      guard !entries.contains(where: { $0.0 == key }) else {
        throw Problem(description: "line \(line.number): \(key) is given twice")
      }
      index += 1
      if rest.isEmpty {
        if index < lines.count, lines[index].indent > indent {
          entries.append((key, try block(&lines, &index, indent: lines[index].indent)))
        } else if index < lines.count, lines[index].indent == indent, lines[index].text.hasPrefix("- ") {
          // A sequence may stand at its key's own indentation.
          entries.append((key, try block(&lines, &index, indent: indent)))
        } else {
          entries.append((key, .scalar("")))
        }
      } else {
        entries.append((key, try value(rest, line.number)))
      }
    }
    if index < lines.count, lines[index].indent > indent {
      throw Problem(description: "line \(lines[index].number): unexpected indentation")
    }
    return .map(entries)
  }

  /// `key: rest` (a key plain or quoted; `rest` empty when the value is on the lines below).
  private static func splitKey(_ text: Substring) -> (String, Substring)? {
    if let quote = text.first, quote == "\"" || quote == "'" {
      guard let close = text.dropFirst().firstIndex(of: quote) else { return nil }
      let after = text[text.index(after: close)...]
      guard after.first == ":" else { return nil }
      let rest = after.dropFirst()
      guard rest.isEmpty || rest.first == " " else { return nil }
      return (String(text[text.index(after: text.startIndex)..<close]), rest.drop { $0 == " " })
    }
    var index = text.startIndex
    while index < text.endIndex {
      if text[index] == ":" {
        let after = text.index(after: index)
        if after == text.endIndex || text[after] == " " {
          let key = text[..<index]
          guard !key.isEmpty, !key.contains(" ") || !key.hasPrefix("-") else { return nil }
          return (String(key), text[after...].drop { $0 == " " })
        }
      }
      index = text.index(after: index)
    }
    return nil
  }

  private static func value(_ text: Substring, _ number: Int) throws(Problem) -> YAMLNode {
    switch text.first {
    case "[":
      guard text.last == "]" else { throw Problem(description: "line \(number): a flow sequence not closed") }
      let inner = text.dropFirst().dropLast()
      if inner.allSatisfy({ $0 == " " }) { return .list([]) }
      var items: [YAMLNode] = []
      var current = ""
      var quote: Character?
      for character in inner {
        if let open = quote {
          if character == open { quote = nil }
          current.append(character)
        } else if character == "\"" || character == "'" {
          quote = character
          current.append(character)
        } else if character == "," {
          items.append(try value(Substring(current.trimmingCharacters(in: " ")), number))
          current = ""
        } else {
          current.append(character)
        }
      }
      items.append(try value(Substring(current.trimmingCharacters(in: " ")), number))
      return .list(items)
    case "{":
      throw Problem(description: "line \(number): flow mappings ({…}) are not supported; use one field per line")
    case "&", "*": throw Problem(description: "line \(number): anchors and aliases are not supported")
    case "!": throw Problem(description: "line \(number): tags are not supported")
    case "|", ">": throw Problem(description: "line \(number): block scalars (| and >) are not supported")
    case "\"":
      guard text.count >= 2, text.last == "\"" else { throw Problem(description: "line \(number): a quote not closed") }
      var result = ""
      var escaped = false
      for character in text.dropFirst().dropLast() {
        if escaped {
          switch character {
          case "n": result.append("\n")
          case "t": result.append("\t")
          case "\"", "\\", "/": result.append(character)
          default: throw Problem(description: "line \(number): the escape \\\(character) is not supported")
          }
          escaped = false
        } else if character == "\\" {
          escaped = true
        } else {
          result.append(character)
        }
      }
      return .scalar(result)
    case "'":
      guard text.count >= 2, text.last == "'" else { throw Problem(description: "line \(number): a quote not closed") }
      return .scalar(String(text.dropFirst().dropLast()).replacing("''", with: "'"))
    default:
      return .scalar(String(text))
    }
  }
}
