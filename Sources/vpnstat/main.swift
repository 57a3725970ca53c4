import VPNStatCore

#if canImport(Glibc)
  import Glibc
#endif

/// The subcommands, in the order help lists them.
let subcommands: [any Subcommand.Type] = [
  StatusCommand.self, WatchCommand.self, SessionCommand.self, PlanCommand.self, EnforceCommand.self,
  RecordCommand.self, HistoryCommand.self, ExportCommand.self, FlowsCommand.self,
]

let rootSpec = CommandSpec(
  name: "vpnstat",
  abstract:
    "Traffic per interface class (Wi‑Fi, cellular, tunnel), as estimates, beside the VPN free plan's session window.",
  subcommands: subcommands.map { $0.spec },
  defaultSubcommand: "status")

/// The arguments as the kernel passed them, as bytes: they need not be UTF-8 (an interface name
/// or an `--exec` argument may hold any byte), and the parser decides how to read each.
func rawArguments() -> [[UInt8]] {
  (1..<Int(CommandLine.argc)).map { i in
    Array(UnsafeRawBufferPointer(start: CommandLine.unsafeArgv[i], count: strlen(CommandLine.unsafeArgv[i]!)))
  }
}

@MainActor func runMain() -> ExitStatus {
  // A run piped into `head` ends on EPIPE, treated as success below, instead of dying of
  // SIGPIPE half-way through a line (and a live view gets to restore the terminal).
  signal(SIGPIPE, SIG_IGN)
  let context = CommandContext()
  do {
    var parsed = try parseCommandLine(rawArguments: rawArguments(), root: rootSpec)
    if !parsed.helpRequested && !parsed.versionRequested {
      try ConfigFile.apply(to: &parsed, path: ConfigFile.path(context, isRoot: getuid() == 0))
    }
    if parsed.versionRequested {
      try context.write("vpnstat \(vpnstatVersion)\n")
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
  } catch let failure as any CommandFailure {
    context.warn(failure.message)
    return failure.exitStatus
  } catch let error as Errno where error.rawValue == EPIPE {
    return .success
  } catch let error as Errno {
    context.warn("I/O error: \(error)")
    return .ioError
  } catch {
    context.warn("internal error: \(error) (please report it)")
    return .software
  }
}

exit(runMain().rawValue)
