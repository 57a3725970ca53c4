import VPNStatEngine
import VPNStatModel

/// `vpnstat disconnect NAME`: a stop through the tunnel's manager, confirmed like the
/// enforcer's, recorded as `user` after it.
enum DisconnectCommand: Subcommand {
  static let timeout = Option<Duration>(
    "timeout", valueName: "duration",
    help: "How long the kernel and the manager may take to confirm the stop (default 10s, at most 10m); then exit 69.",
    expected: "a duration from 100ms to 10m, such as 3s or 1m",
    parse: { parseDuration($0).flatMap { ConnectCommand.timeoutRange.contains($0) ? $0 : nil } })

  static let spec = CommandSpec(
    name: "disconnect", abstract: "Stop a tunnel through its manager, confirm it, and record the stop.",
    discussion: """
      NAME is found as for connect, and an interface must be of class tunnel as for connect
      (64 at once otherwise, untouched). The manager is asked to stop (nmcli connection down,
      systemctl stop, wg-quick down, OpenVPN's management socket, link-down for a tunnel no
      manager runs); the stop counts when the kernel says the device is down or gone and the
      manager says it stopped. Never falls back to link-down. The stop is recorded with reason
      `user` after it: a database that is locked or not writable is said, and does not undo it.
      """,
    options: [timeout.spec] + ConnectCommand.common,
    positionals: [PositionalSpec("name", help: "The connection, unit, wg-quick configuration or interface.")])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let name = try TunnelCommand.name(parsed)
    let (target, _, links) = try TunnelCommand.resolve(name, parsed)
    var report = TunnelDisconnect(
      target, name: name, links: links, clock: context.clock, timeout: parsed[timeout] ?? .seconds(10)
    ).run()
    let location = CommandServices.storeLocation(parsed, context)
    if let error = TunnelDisconnect.recordStop(&report, at: location, calendar: context.calendar, clock: context.clock)
    {
      context.warn(
        "the stop was not recorded (\(ExitStatus.of(error).message ?? "\(error)")); the tunnel is disconnected all the same"
      )
    }
    return try TunnelCommand.finish(report, parsed, context)
  }
}
