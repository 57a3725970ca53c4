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

  static let rootAbstract =
    "Traffic per interface class (Wi‑Fi, cellular, tunnel), as estimates, beside the VPN free plan's session window."

  /// Every command: what help, completions and the configuration file's settings are made from.
  static let rootSpec = CommandSpec(
    name: "vpnstat", abstract: rootAbstract, subcommands: subcommands.map { $0.spec },
    defaultSubcommand: "status")

  /// The command table `arguments` are parsed against: when the first word names a command, or
  /// is an option of the default one (`status`), the root with that command alone — building
  /// every command's spec (options, help, value sets) was a third of a `status` on a small
  /// machine. `--version` alone gets no command; anything else (help, a mistyped command) the whole table.
  static func root(for arguments: [[UInt8]]) -> CommandSpec {
    let first = arguments.first.map { String(decoding: $0, as: UTF8.self) }
    let chosen: (any Subcommand.Type)?
    switch first {
    case nil: chosen = StatusCommand.self
    // The version alone reads no command's options: the table would be three quarters of its
    // instructions (728 K → 160 K).
    case "--version"? where arguments.count == 1: return CommandSpec(name: "vpnstat", abstract: rootAbstract)
    case "-h"?, "--help"?, "--version"?: chosen = nil
    case let word? where word.hasPrefix("-"): chosen = StatusCommand.self
    case let word?: chosen = listedCommand(named: word)
    }
    guard let chosen else { return rootSpec }
    return CommandSpec(name: "vpnstat", abstract: rootAbstract, subcommands: [chosen.spec], defaultSubcommand: "status")
  }

  /// Each subcommand by the name its spec gives it, so that running one builds no other's spec
  /// (a switch: a table of names and types would cost the runtime more to set up than the
  /// specs it saves). `CommandTableTests.namesMatchSpecs` holds it to the specs; a command
  /// missing here is still found, through the full table.
  static func listedCommand(named name: String) -> (any Subcommand.Type)? {
    switch name {
    case "report": ReportCommand.self
    case "status": StatusCommand.self
    case "watch": WatchCommand.self
    case "session": SessionCommand.self
    case "plan": PlanCommand.self
    case "enforce": EnforceCommand.self
    case "connect": ConnectCommand.self
    case "disconnect": DisconnectCommand.self
    case "record": RecordCommand.self
    case "history": HistoryCommand.self
    case "alert": AlertCommand.self
    case "export": ExportCommand.self
    case "flows": FlowsCommand.self
    case "notify": NotifyCommand.self
    case "completions": CompletionsCommand.self
    default: nil
    }
  }

  /// The command `name` names.
  static func command(named name: String?) -> (any Subcommand.Type)? {
    guard let name else { return nil }
    return listedCommand(named: name) ?? subcommands.first { $0.spec.name == name }
  }

  /// Runs the command line `arguments` (without the program name, as bytes: they need not be
  /// UTF-8) and says how it ended. Every error ends here, mapped by `ExitStatus.of`.
  package static func main(arguments: [[UInt8]], context: CommandContext) -> ExitStatus {
    do {
      var parsed = try parseCommandLine(rawArguments: arguments, root: root(for: arguments))
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
      guard let command = command(named: parsed.path.dropFirst().first) else {
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
