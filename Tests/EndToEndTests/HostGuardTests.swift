import Foundation
import Testing

@testable import VPNStatTestSupport

/// The suite-level guard of issue 20 (`Tests/HostGuard/host_guard.c`): the host's links — names,
/// indexes, flags a program sets, addresses — recorded when the test process was loaded and
/// compared when it exits (a difference fails the run, whatever the tests said). Here the same
/// comparison mid-run, so a change that is still there shows as a named failure too.
struct HostGuardTests {
  @Test("the guard recorded the host's links before any test ran, and they are unchanged so far")
  func hostLinksUnchanged() throws {
    let start = try #require(HostLinks.atStart, "the guard did not record the host's links")
    #expect(start.contains("link ") && start.contains(" lo flags "), "\(start)")
    let now = try #require(HostLinks.now())
    #expect(now == start, "the host's links changed while the tests ran:\nbefore:\n\(start)\nnow:\n\(now)")
  }
}
