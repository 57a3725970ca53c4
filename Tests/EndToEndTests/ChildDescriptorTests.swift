import Foundation
import Testing

@testable import VPNStatTestSupport

/// What a test starts holds only its three standard descriptors: a fresh machine's test runner
/// once left vpnstat ~25 open descriptors, which changed how many files it could keep open and
/// what a test about descriptors measured.
struct ChildDescriptorTests {
  @Test("a child started by a test holds only standard input, output and error, whatever the test process holds")
  func onlyStandardDescriptors() throws {
    let held = try LeftoverDescriptor()
    let result = try run("/bin/sh", ["-c", LeftoverDescriptor.listing])
    #expect(result.status == 0)
    let open = LeftoverDescriptor.listed(result.output)
    #expect(!open.contains(Int(held.number)), "the child holds descriptor \(held.number): \(result.output)")
    #expect(open.filter { $0 > 2 }.count <= 1, "descriptors above 2: \(result.output)")
  }
}
