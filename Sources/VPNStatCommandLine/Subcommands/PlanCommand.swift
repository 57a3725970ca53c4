import VPNStatModel
import VPNStatStore

/// `vpnstat plan free|premium`: switch plans. Premium has no window, and switching to it clears
/// the window so that a later downgrade starts clean.
enum PlanCommand: Subcommand {
  static let spec = CommandSpec(
    name: "plan", abstract: "Show or set the plan: free (15 min sessions, 45 min pauses) or premium (no limit).",
    options: [CommonOptions.db.spec],
    positionals: [
      PositionalSpec(
        "plan", help: "The plan to set; omitted: show the plan.", optional: true,
        values: .oneOf(Plan.allCases.map(\.rawValue)))
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let location = CommonOptions.storeLocation(parsed, context)
    guard let word = parsed.positionals.first else {
      let plan = try context.openStore(location, intent: .read)?.sessionRecord().plan ?? .free
      try context.write("\(plan.rawValue)\n")
      return .success
    }
    guard let plan = Plan(rawValue: word) else {
      throw UsageError(
        "invalid plan '\(TerminalText.sanitize(word))': expected free or premium", commandPath: parsed.commandPath)
    }
    guard let store = try context.openStore(location, intent: .write) else { return .unavailable }
    let now = try store.trustedNow(context.clock.now())
    let cleared = try store.updateSession { record -> Bool in
      let had = record.window != nil
      record = record.switching(to: plan)
      return had && record.window == nil
    }
    if cleared {
      try store.recordStop(StopRecord(at: now, interface: nil, reason: .reset, detail: "plan changed to premium"))
    }
    try context.write("plan: \(plan.rawValue)\(cleared ? " (session window cleared)" : "")\n")
    return .success
  }
}
