import Foundation

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// Runs a vpnstat command line in this process with a clock and a calendar of the test's own
/// (reports about "now" are then exact), its output captured through files.
func runInProcess(
  _ arguments: [String], clock: any TimeSource, calendar: any LocalCalendar = FixedOffsetCalendar.utc,
  environment: [String: String] = [:]
) throws -> CommandResult {
  let directory = try TemporaryDirectory("inproc")
  let outPath = directory.file("out")
  let errPath = directory.file("err")
  let out = try FileDescriptor.open(outPath, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600)
  let err = try FileDescriptor.open(errPath, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600)
  defer {
    out.close()
    err.close()
  }
  let context = CommandContext(
    standardInput: FileDescriptor(rawValue: -1), standardOutput: out, standardError: err,
    environmentVariables: [
      "VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config", "VPNSTAT_DB": "/nonexistent/none.db",
      "LANG": "C.UTF-8",
    ]
    .merging(environment) { $1 },
    isRoot: false, clock: clock, calendar: calendar)
  let status = try inOwnNamespace(if: Privilege.isRoot && LinkChanging.mayChangeLinks(arguments)) {
    VPNStat.main(arguments: arguments.map { Array($0.utf8) }, context: context)
  }
  return CommandResult(
    status: status.rawValue, stdout: contents(outPath) ?? Data(), stderr: contents(errPath) ?? Data())
}
