import Foundation
import Testing

@testable import VPNStatTestSupport

/// `scripts/mutation-check` finds a mutation by its declaration and a layout-free pattern, so
/// reformatting or moving the code it names does not break CI; what it cannot find is a warning
/// in `--check` (CI) and a failure with `--strict` or in a run.
@Suite("Mutation anchors")
struct MutationAnchorTests {
  static let script = Built.packageRoot.appendingPathComponent("scripts/mutation-check").path

  /// A tree with one Swift file and a mutation list naming a line in one of its functions.
  struct Tree {
    let directory: TemporaryDirectory
    var list: String { directory.file("mutations.json") }

    init(_ files: [String: String]) throws {
      directory = try TemporaryDirectory("anchors")
      for (path, text) in files { try write(path, text) }
      let edit: [String: String] = [
        "file": "Sources/Counts.swift", "in": "func wrapped",
        "original": "      return n >= o ? n - o : n + (1 << 32) - o",
        "replacement": "      return n >= o ? n - o : n + (1 << 32) - o - 1",
      ]
      let mutation: [String: Any] = ["name": "wrap-off-by-one", "area": "ledger", "why": "x", "edits": [edit]]
      let document = try JSONSerialization.data(withJSONObject: ["mutations": [mutation]], options: [.prettyPrinted])
      try document.write(to: URL(fileURLWithPath: list))
    }

    func write(_ path: String, _ text: String) throws {
      let url = directory.url.appendingPathComponent(path)
      try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try text.write(to: url, atomically: true, encoding: .utf8)
    }

    func check(_ extra: [String] = []) throws -> CommandResult {
      try run(
        "/usr/bin/python3",
        [MutationAnchorTests.script, "--check", "--no-format-check", "--tree", directory.path, "--mutations", list]
          + extra)
    }

    func mutated() throws -> String {
      let program = """
        import importlib.machinery, importlib.util, json, sys
        loader = importlib.machinery.SourceFileLoader("mc", sys.argv[1])
        spec = importlib.util.spec_from_loader("mc", loader)
        mc = importlib.util.module_from_spec(spec)
        loader.exec_module(mc)
        mutation = json.load(open(sys.argv[3]))["mutations"][0]
        _, mutated = mc.mutated_texts(sys.argv[2], mutation)
        for path, text in sorted(mutated.items()):
            print("== " + path)
            print(text)
        """
      let result = try run("/usr/bin/python3", ["-c", program, MutationAnchorTests.script, directory.path, list])
      try #require(result.status == 0, "\(result.errors)")
      return result.output
    }
  }

  static let counts = """
    func wrapped(_ n: UInt64, _ o: UInt64) -> UInt64 {
      return n >= o ? n - o : n + (1 << 32) - o
    }

    func unwrapped(_ n: UInt64, _ o: UInt64) -> UInt64 {
      return n >= o ? n - o : n + (1 << 32) - o
    }

    """

  @Test("the text is found in the named function, not in a twin elsewhere in the file")
  func scoped() throws {
    let tree = try Tree(["Sources/Counts.swift": Self.counts])
    let checked = try tree.check()
    #expect(checked.status == 0 && checked.output.contains("1 of 1 mutations apply"), "\(checked.output)")
    #expect(!checked.output.contains("warning"), "\(checked.output)")
    let text = try tree.mutated()
    #expect(
      text.contains(
        "func wrapped(_ n: UInt64, _ o: UInt64) -> UInt64 {\n  return n >= o ? n - o : n + (1 << 32) - o - 1\n}"))
    #expect(
      text.contains(
        "func unwrapped(_ n: UInt64, _ o: UInt64) -> UInt64 {\n  return n >= o ? n - o : n + (1 << 32) - o\n}"))
  }

  @Test("a re-wrapped, re-indented line and a function moved to another file still apply")
  func reformattedAndMoved() throws {
    let rewrapped = """
      struct Counts {
        // A comment with a brace { and "a string {" do not confuse the scope.
        static func wrapped(_ n: UInt64, _ o: UInt64) -> UInt64 {
          let text = "\\(n) {"
          return n >= o
            ? n - o : n + (1 << 32) - o
        }
      }

      """
    let tree = try Tree(["Sources/Counts.swift": "let unrelated = 1\n", "Sources/Moved/Wrap.swift": rewrapped])
    let checked = try tree.check()
    #expect(checked.status == 0, "\(checked.output)")
    #expect(checked.output.contains("moved from Sources/Counts.swift to Sources/Moved/Wrap.swift"), "\(checked.output)")
    #expect(try tree.mutated().contains("return n >= o ? n - o : n + (1 << 32) - o - 1\n  }"))
    let reanchor = try run(
      "/usr/bin/python3", [Self.script, "--reanchor", "--tree", tree.directory.path, "--mutations", tree.list])
    #expect(reanchor.status == 0, "\(reanchor.output)\(reanchor.errors)")
    let after = try tree.check()
    #expect(after.status == 0 && !after.output.contains("moved"), "\(after.output)")
    #expect(try String(contentsOfFile: tree.list, encoding: .utf8).contains("Sources/Moved/Wrap.swift"))
  }

  @Test("a mutation whose text is gone is a warning in --check and a failure with --strict")
  func staleIsAWarning() throws {
    let tree = try Tree(["Sources/Counts.swift": "func wrapped(_ n: UInt64) -> UInt64 { n }\n"])
    let checked = try tree.check()
    #expect(checked.status == 0, "\(checked.output)")
    #expect(checked.output.contains("warning: 1 stale mutation(s)"), "\(checked.output)")
    #expect(
      checked.output.contains("stale: wrap-off-by-one: original text not found in `func wrapped`"), "\(checked.output)")
    #expect(checked.output.contains("0 of 1 mutations apply"), "\(checked.output)")
    let strict = try tree.check(["--strict"])
    #expect(strict.status == 2, "\(strict.output)")
  }

  @Test("text found twice in the named function is stale, never a guess")
  func ambiguous() throws {
    let twice = Self.counts.replacingOccurrences(
      of: "  return n >= o ? n - o : n + (1 << 32) - o\n}\n\nfunc unwrapped",
      with: "  _ = n >= o ? n - o : n + (1 << 32) - o\n  return n >= o ? n - o : n + (1 << 32) - o\n}\n\nfunc unwrapped"
    )
    let tree = try Tree(["Sources/Counts.swift": twice.replacingOccurrences(of: "_ = n", with: "return n")])
    let checked = try tree.check(["--strict"])
    #expect(checked.status == 2, "\(checked.output)")
    #expect(checked.output.contains("found 2 times in `func wrapped`"), "\(checked.output)")
  }
}
