import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatSystem

/// One-shot commands leave what they built to the process's exit (`CommandContext.leaveToExit`):
/// only the process's own context may, since a test's runs many commands in one process.
struct LeaveToExitTests {
  final class Probe {}

  @Test("the process's own context keeps what it is given until the exit; a test's frees it at once")
  func onlyTheProcessLeavesToExit() {
    var freed: Probe? = Probe()
    weak let freedProbe = freed
    let test = CommandContext(
      environmentVariables: [:], isRoot: false, clock: SystemTimeSource(), calendar: SystemCalendar())
    #expect(!test.leavesToExit)
    test.leaveToExit(freed!)
    freed = nil
    #expect(freedProbe == nil)

    var kept: Probe? = Probe()
    weak let keptProbe = kept
    let process = CommandContext.process()
    #expect(process.leavesToExit)
    process.leaveToExit((kept!, 1))  // one probe, kept for the test process's life
    kept = nil
    #expect(keptProbe != nil)
  }
}
