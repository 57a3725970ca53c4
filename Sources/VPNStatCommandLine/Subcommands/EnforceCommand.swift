import VPNStatEngine
import VPNStatModel

/// `vpnstat enforce IFACE`: the free plan's watchdog for one tunnel.
enum EnforceCommand: Subcommand {
  /// `--action`'s words: `auto`, `link-down`, `delete`, or a manager's kind.
  static let actionNames = ["auto", "link-down", "delete", "networkmanager", "systemd", "wg-quick", "openvpn"]

  static func parseAction(_ text: String) -> DisconnectChoice? {
    switch text {
    case "auto": return .manager(nil)
    case "link-down": return .linkDown
    case "delete": return .delete
    default:
      guard let kind = TunnelManager.Kind(rawValue: text), kind != .none else { return nil }
      return .manager(kind)
    }
  }

  static let action = Option<DisconnectChoice>(
    "action", valueName: "action",
    help:
      "How to disconnect: auto (default: through the tunnel's manager), link-down, delete, networkmanager, systemd, wg-quick or openvpn.",
    expected: ValueSet.alternatives(actionNames), values: .oneOf(actionNames), parse: parseAction)
  static let execTimeout = Option.duration(
    "exec-timeout", configurable: true, help: "How long --exec may run before it is killed (default 10s).")
  static let interval = Option.duration(
    "interval",
    help:
      "Time between the periodic checks, each with a sample of the tunnel for the window's usage and the data cap (default 5s)."
  )
  static let exec = Remainder(
    "exec", valueName: "command",
    help: "Disconnect by running COMMAND ARG… (no shell; must come last). The kernel is checked afterwards.")

  static let spec = CommandSpec(
    name: "enforce", abstract: "Enforce the free plan's session limit on one tunnel, until stopped.",
    discussion: """
      Runs the on-tunnel-up rule whenever IFACE appears or comes up (whoever raised it), takes the
      tunnel down at the session's wall-clock deadline and at once whenever it comes up during
      the pause — through its manager (NetworkManager, systemd, wg-quick, OpenVPN) unless told
      otherwise — and records why each session ended. One enforcer per tunnel. Needs
      CAP_NET_ADMIN, and exits 77 at once without it. IFACE must be of class tunnel (as status
      shows it; --class IFACE=tunnel says so of another): an interface of another class exits 64
      at once, and one that appears later under the name is left alone.
      """,
    options: [
      action.spec, execTimeout.spec, interval.spec, CommonOptions.db.spec, CommonOptions.sessionLength.spec,
      CommonOptions.pauseLength.spec, CommonOptions.source.spec, CommonOptions.classOverride.spec,
      CommonOptions.maxRate.spec, CommonOptions.saveInterval.spec, CommonOptions.wgQuickDirectory.spec,
      CommonOptions.systemdUnit.spec, exec.spec,
    ],
    positionals: [PositionalSpec("iface", help: "The tunnel interface (e.g. wg0, tun0).", values: .interface)],
    exclusions: [.notBoth([action.spec], [exec.spec], "give either --action or --exec, not both")])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    // The rule `connect` and `disconnect` apply to NAME, on the name as typed.
    if let problem = TunnelNameArgument.problem(parsed.positionals[0]) {
      throw UsageError(
        "IFACE '\(TerminalText.sanitize(parsed.positionals[0]))' \(problem)", commandPath: parsed.commandPath)
    }
    let tunnel = InterfaceName(parsingEscaped: parsed.positionals[0])
    // A name the kernel refuses can never come up: waiting for it would be forever.
    if let problem = tunnel.kernelProblem {
      throw UsageError(
        "invalid interface name '\(tunnel.escaped)': it \(problem), so no interface can have it",
        commandPath: parsed.commandPath)
    }
    let choice: DisconnectChoice
    if parsed.has(exec) {
      choice = .exec(arguments: parsed.bytes(exec), timeout: parsed[execTimeout] ?? .seconds(10))
    } else {
      choice = parsed[action] ?? .manager(nil)
    }
    let request = EnforceRequest(
      tunnel: tunnel, choice: choice, detector: try CommandServices.managerDetector(parsed, acting: true),
      classifier: CommandServices.classifier(parsed), location: CommandServices.storeLocation(parsed, context),
      lengths: CommandServices.lengths(parsed),
      sampler: CommandServices.sampler(parsed, context, recorded: InterfaceSelection(names: [tunnel])),
      saveInterval: parsed[CommonOptions.saveInterval] ?? Recorder.defaultSaveInterval,
      checkInterval: parsed[interval] ?? .seconds(5), calendar: context.calendar,
      log: context.eventLog(), supervisor: context.supervisor())
    do {
      try Enforcement.run(request)
    } catch EnforceRefusal.notATunnel(let refusal) {
      throw UsageError(refusal.description, commandPath: parsed.commandPath)
    } catch EnforceRefusal.kernelUnavailable(let why) {
      throw GeneralFailure(.unavailable, why)
    }
    return .success
  }
}
