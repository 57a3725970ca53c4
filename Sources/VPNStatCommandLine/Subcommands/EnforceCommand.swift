import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// `vpnstat enforce IFACE`: the free plan's watchdog for one tunnel.
enum EnforceCommand: Subcommand {
  /// The disconnect actions built in (`--exec` runs any other).
  enum BuiltInAction: String, CaseIterable, Sendable {
    case linkDown = "link-down"
  }

  static let action = Option<BuiltInAction>.oneOf(
    "action", valueName: "action", help: "The built-in disconnect action (default link-down).")
  static let execTimeout = Option.duration(
    "exec-timeout", configurable: true, help: "How long --exec may run before it is killed (default 10s).")
  static let exec = Remainder(
    "exec", valueName: "command",
    help: "Disconnect by running COMMAND ARG… (no shell; must come last). The kernel is checked afterwards.")

  static let spec = CommandSpec(
    name: "enforce", abstract: "Enforce the free plan's session limit on one tunnel, until stopped.",
    discussion: """
      Runs the on-tunnel-up rule whenever IFACE appears or comes up (whoever raised it), takes the
      tunnel down at the session's wall-clock deadline and at once whenever it comes up during
      the pause, and records why each session ended. One enforcer per tunnel.
      """,
    options: [
      action.spec, execTimeout.spec, CommonOptions.db.spec, CommonOptions.sessionLength.spec,
      CommonOptions.pauseLength.spec, CommonOptions.source.spec, CommonOptions.classOverride.spec,
      CommonOptions.maxRate.spec, exec.spec,
    ],
    positionals: [PositionalSpec("iface", help: "The tunnel interface (e.g. wg0, tun0).", values: .interface)])

  /// How long each database statement of a running enforcer may wait for another process's
  /// lock: moments, so the database never holds up a disconnect.
  static let runningBusyTimeoutMilliseconds: Int32 = 25

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let tunnel = InterfaceName(parsingEscaped: parsed.positionals[0])
    // A name the kernel refuses can never come up: waiting for it would be forever.
    if let problem = tunnel.kernelProblem {
      throw UsageError(
        "invalid interface name '\(tunnel.escaped)': it \(problem), so no interface can have it",
        commandPath: parsed.commandPath)
    }
    if parsed.has(exec) && parsed.has(action) {
      throw UsageError("give either --action or --exec, not both", commandPath: parsed.commandPath)
    }
    let location = CommonOptions.storeLocation(parsed, context)
    // Time to migrate at the start; afterwards the enforcer waits only moments for a lock, and
    // a database that is locked or full never holds it up (it enforces from memory meanwhile).
    let open = { (wait: Int32) throws -> Store? in
      let store = try context.openStore(location, intent: .write, busyTimeoutMilliseconds: wait)
      store?.setBusyTimeout(milliseconds: runningBusyTimeoutMilliseconds)
      return store
    }
    var store: Store?
    do {
      store = try open(2000)
    } catch StoreError.busy {
      context.warn("\(location.path) is locked by another process: enforcing from memory until it can be read")
    }
    let lock = try ProcessLock(
      path: location.lockPath("enforce-\(tunnel.escaped)"), role: "vpnstat enforce \(tunnel.escaped)")
    let links: LinkControl
    let alarm: WallClockDeadline
    do {
      links = try LinkControl()
      alarm = try WallClockDeadline()
    } catch {
      throw GeneralFailure(.unavailable, "cannot open a netlink socket to watch \(tunnel.terminalText): \(error)")
    }
    let command: (any DisconnectAction)? =
      parsed.has(exec)
      ? CommandAction(arguments: parsed.bytes(exec), timeout: parsed[execTimeout] ?? .seconds(10)) : nil
    var enforcer = Enforcer(
      tunnel: tunnel, store: store, openStore: { try open(runningBusyTimeoutMilliseconds) },
      sampler: CommonOptions.sampler(parsed, context, recorded: InterfaceSelection(names: [tunnel])),
      lengths: CommonOptions.lengths(parsed), action: command, links: links, alarm: alarm,
      log: StandardErrorLog(context: context), calendar: context.calendar)
    try EnforcerLoop.run(&enforcer, alarm: alarm)
    withExtendedLifetime(lock) {}
    return .success
  }
}
