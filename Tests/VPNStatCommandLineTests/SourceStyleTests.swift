import Foundation
import Testing

@testable import VPNStatTestSupport

/// The code's form, checked with the formatter that ships with the toolchain and the project's
/// `.swift-format`, so style cannot drift between authors.
struct SourceStyleTests {
  @Test("swift-format lint --strict finds nothing in Sources, Tests and Benchmarks")
  func formatted() throws {
    let root = Built.packageRoot.path
    let result = try run(
      "/usr/bin/env",
      [
        "swift-format", "lint", "--strict", "--parallel", "--configuration", root + "/.swift-format", "-r",
        root + "/Sources", root + "/Tests", root + "/Benchmarks", root + "/Package.swift",
      ],
      // ~13 s of CPU for ~450 files; a fresh-machine run at load 25 took over a minute. The
      // bound only guards against a hang.
      timeout: 600)
    #expect(result.status == 0, "swift-format: \(result.errors)")
    #expect(result.errors.isEmpty && result.output.isEmpty, "\(result.errors)\(result.output)")
  }
}
