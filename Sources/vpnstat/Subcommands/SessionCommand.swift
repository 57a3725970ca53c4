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
        abstract:
          "The connect gate for a tunnel's pre-up hook: exit 0 if connecting is allowed, 75 in the pause, 66 if it cannot tell.",
        discussion: """
          Only reads: a database that is locked, full or read-only cannot make it hang or pass.
          When the session cannot be read within --timeout it exits 66 (undecided), which the
          shipped hooks treat as a refusal.
          """,
        options: [
          OptionSpec("quiet", short: "q", help: "Print nothing; the exit status says it all."), CommonOptions.json,
          .duration(
            "timeout", help: "How long to wait for a database another process holds locked (default 2s); then exit 66."),
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
    // status and check only read; a missing database is simply "no window yet".
    let isGate = parsed.path.last == "check"
    if isGate {
      let timeout = try parsed.value("timeout", expected: durationExpectation, parseDuration) ?? .seconds(2)
      do {
        return try check(parsed, context, location: location, timeout: timeout)
      } catch let error as StoreError {
        guard case .busy = error else { throw error }
        context.warn(
          "cannot read the session window in \(location.path) within \(parsed.value("timeout") ?? "2s"): it is locked by another process. Undecided: treat this as a refusal and try again."
        )
        return .undecided
      }
    }
    let store = try Store.open(location, intent: .read)
    var sampler = try CommonOptions.sampler(parsed)
    let (sample, ledger, warnings) = try CommonOptions.sample(&sampler, store: store)
    for warning in warnings { context.warn(warning) }
    let report =
      try CommonOptions.sessionReport(store, parsed, sampler: &sampler, sample: sample, ledger: ledger)
      ?? SessionReport.make(
        SessionRecord(), now: sample.taken.wall, tunnelUp: false, nextLengths: try CommonOptions.lengths(parsed),
        tunnelTotals: nil, lastStop: nil)
    if parsed.has("json") {
      try context.write(SessionJSON.render(report, generatedAt: sample.taken.wall) + [0x0A])
    } else {
      try context.write(SessionText.render(report, options: CommonOptions.display(parsed, context)))
    }
    return .success
  }

  /// The connect gate: the stored window at the trusted now, read within `timeout` however the
  /// database is held. The tunnel's state (expired or paused) comes from a sample when one can
  /// be taken; the decision never needs it.
  static func check(_ parsed: ParsedCommand, _ context: CommandContext, location: StoreLocation, timeout: Duration)
    throws -> ExitStatus
  {
    let clock = SystemTimeSource()
    let reading = clock.now()
    let store = try Store.open(location, intent: .read, waitingAtMost: timeout)
    var report: SessionReport
    if let store {
      var sampler = try CommonOptions.sampler(parsed)
      let sample = try? sampler.sample()
      report = try SessionView.report(
        store, reading: reading, sample: sample, catalog: &sampler.catalog, ledger: nil,
        nextLengths: try CommonOptions.lengths(parsed))
    } else {
      report = SessionReport.make(
        SessionRecord(), now: reading.wall, tunnelUp: false, nextLengths: try CommonOptions.lengths(parsed),
        tunnelTotals: nil, lastStop: nil)
    }
    if parsed.has("json") {
      try context.write(SessionJSON.render(report, generatedAt: reading.wall) + [0x0A])
    } else if !parsed.has("quiet") {
      if let message = report.pauseMessage {
        context.warn(message)
      } else {
        try context.write(SessionText.headline(report) + "\n")
      }
    }
    return report.canConnect ? .success : .tryLater
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
