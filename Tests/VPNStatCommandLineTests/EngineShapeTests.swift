import Foundation
import Testing

@testable import VPNStatTestSupport

/// The engine's tree as ARCHITECTURE.md draws it: one folder per use case (and the two parts
/// they share), nothing loose at its root, and no I/O adapter inside it — those live at the edge
/// (VPNStatHTTP, VPNStatDesktop, VPNStatKernel, VPNStatStore, VPNStatSystem), where a test can
/// replace them behind a protocol.
struct EngineShapeTests {
  /// The use cases, then what they share: the tunnel managers' controls and the sampler.
  static let folders: Set<String> = [
    "Status", "Watch", "Record", "Serve", "Enforce", "Connect", "Notify", "Plan", "Managers", "Sampling",
  ]

  /// What only an adapter at the edge uses: a listening socket and the readiness wait of a server,
  /// the desktop's bus, HTTP's wire format.
  static let adapterWords = [
    "ListeningSocket(", "waitForReadiness(", "DesktopBusConnection", "BusMethodCall(", "HTTPRequestHead.parse(",
  ]

  static var engine: URL { Built.packageRoot.appendingPathComponent("Sources/VPNStatEngine") }

  @Test("the engine's folders are its use cases and the two parts they share; no file is loose at its root")
  func foldersAreUseCases() throws {
    let entries = try FileManager.default.contentsOfDirectory(atPath: Self.engine.path)
    let loose = entries.filter { $0.hasSuffix(".swift") }
    #expect(loose.isEmpty, "files at the engine's root belong in a use case's folder: \(loose.sorted())")
    let folders = Set(entries.filter { !$0.hasSuffix(".swift") })
    #expect(
      folders == Self.folders,
      "new: \(folders.subtracting(Self.folders).sorted()), gone: \(Self.folders.subtracting(folders).sorted()); a new use case is a folder here and a line in ARCHITECTURE.md"
    )
    for folder in folders {
      let files = try FileManager.default.contentsOfDirectory(atPath: Self.engine.appendingPathComponent(folder).path)
      #expect(files.contains { $0.hasSuffix(".swift") }, "\(folder) holds no Swift file")
    }
  }

  @Test("no I/O adapter lives in the engine: servers, the desktop bus and HTTP's wire format are at the edge")
  func adaptersAtTheEdge() throws {
    var found: [String] = []
    let walk = try #require(FileManager.default.enumerator(at: Self.engine, includingPropertiesForKeys: nil))
    for case let file as URL in walk where file.pathExtension == "swift" {
      let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
      for (number, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
        for word in Self.adapterWords where line.contains(word) {
          found.append("\(file.lastPathComponent):\(number + 1): \(word)")
        }
      }
    }
    #expect(found.isEmpty, "an adapter's work belongs in its edge target: \(found)")
    // The check itself sees what it looks for.
    #expect(Self.adapterWords.contains { "let listener = try ListeningSocket(port: 0)".contains($0) })
  }

  /// The commands that still reach the kernel or the store themselves rather than through one
  /// engine entry: each a step still to move into the engine. The list only shrinks. An import is
  /// the whole story: VPNStatCommandLine is built with MemberImportVisibility (SE-0444), so a
  /// command cannot use a store's or the kernel's members through another module's import.
  static let reachingPastTheEngine: [String: Set<String>] = [
    "AlertCommand.swift": ["VPNStatStore"], "ConnectCommand.swift": ["VPNStatKernel", "VPNStatStore"],
    "HistoryCommand.swift": ["VPNStatKernel", "VPNStatStore"], "NotifyCommand.swift": ["VPNStatStore"],
    "RecordCommand.swift": ["VPNStatKernel", "VPNStatStore"],
    "ReportCommand.swift": ["VPNStatStore"], "SessionCommand.swift": ["VPNStatStore"],
    "WatchCommand.swift": ["VPNStatStore"],
  ]

  @Test(
    "a command parses, calls the engine and renders: one that reaches the kernel or the store itself is a decision the engine's tests cannot see"
  )
  func commandsGoThroughTheEngine() throws {
    let folder = Built.packageRoot.appendingPathComponent("Sources/VPNStatCommandLine/Subcommands")
    var problems: [String] = []
    for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
      let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
      let reached = Set(PackageManifest.importedModules(in: text)).intersection(["VPNStatKernel", "VPNStatStore"])
      let allowed = Self.reachingPastTheEngine[file] ?? []
      if !reached.isSubset(of: allowed) {
        problems.append("\(file) imports \(reached.subtracting(allowed).sorted()): move the work into an engine entry")
      }
      if !allowed.isSubset(of: reached) {
        problems.append("\(file) no longer imports \(allowed.subtracting(reached).sorted()): take it off the list")
      }
    }
    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    #expect(Self.reachingPastTheEngine["EnforceCommand.swift"] == nil, "enforce calls one engine entry")
  }
}
