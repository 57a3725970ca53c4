import Foundation
import Testing

@testable import VPNStatTestSupport

/// Whether to build and check the Debian package here: only when asked, as root. It costs a
/// release build and, without /tmp/vpnstat-fresh-base.tar, a debootstrap (about 2 minutes and
/// the Debian mirror); CI runs scripts/check-deb after the tests instead, so that this build does
/// not compete with the timing of the kernel tests.
enum PackageCheck {
  static let asked = ProcessInfo.processInfo.environment["VPNSTAT_CHECK_DEB"] == "1"
  static let reason: Comment =
    "set VPNSTAT_CHECK_DEB=1 (as root) to build the Debian package and install it in a fresh Debian 12 root; CI runs scripts/check-deb after the tests"
}

@Suite(.enabled(if: PackageCheck.asked && Privilege.isRoot, PackageCheck.reason))
struct PackageTests {
  @Test(
    "the package scripts/build-deb makes passes scripts/check-deb: lintian, dpkg -i, status, man, systemd-analyze verify, dpkg -r"
  )
  func packageInstallsInFreshRoot() throws {
    let root = Built.packageRoot.path
    let out = try TemporaryDirectory("deb")
    // Its own build directory: the one `swift test` uses is locked while it runs.
    let built = try run(
      root + "/scripts/build-deb", [out.path], environment: ["SCRATCH": root + "/.build/package"], timeout: 3600)
    try #require(built.status == 0, "build-deb: \(built.errors)")
    let deb = built.output.trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(deb.hasSuffix("_amd64.deb") || deb.hasSuffix(".deb"), "\(deb)")
    // Every page of man/, gzipped, in its section's directory.
    let contents = try run("/usr/bin/dpkg-deb", ["-c", deb])
    try #require(contents.status == 0, "dpkg-deb -c: \(contents.errors)")
    let pages = (try FileManager.default.contentsOfDirectory(atPath: root + "/man"))
      .filter { $0.wholeMatch(of: /[a-z][a-z.-]*\.[1-8]/) != nil }
    try #require(pages.count > 8, "\(pages)")
    for page in pages {
      let section = page[page.index(after: page.lastIndex(of: ".")!)...]
      #expect(
        contents.output.contains("./usr/share/man/man\(section)/\(page).gz\n"), "the package has no \(page).gz")
    }
    let checked = try run(root + "/scripts/check-deb", [deb], timeout: 3600)
    #expect(checked.status == 0, "check-deb:\n\(checked.output)\n\(checked.errors)")
    for step in [
      "dpkg -i", "vpnstat status", "man vpnstat", "man: every page", "systemd-analyze", "dpkg -r", "all passed",
    ] {
      #expect(checked.output.contains("check-deb: \(step)"), "no step '\(step)':\n\(checked.output)")
    }
  }
}
