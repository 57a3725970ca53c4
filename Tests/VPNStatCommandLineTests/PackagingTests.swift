import Foundation
import Testing

@testable import VPNStatTestSupport

/// scripts/build-deb without a release build: a copy of the debug build stands in for it, in a
/// build directory of the test's own (SCRATCH), so the script's choice between reusing a build
/// and making one shows, and so does what it packs. PackageTests (VPNSTAT_CHECK_DEB=1) builds the
/// real package and installs it in a fresh Debian root.
struct PackagingTests {
  /// A build directory whose release/vpnstat is a copy of the debug build.
  static func scratch(_ directory: TemporaryDirectory) throws -> String {
    let release = directory.url.appendingPathComponent("scratch/release")
    try FileManager.default.createDirectory(at: release, withIntermediateDirectories: true)
    let copied = try run("/bin/cp", [Built.vpnstat, release.appendingPathComponent("vpnstat").path])
    guard copied.status == 0 else { throw TestSetupError("cp: \(copied.errors)") }
    return directory.file("scratch")
  }

  @Test(
    "build-deb packs a release build newer than Sources/, Plugins/ and Package.swift as it is, every man page gzipped; an older one it builds again"
  )
  func reusesAnUpToDateBuild() throws {
    for tool in ["/usr/bin/make", "/usr/bin/strip"] { try Tool.require(tool) }
    let directory = try TemporaryDirectory("deb")
    let scratch = try Self.scratch(directory)
    let binary = scratch + "/release/vpnstat"
    let script = Built.packageRoot.appendingPathComponent("scripts/build-deb").path
    // SWIFT is what `make build` runs: false, so that a build the script should not start fails
    // it at once rather than taking minutes.
    let environment = ["SCRATCH": scratch, "SWIFT": "/bin/false"]
    let built = try run(script, [directory.path], environment: environment, timeout: 600)
    #expect(built.status == 0, "build-deb: \(built.errors)")
    #expect(
      built.errors.contains("\(binary) is newer than Sources/, Plugins/ and Package.swift: using it"), "\(built.errors)"
    )
    let deb = built.output.trimmingCharacters(in: .whitespacesAndNewlines)
    try #require(deb.hasPrefix(directory.path + "/vpnstat_") && deb.hasSuffix(".deb"), "\(built.output)")

    // Every page of man/, gzipped, in its section's directory, and no other.
    let contents = try run("/usr/bin/dpkg-deb", ["-c", deb])
    try #require(contents.status == 0, "dpkg-deb -c: \(contents.errors)")
    let packed = Set(
      contents.output.split(separator: "\n").compactMap { line -> String? in
        guard let path = line.split(separator: " ").last, path.hasPrefix("./usr/share/man/man") else { return nil }
        return path.hasSuffix("/") ? nil : String(path)
      })
    let pages = DocumentationTests.pageFiles
    try #require(pages.count > 8, "\(pages)")
    let expected = Set(
      pages.map { page in
        "./usr/share/man/man\(DocumentationTests.nameAndSection(page).section)/\(page).gz"
      })
    #expect(packed == expected, "packed: \(packed.sorted())")

    // Older than the sources: the script builds (here: fails, as SWIFT says), never packs it.
    try #require(utimes(binary, [timeval(tv_sec: 0, tv_usec: 0), timeval(tv_sec: 0, tv_usec: 0)]) == 0)
    let stale = try run(script, [directory.path], environment: environment, timeout: 600)
    #expect(stale.status != 0, "build-deb packed a build older than the sources: \(stale.output)")
    #expect(!stale.errors.contains("using it") && stale.errors.contains("/bin/false build"), "\(stale.errors)")
  }
}
