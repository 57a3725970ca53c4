import VPNStatCore

/// `vpnstat session [status|check|reset]`: the free plan's session window.
enum SessionCommand: Subcommand {
  static let common = [CommonOptions.db, CommonOptions.sessionLength, CommonOptions.pauseLength]

  static let spec = CommandSpec(
    name: "session", abstract: "Show the free plan's session window; check or reset it.",
    subcommands: [
      CommandSpec(
        name: "status", abstract: "Show the session: state, time left, the pause, usage, the last stop.",
        options: [CommonOptions.json, CommonOptions.bytes, CommonOptions.noColor] + common),
      CommandSpec(
        name: "check",
        abstract: "The connect gate for a tunnel's pre-up hook: exit 0 if connecting is allowed, 75 in the pause.",
        options: [
          OptionSpec("quiet", short: "q", help: "Print nothing; the exit status says it all."), CommonOptions.json,
        ] + common),
      CommandSpec(
        name: "reset", abstract: "Clear the session window (needs write access to the database).",
        options: [CommonOptions.db]),
    ], defaultSubcommand: "status")

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let location = CommonOptions.storeLocation(parsed, context)
    switch parsed.path.last {
    case "reset":
      guard let store = try Store.open(location, intent: .write) else { return .unavailable }
      let now = try store.trustedNow(SystemTimeSource().now())
      let had = try store.updateSession { record -> Bool in
        let had = record.window != nil
        record.window = nil
        record.tunnel = nil
        return had
      }
      if had {
        try store.recordStop(StopRecord(at: now, interface: nil, reason: .reset, detail: "vpnstat session reset"))
      }
      try context.write(had ? "session window cleared\n" : "there was no session window\n")
      return .success
    default:
      break
    }
    // status and check read; a missing database is simply "no window yet".
    let store = try Store.open(location, intent: .writeIfPermitted)
    var sampler = try CommonOptions.sampler(parsed)
    let sample = try sampler.sample()
    var report: SessionReport
    if let store {
      // The gate answers from what is stored, without waiting on the ledger; `session status`
      // advances it first, so the window's usage is current.
      var warnings: [String] = []
      let ledger =
        parsed.path.last == "check"
        ? nil : try LedgerView.advance(store, sampler: &sampler, sample: sample, warnings: &warnings)
      for warning in warnings { context.warn(warning) }
      report = try SessionView.report(
        store, reading: sample.taken, sample: sample, catalog: &sampler.catalog, ledger: ledger,
        nextLengths: try CommonOptions.lengths(parsed))
    } else {
      report = SessionReport.make(
        SessionRecord(), now: sample.taken.wall, tunnelUp: false, nextLengths: try CommonOptions.lengths(parsed),
        tunnelTotals: nil, lastStop: nil)
    }
    if parsed.path.last == "check" {
      if parsed.has("json") {
        try context.write(SessionJSON.render(report, generatedAt: sample.taken.wall) + [0x0A])
      } else if !parsed.has("quiet") {
        if let message = report.pauseMessage {
          context.warn(message)
        } else {
          try context.write(SessionText.headline(report) + "\n")
        }
      }
      return report.canConnect ? .success : .tryLater
    }
    if parsed.has("json") {
      try context.write(SessionJSON.render(report, generatedAt: sample.taken.wall) + [0x0A])
    } else {
      try context.write(SessionText.render(report, options: CommonOptions.display(parsed, context)))
    }
    return .success
  }
}

/// `vpnstat plan free|premium`: switch plans. Premium has no window, and switching to it clears
/// the window so that a later downgrade starts clean.
enum PlanCommand: Subcommand {
  static let spec = CommandSpec(
    name: "plan", abstract: "Show or set the plan: free (15 min sessions, 45 min pauses) or premium (no limit).",
    options: [CommonOptions.db],
    positionals: [PositionalSpec("plan", help: "free or premium; omitted: show the plan.", optional: true)])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let location = CommonOptions.storeLocation(parsed, context)
    guard let word = parsed.positionals.first else {
      let plan = try Store.open(location, intent: .read)?.sessionRecord().plan ?? .free
      try context.write("\(plan.rawValue)\n")
      return .success
    }
    guard let plan = Plan(rawValue: word) else {
      throw UsageError(
        "invalid plan '\(TerminalText.sanitize(word))': expected free or premium", commandPath: parsed.commandPath)
    }
    guard let store = try Store.open(location, intent: .write) else { return .unavailable }
    let now = try store.trustedNow(SystemTimeSource().now())
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
