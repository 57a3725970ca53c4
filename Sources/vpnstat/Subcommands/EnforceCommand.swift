import VPNStatCore

/// `vpnstat enforce IFACE`: the free plan's watchdog for one tunnel.
enum EnforceCommand: Subcommand {
  static let spec = CommandSpec(
    name: "enforce", abstract: "Enforce the free plan's session limit on one tunnel, until stopped.",
    discussion: """
      Runs the on-tunnel-up rule whenever IFACE appears or comes up (whoever raised it), takes the
      tunnel down at the session's wall-clock deadline and at once whenever it comes up during
      the pause, and records why each session ended. One enforcer per tunnel.
      """,
    options: [
      OptionSpec(
        "action", .value("action"), help: "The built-in disconnect action: link-down (default).",
        accepts: { $0 == "link-down" }),
      OptionSpec.duration(
        "exec-timeout", help: "How long --exec may run before it is killed (default 10s)."),
      CommonOptions.db, CommonOptions.sessionLength, CommonOptions.pauseLength, CommonOptions.source,
      CommonOptions.classOverride, CommonOptions.maxRate,
      OptionSpec(
        "exec", .remainder("command"),
        help: "Disconnect by running COMMAND ARG… (no shell; must come last). The kernel is checked afterwards."),
    ],
    positionals: [PositionalSpec("iface", help: "The tunnel interface (e.g. wg0, tun0).")])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let tunnel = InterfaceName(parsingEscaped: parsed.positionals[0])
    // A name the kernel refuses can never come up: waiting for it would be forever.
    if let problem = tunnel.kernelProblem {
      throw UsageError(
        "invalid interface name '\(tunnel.escaped)': it \(problem), so no interface can have it",
        commandPath: parsed.commandPath)
    }
    if parsed.has("exec") && parsed.has("action") {
      throw UsageError("give either --action or --exec, not both", commandPath: parsed.commandPath)
    }
    let timeout = try parsed.value("exec-timeout", expected: "a duration such as 10s", parseDuration) ?? .seconds(10)
    let location = CommonOptions.storeLocation(parsed, context)
    // Time to migrate at the start; afterwards the enforcer waits only moments for a lock, and
    // a database that is locked or full never holds it up (it enforces from memory meanwhile).
    let open = { (wait: Int32) throws -> Store? in
      let store = try Store.open(location, intent: .write, busyTimeoutMilliseconds: wait)
      store?.setBusyTimeout(milliseconds: 25)
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
    let control: LinkControl
    do {
      control = try LinkControl()
    } catch {
      throw GeneralFailure(.unavailable, "cannot open a netlink socket to watch \(tunnel.terminalText): \(error)")
    }
    let action: (any DisconnectAction)? =
      parsed.remainderBytes["exec"].map { CommandAction(arguments: $0, timeout: timeout) }
    var enforcer = try Enforcer(
      tunnel: tunnel, store: store, openStore: { try open(25) },
      sampler: try CommonOptions.sampler(parsed, recorded: InterfaceSelection(names: [tunnel])),
      lengths: try CommonOptions.lengths(parsed), action: action, control: control,
      log: RecordCommand.StandardErrorLog(context: context))
    try enforcer.run()
    withExtendedLifetime(lock) {}
    return .success
  }
}
