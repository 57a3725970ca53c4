import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat connect NAME`: the gate, then a start through the tunnel's manager, accepted, then
/// confirmed real — the seeds' VPN control API on Linux.
enum ConnectCommand: Subcommand {
  static let manager = Option<TunnelManager.Kind>(
    "manager", valueName: "kind",
    help: "Which manager NAME is: networkmanager, systemd, wg-quick, openvpn or none (an interface no manager runs).",
    expected: TunnelManager.Kind.allCases.map(\.rawValue).joined(separator: ", "),
    parse: TunnelManager.Kind.init(rawValue:))
  static let timeoutRange: ClosedRange<Duration> = .milliseconds(100) ... .seconds(600)
  static let timeout = Option<Duration>(
    "timeout", valueName: "duration",
    help: "How long the start may take to be real (default 30s, at most 10m); then exit 69.",
    expected: "a duration from 100ms to 10m, such as 3s or 1m",
    parse: { parseDuration($0).flatMap { timeoutRange.contains($0) ? $0 : nil } })
  /// What both commands take besides their timeout: how NAME is found, the output, the database.
  static let common = [
    manager.spec, CommonOptions.json.spec, CommonOptions.db.spec, CommonOptions.wgQuickDirectory.spec,
    CommonOptions.systemdUnit.spec, CommonOptions.classOverride.spec,
  ]

  static let spec = CommandSpec(
    name: "connect",
    abstract: "Start a tunnel through its manager, once the gate allows it, and wait until it is real.",
    discussion: """
      Runs the gate first (as `session check`: in the pause or with the data cap reached it
      exits 75, undecided 66, and starts nothing). NAME is a NetworkManager connection (name or
      UUID), a systemd unit, a wg-quick configuration (a name in --wg-quick-dir or
      /etc/wireguard, or a path) or an interface; a name that is more than one exits 64 naming
      them (choose with --manager). An interface must be of class tunnel (as status shows it;
      --class NAME=tunnel says so of another): any other exits 64 at once, untouched. The
      manager's start only means accepted: vpnstat then waits
      for proof — NetworkManager's `activated`, systemd's `active`, a WireGuard handshake newer
      than the start, a link up and running — and exits 0 saying how long it took, or 69 after
      --timeout saying what never happened.
      """,
    options: [timeout.spec] + common,
    positionals: [PositionalSpec("name", help: "The connection, unit, wg-quick configuration or interface.")])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let name = try TunnelCommand.name(parsed)
    let limit = parsed[timeout] ?? .seconds(30)
    let location = CommandServices.storeLocation(parsed, context)
    // The gate, before anything is looked up or started.
    let gateLimit = Duration.seconds(2)
    let reading = context.clock.now()
    do {
      let session = try SessionCommand.gate(parsed, context, location: location, timeout: gateLimit, reading: reading)
      if let refusal = SessionText.refusal(session, calendar: context.calendar) {
        // A name that names no tunnel is said before the pause: a typo is no refusal, and none
        // is recorded for the desktop to show. Looked up only now, when the gate refused.
        do {
          _ = try TunnelCommand.resolve(name, parsed)
        } catch let error as TunnelNameError {
          if case .notFound = error { throw error }
        } catch {}
        if let recorded = Refusal.of(session, interface: InterfaceName(parsingEscaped: name), by: .connect),
          let problem = SessionView.record(recorded, at: location, calendar: context.calendar)
        {
          context.warn(problem)
        }
        return try TunnelCommand.finish(
          TunnelControlReport(
            command: .connect(waitedFor: [], missing: nil), name: name, timeout: limit, outcome: .notAllowed,
            detail: refusal),
          parsed, context)
      }
    } catch StoreError.busy {
      return try TunnelCommand.finish(
        TunnelControlReport(
          command: .connect(waitedFor: [], missing: nil), name: name, timeout: limit, outcome: .undecided,
          detail: SessionCommand.undecided(location, gateLimit)), parsed, context)
    }
    let (target, resolver, links) = try TunnelCommand.resolve(name, parsed)
    if let disagreement = target.enforcerDisagreement(at: location) { context.warn(disagreement) }
    var attempt = ConnectAttempt(
      name: name, manager: target.manager, control: target.control,
      probe: ConnectionProbe(runner: resolver.detector.runner, links: links, wireGuard: CommandServices.wireGuard()),
      clock: context.clock, timeout: limit)
    attempt.handle(.start)
    if attempt.state == .accepted, !parsed.has(CommonOptions.json) {
      try context.write(TunnelControlText.accepted(attempt.report) + "\n")
    }
    ConnectLoop.run(&attempt)
    return try TunnelCommand.finish(attempt.report, parsed, context)
  }
}

/// A tunnel command — `connect` or `disconnect` — in the steps both take: reading NAME, finding
/// the one tunnel it names, and ending with its report (the model's `TunnelControlReport`).
enum TunnelCommand {
  static func name(_ parsed: ParsedCommand) throws -> String {
    let name = parsed.positionals[0]
    guard !name.isEmpty else { throw UsageError("NAME is empty", commandPath: parsed.commandPath) }
    if let problem = TunnelNameArgument.problem(name) {
      throw UsageError("NAME '\(TerminalText.sanitize(name))' \(problem)", commandPath: parsed.commandPath)
    }
    return name
  }

  /// The one tunnel NAME names — refused (64) when it is a kernel interface whose class is not
  /// `tunnel` (`NotATunnel`), before anything is started or stopped.
  static func resolve(_ name: String, _ parsed: ParsedCommand) throws -> (
    TunnelTarget, TunnelResolver, NetlinkLinkTable
  ) {
    let links: NetlinkLinkTable
    do {
      links = try NetlinkLinkTable()
    } catch {
      throw GeneralFailure(.unavailable, "cannot open a netlink socket to ask about interfaces: \(error)")
    }
    let resolver = TunnelResolver(
      detector: try CommandServices.managerDetector(parsed, acting: true), links: links,
      catalog: InterfaceCatalog(classifier: CommandServices.classifier(parsed)))
    let target = try resolver.resolve(name, kind: parsed[ConnectCommand.manager])
    if let refusal = target.notATunnel { throw UsageError(refusal.description, commandPath: parsed.commandPath) }
    return (target, resolver, links)
  }

  /// Prints the report (JSON, or its sentence: on stdout when it went as asked, on stderr
  /// otherwise) and gives its status.
  static func finish(_ report: TunnelControlReport, _ parsed: ParsedCommand, _ context: CommandContext) throws
    -> ExitStatus
  {
    let status = ExitStatus.of(report.outcome)
    if parsed.has(CommonOptions.json) {
      try context.write(TunnelControlJSON.render(report, generatedAt: context.clock.now().wall) + [0x0A])
    } else if status == .success {
      try context.write(TunnelControlText.message(report) + "\n")
    } else {
      context.warn(TunnelControlText.message(report))
    }
    return status
  }
}
