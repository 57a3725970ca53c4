import Foundation
import Testing

/// Output pinned byte for byte to what the code wrote when the pin was made, one file per case:
/// `Tests/Pinned/FOLDER/CASE.txt` holds the case's bytes and one newline after them (so an editor
/// that ends a file with a newline leaves the pin as it is). A change that must not alter output
/// (a function split in pieces, a helper for a repeated shape) leaves these files as they are; a
/// deliberate change re-records them, and a person reviews `git diff Tests/Pinned`.
///
/// A test enumerates its matrix of cases and pins the few it names: a name the matrix never
/// makes, two names with one file name, and a file in the folder no case owns each fail it.
/// `VPNSTAT_PIN=record` rewrites the folder from the code under test (removing the files no case
/// owns) and fails the test, so a recording run never passes.
struct PinnedCases {
  let folder: String
  let names: [String]
  private let kept: Set<String>
  private(set) var outputs: [String: [UInt8]] = [:]
  private var twice: [String] = []

  init(_ folder: String, _ names: [String]) {
    self.folder = folder
    self.names = names
    kept = Set(names)
  }

  /// Whether the case `name` is pinned: a matrix may skip rendering the others.
  func wants(_ name: String) -> Bool { kept.contains(name) }

  /// The output of the case `name`; kept only when it is one of the pinned cases.
  mutating func add(_ name: String, _ bytes: [UInt8]) {
    guard wants(name) else { return }
    if outputs[name] != nil { twice.append(name) }
    outputs[name] = bytes
  }

  mutating func add(_ name: String, _ text: String) { add(name, Array(text.utf8)) }

  /// Compares every pinned case with its file (or records them all under `VPNSTAT_PIN=record`).
  func expect(sourceLocation: SourceLocation = #_sourceLocation) {
    var problems: [String] = []
    var files: [String: String] = [:]
    for name in names {
      if outputs[name] == nil { problems.append("the matrix makes no case \(PinnedOutput.shown(name))") }
      let file = PinnedOutput.fileName(name)
      if let other = files.updateValue(name, forKey: file) {
        problems.append("\(PinnedOutput.shown(other)) and \(PinnedOutput.shown(name)) are both \(file)")
      }
    }
    problems += twice.map { "the matrix makes \(PinnedOutput.shown($0)) twice" }
    for problem in problems {
      Issue.record(Comment(rawValue: "\(folder): \(problem)"), sourceLocation: sourceLocation)
    }
    guard problems.isEmpty else { return }
    let cases = names.map { (name: $0, file: PinnedOutput.fileName($0), bytes: outputs[$0]! + [0x0A]) }
    let folderURL = PinnedOutput.directory.appendingPathComponent(folder)
    let present = Set(
      ((try? FileManager.default.contentsOfDirectory(atPath: folderURL.path)) ?? []).filter { $0.hasSuffix(".txt") })
    let unowned = present.subtracting(cases.map(\.file)).sorted()
    if PinnedOutput.recording {
      record(cases, unowned: unowned, in: folderURL, sourceLocation: sourceLocation)
      return
    }
    var differing: [String] = []
    for (name, file, bytes) in cases {
      let url = folderURL.appendingPathComponent(file)
      guard let pinned = FileManager.default.contents(atPath: url.path) else {
        differing.append("\(folder)/\(file): no pin for the case \(PinnedOutput.shown(name))")
        continue
      }
      if Array(pinned) == bytes { continue }
      differing.append(
        "\(folder)/\(file): the case \(PinnedOutput.shown(name)) differs from its pin "
          + "(\(pinned.count) → \(bytes.count) bytes)\n" + PinnedOutput.excerpt(pinned: Array(pinned), now: bytes))
    }
    differing += unowned.map { "\(folder)/\($0): no pinned case owns this file" }
    let shownInFull = 5
    for message in differing.prefix(shownInFull) {
      Issue.record(
        Comment(rawValue: message + "\n" + PinnedOutput.howToAccept(folder)), sourceLocation: sourceLocation)
    }
    if differing.count > shownInFull {
      let rest = differing.dropFirst(shownInFull).map { String($0.prefix { $0 != "\n" }) }
      Issue.record(
        Comment(rawValue: "\(folder): \(rest.count) more differ:\n" + rest.joined(separator: "\n")),
        sourceLocation: sourceLocation)
    }
  }

  private func record(
    _ cases: [(name: String, file: String, bytes: [UInt8])], unowned: [String], in folderURL: URL,
    sourceLocation: SourceLocation
  ) {
    var changed = 0
    do {
      try FileManager.default.createDirectory(at: folderURL, withIntermediateDirectories: true)
      for (_, file, bytes) in cases {
        let url = folderURL.appendingPathComponent(file)
        if FileManager.default.contents(atPath: url.path).map(Array.init) == bytes { continue }
        try Data(bytes).write(to: url)
        changed += 1
      }
      for file in unowned { try FileManager.default.removeItem(at: folderURL.appendingPathComponent(file)) }
    } catch {
      Issue.record("cannot record \(folderURL.path): \(error)", sourceLocation: sourceLocation)
      return
    }
    Issue.record(
      Comment(
        rawValue: "recorded \(folderURL.path): \(cases.count) cases, \(changed) rewritten, \(unowned.count) removed; "
          + "review git diff Tests/Pinned, then run again without VPNSTAT_PIN=record"),
      sourceLocation: sourceLocation)
  }
}

enum PinnedOutput {
  static var directory: URL { Built.packageRoot.appendingPathComponent("Tests/Pinned") }
  static var recording: Bool { ProcessInfo.processInfo.environment["VPNSTAT_PIN"] == "record" }

  /// Re-records every pin (each pinned test's name has "pinned" or "Pinned" in it).
  static let recordCommand = "VPNSTAT_PIN=record swift test --filter '[Pp]inned'"

  static func howToAccept(_ folder: String) -> String {
    "If the change is meant: \(recordCommand), then review git diff Tests/Pinned/\(folder)"
  }

  /// A case's file: its name in lower case, each run of characters other than ASCII letters and
  /// digits one "-", and ".txt".
  static func fileName(_ name: String) -> String {
    var file = ""
    for scalar in name.lowercased().unicodeScalars {
      if scalar.isASCII && (("a"..."z").contains(scalar) || ("0"..."9").contains(scalar)) {
        file.unicodeScalars.append(scalar)
      } else if !file.isEmpty && !file.hasSuffix("-") {
        file += "-"
      }
    }
    while file.hasSuffix("-") { file.removeLast() }
    return (file.isEmpty ? "case" : file) + ".txt"
  }

  /// `text` quoted, with control characters (C0, DEL, C1) as `\u{…}`.
  static func shown(_ text: String) -> String { "\"" + escaped(text) + "\"" }

  static func escaped(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars {
      if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
        out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
      } else {
        out.unicodeScalars.append(scalar)
      }
    }
    return out
  }

  /// Where `now` first differs from `pinned`, as one hunk of a unified diff: up to 3 lines of
  /// context either side, the pinned lines (-) and the new ones (+), at most 8 of each. A line
  /// longer than 160 characters is shown from 60 before the first differing column to 100 after.
  static func excerpt(pinned: [UInt8], now: [UInt8]) -> String {
    let old = lines(pinned)
    let new = lines(now)
    var prefix = 0
    while prefix < old.count && prefix < new.count && old[prefix] == new[prefix] { prefix += 1 }
    var suffix = 0
    while suffix < min(old.count, new.count) - prefix && old[old.count - 1 - suffix] == new[new.count - 1 - suffix] {
      suffix += 1
    }
    let removed = old[prefix..<(old.count - suffix)].map(text)
    let added = new[prefix..<(new.count - suffix)].map(text)
    if removed.isEmpty && added.isEmpty {
      return "the same lines; only the newline at the end differs"
    }
    let first = max(0, prefix - 3)
    let after = min(3, suffix)
    var column = 0
    if let a = removed.first, let b = added.first {
      column = zip(a.unicodeScalars, b.unicodeScalars).prefix { $0 == $1 }.count
    }
    func line(_ mark: String, _ text: String) -> String {
      let scalars = Array(text.unicodeScalars)
      guard scalars.count > 160 else { return mark + escaped(text) }
      let start = max(0, column - 60)
      let end = min(scalars.count, column + 100)
      var window = String.UnicodeScalarView()
      window.append(contentsOf: scalars[start..<end])
      return mark + (start > 0 ? "…" : "") + escaped(String(window)) + (end < scalars.count ? "…" : "")
    }
    func changed(_ mark: String, _ lines: [String], _ side: String) -> [String] {
      lines.prefix(8).map { line(mark, $0) } + (lines.count > 8 ? ["  … \(lines.count - 8) more \(side) lines"] : [])
    }
    let context = prefix - first
    var out = [
      "--- pinned", "+++ now",
      "@@ -\(first + 1),\(context + removed.count + after) +\(first + 1),\(context + added.count + after) @@"
        + (removed.count == 1 && added.count == 1 ? " (first at column \(column + 1))" : ""),
    ]
    out += old[first..<prefix].map { line(" ", text($0)) }
    out += changed("-", removed, "pinned")
    out += changed("+", added, "new")
    out += old[(old.count - suffix)..<(old.count - suffix + after)].map { line(" ", text($0)) }
    return out.joined(separator: "\n")
  }

  /// The lines of `bytes`, a newline ending each (the last may lack it), compared as bytes: text
  /// compares canonically equivalent characters (e and U+0301, é) as equal.
  static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
    var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false)
    if bytes.last == 0x0A { lines.removeLast() }
    return lines
  }

  static func text(_ line: ArraySlice<UInt8>) -> String { String(decoding: line, as: UTF8.self) }
}
