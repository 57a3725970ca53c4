import Foundation
import Testing

/// Output pinned byte for byte to what the renderer wrote when the pin was made, kept in
/// `Tests/Pinned/NAME`: a change that must not alter output (a function split in pieces, a
/// helper for a repeated shape) leaves these files as they are. `VPNSTAT_PIN=record` rewrites
/// them from the code under test and fails the test, so a recording run never passes.
enum PinnedOutput {
  static var directory: URL { Built.packageRoot.appendingPathComponent("Tests/Pinned") }

  static func expect(
    _ actual: [UInt8], named name: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    let url = directory.appendingPathComponent(name)
    if ProcessInfo.processInfo.environment["VPNSTAT_PIN"] == "record" {
      do {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(actual).write(to: url)
        Issue.record("recorded \(url.path); run again without VPNSTAT_PIN=record", sourceLocation: sourceLocation)
      } catch {
        Issue.record("cannot record \(url.path): \(error)", sourceLocation: sourceLocation)
      }
      return
    }
    guard let pinned = FileManager.default.contents(atPath: url.path) else {
      Issue.record("no pinned output \(url.path) (VPNSTAT_PIN=record makes it)", sourceLocation: sourceLocation)
      return
    }
    if Array(pinned) == actual { return }
    let old = String(decoding: pinned, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
    let new = String(decoding: actual, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
    let line = zip(old, new).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(old.count, new.count)
    let was = line < old.count ? String(old[line]) : "(end)"
    let now = line < new.count ? String(new[line]) : "(end)"
    let message =
      "\(name) differs from its pin (\(pinned.count) → \(actual.count) bytes), first at line \(line + 1):\n"
      + "pinned: \(was.debugDescription)\nnow:    \(now.debugDescription)"
    Issue.record(Comment(rawValue: message), sourceLocation: sourceLocation)
  }

  static func expect(_ actual: String, named name: String, sourceLocation: SourceLocation = #_sourceLocation) {
    expect(Array(actual.utf8), named: name, sourceLocation: sourceLocation)
  }

  /// Many outputs in one pin, each under a header line naming its case.
  static func expect(
    _ cases: [(String, [UInt8])], named name: String, sourceLocation: SourceLocation = #_sourceLocation
  ) {
    var all: [UInt8] = []
    for (label, bytes) in cases {
      all += Array("=== \(label)\n".utf8) + bytes + [0x0A]
    }
    expect(all, named: name, sourceLocation: sourceLocation)
  }
}
