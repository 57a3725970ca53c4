import VPNStatModel

/// A WireGuard tunnel brought up by wg-quick from its configuration: `wg-quick down CONFIG`
/// removes what `up` added — the fwmark rules, table 51820's routes, the nft table, DNS — and
/// the device. A bare link-down would leave the rules in place and send traffic outside the
/// tunnel. Confirmed when the device is gone: wg-quick deletes it last.
///
/// wg-quick runs the file's PreUp/PostDown lines as root: the file is one `ManagerDetector`
/// trusted, and it is named by its absolute path, which wg-quick cannot take for an option.
package struct WgQuickControl: TunnelControl {
  /// The configuration file's absolute path.
  package let configuration: String
  package let runner: any ProgramRunner
  package let manager: TunnelManager?
  package init(configuration: String, manager: TunnelManager? = nil, runner: any ProgramRunner) {
    self.configuration = configuration
    self.manager = manager
    self.runner = runner
  }
  package var label: String { "wg-quick \(TerminalText.sanitize(configuration))" }

  static func downCommand(_ configuration: String) -> [String] { ["wg-quick", "down", configuration] }

  /// Why the configuration is not handed to wg-quick, or nil.
  var problem: String? {
    configuration.hasPrefix("/") ? nil : "wg-quick is given configurations by absolute path only"
  }

  package func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    if let problem { return .failed(problem) }
    let run = runner.run(Self.downCommand(configuration), timeout: .seconds(30))
    return run.succeeded ? .done : .failed("wg-quick down \(run.failure)")
  }

  package func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? { deviceGone }

  static func upCommand(_ configuration: String) -> [String] { ["wg-quick", "up", configuration] }

  /// `wg-quick up` returns once the device is configured and up (its PreUp gate refuses here,
  /// with its words): a peer may not have answered yet.
  package func start(timeout: Duration) -> StartOutcome {
    if let problem { return .refused(problem) }
    let run = runner.run(Self.upCommand(configuration), timeout: timeout)
    return run.succeeded ? .accepted : .refused("wg-quick up \(run.failure)")
  }

  /// The interface wg-quick names after the file: `/etc/wireguard/wg0.conf` → wg0.
  package func device() -> InterfaceName? {
    var name = Substring(configuration)
    if let slash = name.lastIndex(of: "/") { name = name[name.index(after: slash)...] }
    if name.hasSuffix(".conf") { name = name.dropLast(".conf".count) }
    return name.isEmpty ? nil : InterfaceName(String(name))
  }

  package var proofs: [ConnectionProof] { [.wireGuardHandshake(device())] }
}
