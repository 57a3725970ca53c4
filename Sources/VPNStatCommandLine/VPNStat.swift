import VPNStatModel
import VPNStatSystem

/// The command line as a library: what `vpnstat` does with its arguments, in a context. The
/// executable is one call to `main`; tests call it in-process with their own context.
package enum VPNStat {
  /// The subcommands, in the order help lists them.
  static let subcommands: [any Subcommand.Type] = [
    ReportCommand.self, StatusCommand.self, WatchCommand.self, SessionCommand.self, PlanCommand.self,
    EnforceCommand.self, NotifyCommand.self,
    ConnectCommand.self, DisconnectCommand.self,
    RecordCommand.self, HistoryCommand.self, AlertCommand.self, ExportCommand.self, FlowsCommand.self,
    CompletionsCommand.self,
  ]

  static let rootSpec = CommandSpec(
    name: "vpnstat",
    abstract:
      "Traffic per interface class (Wi‑Fi, cellular, tunnel), as estimates, beside the VPN free plan's session window.",
    subcommands: subcommands.map { $0.spec },
    defaultSubcommand: "status")

  /// Runs the command line `arguments` (without the program name, as bytes: they need not be
  /// UTF-8) and says how it ended. Every error ends here, mapped by `ExitStatus.of`.
  package static func main(arguments: [[UInt8]], context: CommandContext) -> ExitStatus {
    do {
      var parsed = try parseCommandLine(rawArguments: arguments, root: rootSpec)
      if !parsed.helpRequested && !parsed.versionRequested {
        try ConfigFile.apply(to: &parsed, paths: ConfigFile.paths(context), settable: settable)
      }
      if parsed.versionRequested {
        try context.write(versionLine + "\n")
        return .success
      }
      if parsed.helpRequested {
        try context.write(helpText(for: parsed.spec, path: parsed.path))
        return .success
      }
      guard let command = subcommands.first(where: { $0.spec.name == parsed.path.dropFirst().first }) else {
        try context.write(helpText(for: rootSpec, path: ["vpnstat"]))
        return .success
      }
      return try command.run(parsed, context)
    } catch let error as UsageError {
      context.warn(error.message)
      context.warn("see '\(error.commandPath) --help'")
      return .usage
    } catch {
      let (status, message) = ExitStatus.of(error)
      if let message { context.warn(message) }
      return status
    }
  }

  /// The settings a configuration file may hold: every option declared configurable, in any
  /// command (derived from the declarations, so the two cannot drift).
  static let settable: Set<String> = {
    var names = Set<String>()
    func visit(_ spec: CommandSpec) {
      for option in spec.options where option.configurable { names.insert(option.long) }
      spec.subcommands.forEach(visit)
    }
    visit(rootSpec)
    return names
  }()
}
