import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat enforce IFACE`: the free plan's watchdog for one tunnel.
enum EnforceCommand: Subcommand {
  /// How the enforcer disconnects: through the tunnel's manager (`auto`, or one named), or the
  /// kernel alone (`link-down`, `delete`).
  enum ActionChoice: Sendable, Equatable {
    case manager(TunnelManager.Kind?)
    case linkDown
    case delete

    static let names = ["auto", "link-down", "delete", "networkmanager", "systemd", "wg-quick", "openvpn"]

    init?(_ text: String) {
      switch text {
      case "auto": self = .manager(nil)
      case "link-down": self = .linkDown
      case "delete": self = .delete
      default:
        guard let kind = TunnelManager.Kind(rawValue: text), kind != .none else { return nil }
        self = .manager(kind)
      }
    }
  }

  static let action = Option<ActionChoice>(
    "action", valueName: "action",
    help:
      "How to disconnect: auto (default: through the tunnel's manager), link-down, delete, networkmanager, systemd, wg-quick or openvpn.",
    expected: ValueSet.alternatives(ActionChoice.names), values: .oneOf(ActionChoice.names), parse: ActionChoice.init)
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

  /// How long each database statement of a running enforcer may wait for another process's
  /// lock: moments, so the database never holds up a disconnect.
  static let runningBusyTimeoutMilliseconds: Int32 = 25
  /// How long a starting enforcer waits for the database before it enforces from memory (a
  /// tunnel up then is held down, undecided, until the window can be read).
  static let startWait = Duration.milliseconds(500)

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    // The rule `connect` and `disconnect` apply to NAME, on the name as typed.
    if let problem = TunnelNameArgument.problem(parsed.positionals[0]) {
      throw UsageError(
        "IFACE '\(TerminalText.sanitize(parsed.positionals[0]))' \(problem)", commandPath: parsed.commandPath)
    }
    let tunnel = InterfaceName(parsingEscaped: parsed.positionals[0])
    try refuseWhatCannotBeEnforced(tunnel, parsed)
    let choice = parsed.has(exec) ? nil : parsed[action] ?? .manager(nil)
    let detector = try CommandServices.managerDetector(parsed, acting: true)
    // A wg-quick configuration for the tunnel that others could have written is said now; one
    // that appears later is not used (link-down, and the log says why).
    if case .refused(let path, let problem) = detector.wgQuickConfiguration(for: tunnel) {
      throw UntrustedFile(role: "wg-quick configuration", path: path, problem: problem)
    }
    // What it needs, checked before anything else: an enforcer that could never disconnect must
    // not look as if it holds the tunnel.
    try EnforcerRequirements.check(networkManager: usesNetworkManager(choice, tunnel, detector: detector))
    let location = CommandServices.storeLocation(parsed, context)
    let (opener, store) = try openStore(location, context)
    // Until its own store opens, the session is read as any reader reads it: no lock to wait for.
    let view = store == nil ? try? Store.open(location, intent: .read, waitingAtMost: startWait) : nil
    let lock = try ProcessLock(
      path: location.lockPath("enforce-\(tunnel.escaped)"), role: "vpnstat enforce \(tunnel.escaped)")
    let links: NetlinkLinkTable
    let alarm: WallClockDeadline
    do {
      links = try NetlinkLinkTable()
      alarm = try WallClockDeadline()
    } catch {
      throw GeneralFailure(.unavailable, "cannot open a netlink socket to watch \(tunnel.terminalText): \(error)")
    }
    var enforcer = Enforcer(
      tunnel: tunnel, action: disconnectAction(choice, parsed, detector: detector, links: links),
      lengths: CommandServices.lengths(parsed),
      sampler: CommandServices.sampler(parsed, context, recorded: InterfaceSelection(names: [tunnel])),
      storage: EnforcerStorage(
        store: store, view: view,
        open: {
          switch opener.outcome() {
          case .opened(let store): return store
          case .failed(let error): throw error
          case .pending, .taken: return nil
          }
        },
        saveInterval: parsed[CommonOptions.saveInterval] ?? Recorder.defaultSaveInterval,
        ledgerLock: LedgerLockFile(location, role: "vpnstat enforce \(tunnel.escaped)"),
        spool: EnforcerSpool(location: location), presence: EnforcerPresenceFile(location: location, tunnel: tunnel),
        // Without a watch (inotify refused), the session is read before every decision instead.
        changes: try? location.changes()),
      environment: EnforcerEnvironment(
        links: links, alarm: alarm, log: StandardErrorLog(context: context), calendar: context.calendar,
        holdRelease: ManagerHoldRelease(runner: detector.runner)))
    try EnforcerLoop.run(&enforcer, alarm: alarm, checkInterval: parsed[interval] ?? .seconds(5))
    withExtendedLifetime(lock) {}
    return .success
  }

  /// A name no interface can have, or an interface of another class that bears it now, is
  /// refused at once (one that appears later is left alone by the enforcer itself).
  static func refuseWhatCannotBeEnforced(_ tunnel: InterfaceName, _ parsed: ParsedCommand) throws {
    // A name the kernel refuses can never come up: waiting for it would be forever.
    if let problem = tunnel.kernelProblem {
      throw UsageError(
        "invalid interface name '\(tunnel.escaped)': it \(problem), so no interface can have it",
        commandPath: parsed.commandPath)
    }
    if let link = try? NetlinkLinkTable().link(named: tunnel) {
      var catalog = InterfaceCatalog(classifier: CommandServices.classifier(parsed))
      let entry = catalog.entry(for: link)
      if let refusal = NotATunnel.check(link.name, entry.interfaceClass, by: entry.evidence) {
        throw UsageError(refusal.description, commandPath: parsed.commandPath)
      }
    }
  }

  /// The database, opened on a thread of its own and never waited for long: a writer's open waits
  /// for the other writers of root's (a recorder's save) and looks at every page first, and
  /// meanwhile the tunnel must be held. The opener has time to migrate; the store, once handed
  /// over, waits only moments for the writers' lock. nil: enforcing from what the database
  /// reads as and the spool holds.
  static func openStore(_ location: StoreLocation, _ context: CommandContext) throws -> (StoreOpener, Store?) {
    let calendar = context.calendar
    let opener = try StoreOpener {
      let store = try Store.open(location, intent: .write, busyTimeoutMilliseconds: 2000, calendar: calendar)
      store?.setBusyTimeout(milliseconds: runningBusyTimeoutMilliseconds)
      return store
    }
    switch opener.outcome(waitingAtMost: startWait) {
    case .opened(let opened): return (opener, opened)
    case .failed(let error as StoreError) where error.isLasting: throw error
    case .failed(let error):
      context.warn("\(error): enforcing from what it reads as; what cannot be written is kept until it can be")
    case .pending, .taken:
      context.warn(
        "\(location.path) did not open for writing within \(Units.duration(startWait)): enforcing from what it reads as; what cannot be written is kept until it can be"
      )
    }
    return (opener, nil)
  }

  /// How the tunnel is taken down: `--exec`'s program, a link-down or delete, or its manager.
  static func disconnectAction(
    _ choice: ActionChoice?, _ parsed: ParsedCommand, detector: ManagerDetector, links: NetlinkLinkTable
  ) -> any DisconnectAction {
    switch choice {
    case nil:
      return ExecAction(arguments: parsed.bytes(exec), timeout: parsed[execTimeout] ?? .seconds(10))
    case .linkDown: return LinkDownAction(links: links)
    case .delete: return LinkDownAction(links: links, deleting: true)
    case .manager(let kind):
      return ManagerAction(
        kind: kind, detector: detector, runner: detector.runner, links: links, units: detector.units)
    }
  }

  /// Whether disconnecting may need NetworkManager's permission: asked for by name, or the
  /// manager of the tunnel as it is now (auto).
  static func usesNetworkManager(_ choice: ActionChoice?, _ tunnel: InterfaceName, detector: ManagerDetector) -> Bool {
    switch choice {
    case .manager(.networkManager): return true
    case .manager(nil):
      guard FileSystem.exists(detector.networkManagerDirectory), let link = try? NetlinkLinkTable().link(named: tunnel)
      else { return false }
      return detector.manager(of: tunnel, kind: link.attributes.kind).kind == .networkManager
    default: return false
    }
  }
}
