import Testing
import VPNStatSystem

@testable import VPNStatTestSupport

/// What vpnstat runs (a manager's tool, a hook) gets standard input, output and error, and no
/// descriptor vpnstat's parent left it.
struct ChildProgramTests {
  @Test("a program vpnstat runs holds only descriptors 0-2, whatever vpnstat was left open")
  func onlyStandardDescriptors() throws {
    let held = try LeftoverDescriptor()
    let finished = ChildProgram(
      [Array("/bin/sh".utf8), Array("-c".utf8), Array(LeftoverDescriptor.listing.utf8)], timeout: .seconds(30)
    ).runKeepingOutput()
    #expect(finished.outcome == .exited(0))
    let listed = String(decoding: finished.output, as: UTF8.self)
    let open = LeftoverDescriptor.listed(listed)
    #expect(!open.contains(Int(held.number)), "the program holds descriptor \(held.number): \(listed)")
    #expect(open.filter { $0 > 2 }.count <= 1, "descriptors above 2: \(listed)")
  }
}
