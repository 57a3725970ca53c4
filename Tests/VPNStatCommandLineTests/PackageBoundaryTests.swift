import Foundation
import Testing

@testable import VPNStatTestSupport

/// The package's graph as `Package.swift` declares it, held to what the code imports: a module
/// a target imports but does not declare compiles only through another target's leak, and a
/// declared module nothing imports is a boundary that only looks drawn.
struct PackageBoundaryTests {
  /// Dependencies a target declares for their symbols at link time, not for an import.
  static let linkedNotImported: [String: Set<String>] = [
    // libpcap's forwarders, called through CPcap's declarations (see CPcapLoader/loader.c).
    "VPNStatCapture": ["CPcapLoader"],
    // What the static executable replaces in its libraries' start-up (CStartUp/start-up.c).
    "vpnstat": ["CStartUp"],
  ]

  @Test("every Swift target imports exactly the package modules Package.swift declares for it")
  func importsMatchDeclarations() throws {
    let root = Built.packageRoot
    let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
    let targets = PackageManifest.targets(in: manifest)
    #expect(targets.count >= 15, "Package.swift parsed to \(targets.count) targets: the parser is out of date")
    let modules = Set(targets.map(\.name))
    var problems: [String] = []
    for target in targets where target.kind != "systemLibrary" && target.kind != "plugin" {
      let files = swiftFiles(under: root.appendingPathComponent(target.path))
      if files.isEmpty { continue }  // a C target: its headers are its imports
      var imported: Set<String> = []
      for file in files {
        let text = try String(contentsOf: file, encoding: .utf8)
        imported.formUnion(PackageManifest.importedModules(in: text).filter(modules.contains))
      }
      // An executable a target depends on is there to be built beside it (the benchmark runs
      // them), not imported.
      let executables = Set(targets.filter { $0.kind == "executableTarget" }.map(\.name))
      let declared = target.dependencies
      let undeclared = imported.subtracting(declared)
      let unused = declared.subtracting(imported).subtracting(executables)
        .subtracting(Self.linkedNotImported[target.name] ?? [])
      if !undeclared.isEmpty {
        problems.append("\(target.name) imports \(undeclared.sorted()) without declaring it")
      }
      if !unused.isEmpty {
        problems.append("\(target.name) declares \(unused.sorted()) and imports none of it")
      }
    }
    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
  }

  @Test("no module outside the tests imports another @testable")
  func noTestableImportOutsideTestTargets() throws {
    let root = Built.packageRoot
    let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
    var offenders: [String] = []
    for target in PackageManifest.targets(in: manifest) where target.kind != "testTarget" {
      for file in swiftFiles(under: root.appendingPathComponent(target.path)) {
        let text = try String(contentsOf: file, encoding: .utf8)
        if text.split(separator: "\n").contains(where: { $0.hasPrefix("@testable import") }) {
          offenders.append(file.path.replacingOccurrences(of: root.path + "/", with: ""))
        }
      }
    }
    #expect(offenders.isEmpty, "only debug builds allow @testable; share through `package` access: \(offenders)")
  }

  @Test("the manifest parser reads targets, paths and dependencies the way SwiftPM does")
  func parserReadsTheShapesThisManifestUses() {
    let manifest = """
      .target(name: "A"),
      .target(name: "B", dependencies: ["A", "CLinux"]),
      .executableTarget(
        name: "tool", dependencies: ["B"], path: "Tools/tool",
        linkerSettings: [.unsafeFlags(["-static-executable"], .when(configuration: .release))]),
      .testTarget(
        name: "BTests",
        dependencies: [
          "B", "A",
        ]),
      """
    let targets = PackageManifest.targets(in: manifest)
    #expect(targets.map(\.name) == ["A", "B", "tool", "BTests"])
    #expect(targets.map(\.path) == ["Sources/A", "Sources/B", "Tools/tool", "Tests/BTests"])
    #expect(targets.map(\.dependencies) == [[], ["A", "CLinux"], ["B"], ["B", "A"]])
    // Lines of a file, not of this one: a multi-line literal here would be read as imports.
    let source = [
      "@preconcurrency import CPcap", "import VPNStatModel", "#if canImport(Glibc)", "  import Glibc", "#endif",
      "// import NotThis", "let x = \"import Nor\"",
    ].joined(separator: "\n")
    #expect(PackageManifest.importedModules(in: source) == ["CPcap", "VPNStatModel", "Glibc"])
  }

  private func swiftFiles(under directory: URL) -> [URL] {
    guard let walk = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
    return walk.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
  }
}

/// Just enough of `Package.swift` to check it against the code: the shapes this manifest uses
/// (`.target(name:dependencies:path:…)` with string dependencies), checked by its own test.
enum PackageManifest {
  struct Target: Equatable {
    var kind: String
    var name: String
    var path: String
    var dependencies: Set<String>
  }

  static func targets(in manifest: String) -> [Target] {
    let kinds = ["target", "executableTarget", "testTarget", "systemLibrary", "plugin"]
    var result: [Target] = []
    var rest = Substring(manifest)
    while let start = rest.firstRange(of: /\.(target|executableTarget|testTarget|systemLibrary|plugin)\(/) {
      let kind = String(rest[start].dropFirst().dropLast())
      guard kinds.contains(kind), let body = balancedCall(rest[start.upperBound...]) else { break }
      rest = rest[body.endIndex...]
      guard let name = body.firstMatch(of: /name:\s*"([^"]+)"/)?.1 else { continue }
      let path = body.firstMatch(of: /path:\s*"([^"]+)"/)?.1
      var dependencies: Set<String> = []
      if let list = body.firstMatch(of: /dependencies:\s*\[([^\]]*)\]/)?.1 {
        dependencies = Set(list.matches(of: /"([^"]+)"/).map { String($0.1) })
      }
      let defaultPath = (kind == "testTarget" ? "Tests/" : "Sources/") + name
      result.append(
        Target(kind: kind, name: String(name), path: path.map(String.init) ?? defaultPath, dependencies: dependencies))
    }
    return result
  }

  /// The module names a Swift file imports, attributes allowed, comments and strings ignored.
  static func importedModules(in source: String) -> [String] {
    source.split(separator: "\n").compactMap { line in
      line.wholeMatch(
        of:
          /\s*(?:@\w+\s+)*(?:public\s+|package\s+|internal\s+)?import\s+(?:struct\s+|enum\s+|class\s+|func\s+)?(\w+)(?:\.\w+)*\s*/
      )
      .map { String($0.1) }
    }
  }

  /// The text up to the parenthesis that closes a call whose opening one was just read.
  private static func balancedCall(_ text: Substring) -> Substring? {
    var depth = 1
    var inString = false
    for index in text.indices {
      let character = text[index]
      if character == "\"" { inString.toggle() }
      if inString { continue }
      if character == "(" { depth += 1 }
      if character == ")" {
        depth -= 1
        if depth == 0 { return text[..<index] }
      }
    }
    return nil
  }
}
