import VPNStatModel

/// A systemd service (`wg-quick@wg0.service`, `openvpn-client@work.service`): stopped with
/// `systemctl stop`, which runs the unit's own ExecStop (wg-quick down for wg-quick@), confirmed
/// when `systemctl is-active` no longer says active.
package struct SystemdUnitControl: TunnelControl {
  package let unit: String
  package let runner: any ProgramRunner
  package let manager: TunnelManager?
  package init(unit: String, manager: TunnelManager? = nil, runner: any ProgramRunner) {
    self.unit = unit
    self.manager = manager
    self.runner = runner
  }
  package var label: String { "systemd \(TerminalText.sanitize(unit))" }

  // Every unit name goes after `--`: a name systemd accepts may still start with a dash.
  static func stopCommand(_ unit: String) -> [String] { ["systemctl", "stop", "--", unit] }
  static func stateCommand(_ units: [String]) -> [String] { ["systemctl", "is-active", "--"] + units }

  package func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    if let problem = ManagerName.unitProblem(unit) { return .failed(problem) }
    let run = runner.run(Self.stopCommand(unit), timeout: .seconds(30))
    return run.succeeded ? .done : .failed("systemctl stop \(run.failure)")
  }

  package func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? {
    ["inactive", "failed", "unknown"].contains(state())
  }

  /// What `systemctl is-active` says of the unit: `active`, `activating`, `inactive`, `failed`…
  package func state() -> String {
    runner.run(Self.stateCommand([unit]), timeout: .seconds(5)).output.trimmingASCIIWhitespace()
  }

  static func startCommand(_ unit: String) -> [String] { ["systemctl", "start", "--", unit] }

  /// Each unit's main process: `Id=…` and `MainPID=…` (in systemd's order), a blank line between
  /// units.
  static func mainProcessCommand(_ units: [String]) -> [String] {
    ["systemctl", "show", "--property=Id,MainPID", "--"] + units
  }

  /// `systemctl show --property=Id,MainPID` as unit → pid (0, no main process, left out).
  static func parseMainProcesses(_ output: String) -> [String: Int32] {
    var result: [String: Int32] = [:]
    for block in output.split(separator: "\n\n") {
      var unit: String?
      var pid: Int32?
      for line in block.split(separator: "\n") {
        if line.hasPrefix("Id=") { unit = String(line.dropFirst(3)) }
        if line.hasPrefix("MainPID=") { pid = Int32(line.dropFirst(8)) }
      }
      if let unit, let pid, pid > 0 { result[unit] = pid }
    }
    return result
  }

  /// `systemctl start` returns once the unit started (a oneshot such as `wg-quick@` once its
  /// ExecStart finished, OpenVPN's `Type=notify` units once it says so) or failed — a gate in
  /// ExecStartPre fails it here, with systemd's words.
  package func start(timeout: Duration) -> StartOutcome {
    if let problem = ManagerName.unitProblem(unit) { return .refused(problem) }
    let run = runner.run(Self.startCommand(unit), timeout: timeout)
    return run.succeeded ? .accepted : .refused("systemctl start \(run.failure)")
  }

  package func device() -> InterfaceName? { ManagerEvidence.wgQuickDevice(of: unit) }

  /// systemd's word; for `wg-quick@NAME`, a handshake on NAME too.
  package var proofs: [ConnectionProof] {
    [.unitActive(unit)] + (device().map { [.wireGuardHandshake($0)] } ?? [])
  }
}
