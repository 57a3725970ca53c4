import Foundation
import Testing

@testable import VPNStatTestSupport

/// ARCHITECTURE.md stays a map a newcomer reads in one sitting: short, each invariant a few lines
/// that name the test holding it, every test it names real. The history of why the code is fast
/// lives in docs/performance.md.
struct ArchitectureDocumentTests {
  static var document: String {
    get throws {
      try String(contentsOf: Built.packageRoot.appendingPathComponent("ARCHITECTURE.md"), encoding: .utf8)
    }
  }

  /// Every test target (a directory of Tests/), `struct`, `enum`, `class` or `extension` name,
  /// and every function name under Tests/.
  static func testNames() throws -> (suites: Set<String>, functions: Set<String>) {
    let root = Built.packageRoot.appendingPathComponent("Tests")
    var suites = Set(try FileManager.default.contentsOfDirectory(atPath: root.path))
    var functions: Set<String> = []
    let files = FileManager.default.enumerator(atPath: root.path)?.compactMap { $0 as? String } ?? []
    let declaration = try Regex(#"(?:struct|enum|class|extension|func)\s+([A-Za-z_][A-Za-z0-9_]*)"#)
    for file in files where file.hasSuffix(".swift") {
      let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
      for match in text.matches(of: declaration) {
        let name = String(text[match.range].split(whereSeparator: \.isWhitespace).last ?? "")
        if text[match.range].hasPrefix("func") { functions.insert(name) } else { suites.insert(name) }
      }
    }
    return (suites, functions)
  }

  /// The test names a text quotes: `SomeTests` or `SomeTests.someTest`, in backticks.
  static func quotedTests(_ text: String) throws -> [String] {
    let quoted = try Regex(#"`([A-Z][A-Za-z0-9]*Tests(?:\.[A-Za-z0-9_]+)?)`"#)
    return text.matches(of: quoted).map { String(text[$0.range].dropFirst().dropLast()) }
  }

  @Test("ARCHITECTURE.md is at most 4,000 words")
  func short() throws {
    let words = try Self.document.split(whereSeparator: \.isWhitespace).count
    #expect(words <= 4000, "ARCHITECTURE.md has \(words) words: move a story to docs/performance.md")
  }

  @Test("each Architecture Invariant is at most 60 words and names a test that exists")
  func invariants() throws {
    let paragraphs = try Self.document.components(separatedBy: "\n\n").filter {
      $0.hasPrefix("**Architecture Invariant:**")
    }
    try #require(paragraphs.count >= 20, "\(paragraphs.count) invariants found")
    let (suites, functions) = try Self.testNames()
    for paragraph in paragraphs {
      let words = paragraph.split(whereSeparator: \.isWhitespace).count - 2
      let opening = paragraph.prefix(90)
      #expect(words <= 60, "\(words) words: \(opening)…")
      let tests = try Self.quotedTests(paragraph)
      #expect(!tests.isEmpty, "names no test: \(opening)…")
      for test in tests {
        let parts = test.split(separator: ".").map(String.init)
        let real = suites.contains(parts[0]) && (parts.count == 1 || functions.contains(parts[1]))
        #expect(real, "\(test), named by \"\(opening)…\", is not a test under Tests/")
      }
    }
  }

  @Test("every test ARCHITECTURE.md names exists, and the check sees a name that does not")
  func namedTestsExist() throws {
    let (suites, functions) = try Self.testNames()
    for test in try Self.quotedTests(Self.document) {
      let parts = test.split(separator: ".").map(String.init)
      #expect(
        suites.contains(parts[0]) && (parts.count == 1 || functions.contains(parts[1])), "\(test) is not under Tests/")
    }
    #expect(try Self.quotedTests("see `NoSuchSuiteTests.nothing` and `ArchitectureDocumentTests`").count == 2)
    #expect(!suites.contains("NoSuchSuiteTests"))
    #expect(suites.contains("ArchitectureDocumentTests") && functions.contains("namedTestsExist"))
  }
}
