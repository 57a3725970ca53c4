import Foundation
import Testing

@testable import VPNStatTestSupport

/// What a test starts holds only its three standard descriptors: a fresh machine's test runner
/// once left vpnstat ~25 open descriptors, which changed how many files it could keep open and
/// what a test about descriptors measured.
struct ChildDescriptorTests {
  @Test("a child started by a test holds only standard input, output and error, whatever the test process holds")
  func onlyStandardDescriptors() throws {
    // Held without close-on-exec, as a runner's inherited descriptors are; high, so the
    // shell's own descriptor cannot take its number.
    let opened = open("/dev/null", O_RDONLY)
    try #require(opened >= 0)
    let held = fcntl(opened, F_DUPFD, 300)
    close(opened)
    try #require(held >= 300)
    defer { close(held) }
    let result = try run("/bin/sh", ["-c", "cd /proc/self/fd && echo *"])
    #expect(result.status == 0)
    // The shell's own look at its directory may add one descriptor above 2; the held one is not.
    let open = result.output.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    #expect(!open.contains(Int(held)), "the child holds descriptor \(held): \(result.output)")
    #expect(open.filter { $0 > 2 }.count <= 1, "descriptors above 2: \(result.output)")
  }
}
