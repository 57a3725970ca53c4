import VPNStatModel
import VPNStatSystem

/// How a manager's program (nmcli, systemctl, wg-quick) is run: through `ChildProgram`, or, in
/// tests, by a fake manager.
package protocol ProgramRunner {
  func run(_ arguments: [String], timeout: Duration) -> ProgramRun
}

/// How a program ended and what it printed.
package struct ProgramRun: Hashable, Sendable {
  package var outcome: ChildProgram.Outcome
  package var output: String
  package var errors: String

  package init(outcome: ChildProgram.Outcome, output: String = "", errors: String = "") {
    self.outcome = outcome
    self.output = output
    self.errors = errors
  }

  package var succeeded: Bool { outcome == .exited(0) }

  /// "exited with status 1: Error: …" — the outcome and the last line it wrote on stderr, made
  /// safe for a terminal.
  package var failure: String {
    let last = errors.split(whereSeparator: \.isNewline).last.map { ": " + TerminalText.sanitize(String($0)) } ?? ""
    return "\(outcome)\(last)"
  }
}

/// Runs programs as children (no shell, stdin from /dev/null, killed after the timeout),
/// keeping what they print. The environment is the enforcer's, so a program found by `PATH`
/// here is the one a person would run.
package struct ChildProgramRunner: ProgramRunner {
  package init() {}
  package func run(_ arguments: [String], timeout: Duration) -> ProgramRun {
    let finished = ChildProgram(arguments.map { Array($0.utf8) }, timeout: timeout).runKeepingOutput(limit: 1 << 16)
    return ProgramRun(
      outcome: finished.outcome, output: String(decoding: finished.output, as: UTF8.self),
      errors: String(decoding: finished.errors, as: UTF8.self))
  }
}
