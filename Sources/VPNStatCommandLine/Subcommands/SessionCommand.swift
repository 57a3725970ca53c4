import VPNStatEngine
import VPNStatModel
import VPNStatRender
import VPNStatStore

/// `vpnstat session [status|check|reset]`: the free plan's session window.
enum SessionCommand: Subcommand {
  static let quiet = Flag("quiet", short: "q", help: "Print nothing; the exit status says it all.")
  static let timeout = Option.duration(
    "timeout", help: "How long to wait for a database another process holds locked (default 2s); then exit 66.")
  /// Who runs the gate, as its refusals record it.
  enum Caller: String, CaseIterable, Sendable {
    case gate
    case dispatcher

    var path: Refusal.Path { self == .gate ? .gate : .dispatcher }
  }
  static let caller = Option<Caller>.oneOf(
    "caller", valueName: "caller",
    help:
      "Who runs the gate, as a refusal is recorded: gate (default) or dispatcher (NetworkManager's dispatcher script).")
  static let common = [CommonOptions.db.spec, CommonOptions.sessionLength.spec, CommonOptions.pauseLength.spec]

  static let spec = CommandSpec(
    name: "session", abstract: "Show the free plan's session window; check or reset it.",
    subcommands: [
      CommandSpec(
        name: "status", abstract: "Show the session: state, time left, the pause, usage, the last stop.",
        options: [
          CommonOptions.json.spec, CommonOptions.bytes.spec, CommonOptions.noColor.spec,
          CommonOptions.wgQuickDirectory.spec, CommonOptions.systemdUnit.spec,
        ] + common + CommonOptions.figures),
      CommandSpec(
        name: "check",
        abstract:
          "The connect gate for a tunnel's pre-up hook: exit 0 if connecting is allowed, 75 in the pause, 66 if it cannot tell.",
        discussion: """
          Only reads: a database that is locked, full or read-only cannot make it hang or pass.
          When the session cannot be read within --timeout it exits 66 (undecided), which the
          shipped hooks treat as a refusal. A refusal is recorded in the database for other
          readers (watch, session, notify) when the gate may write it (as root); otherwise it
          says so and still refuses.
          """,
        options: [quiet.spec, CommonOptions.json.spec, timeout.spec, caller.spec] + common),
      CommandSpec(
        name: "reset", abstract: "Clear the session window (needs write access to the database).",
        options: [CommonOptions.db.spec]),
    ], defaultSubcommand: "status")

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let location = CommandServices.storeLocation(parsed, context)
    switch parsed.path.last {
    case "reset": return try reset(location, context)
    case "check":
      let limit = parsed[timeout] ?? .seconds(2)
      do {
        return try check(parsed, context, location: location, timeout: limit)
      } catch StoreError.busy {
        context.warn(undecided(location, limit))
        return .undecided
      }
    default: return try status(parsed, context, location: location)
    }
  }

  /// `session status`: the window, its usage (the ledger advanced in memory), the last stop.
  static func status(_ parsed: ParsedCommand, _ context: CommandContext, location: StoreLocation) throws -> ExitStatus {
    let store = try context.openStore(location, intent: .read)
    let (report, at, warnings) = try SessionView.status(
      nextLengths: CommandServices.lengths(parsed), detector: try CommandServices.managerDetector(parsed),
      sampler: CommandServices.sampler(parsed, context), store: store)
    for warning in warnings { context.warn(warning) }
    if parsed.has(CommonOptions.json) {
      try context.write(SessionJSON.render(report, generatedAt: at) + [0x0A])
    } else {
      try context.write(SessionText.render(report, options: CommandServices.display(parsed, context)))
    }
    return .success
  }

  /// The connect gate (`SessionView.gate`), said as the exit status, a line or JSON.
  static func check(_ parsed: ParsedCommand, _ context: CommandContext, location: StoreLocation, timeout: Duration)
    throws -> ExitStatus
  {
    let reading = context.clock.now()
    let report = try gate(parsed, context, location: location, timeout: timeout, reading: reading)
    if let refusal = Refusal.of(report, interface: nil, by: (parsed[caller] ?? .gate).path),
      let problem = SessionView.record(refusal, at: location, calendar: context.calendar), !parsed.has(quiet)
    {
      context.warn(problem)
    }
    if parsed.has(CommonOptions.json) {
      try context.write(SessionJSON.render(report, generatedAt: reading.wall) + [0x0A])
    } else if !parsed.has(quiet) {
      if let message = SessionText.refusal(report, calendar: context.calendar) {
        // Under systemd (the gate is a unit's ExecStartPre) the journal gets it as the refusal
        // it is: `journalctl MESSAGE_ID=…` finds it beside the enforcer's.
        let block = report.connectBlock
        context.eventLog().event(
          LoggedEvent(
            message, kind: .connectRefused, reason: block?.reason.rawValue, until: block?.until))
      } else {
        try context.write(SessionText.headline(report, calendar: context.calendar) + "\n")
      }
    }
    return report.canConnect ? .success : .tryLater
  }

  /// The gate's decision as the command's options ask for it (`session check`, and `connect`
  /// before it starts anything): throws `StoreError.busy` when the window cannot be read within
  /// `timeout`, which is undecided.
  static func gate(
    _ parsed: ParsedCommand, _ context: CommandContext, location: StoreLocation, timeout: Duration,
    reading: ClockReading
  ) throws -> SessionReport {
    try SessionView.gate(
      location, timeout: timeout, reading: reading, nextLengths: CommandServices.lengths(parsed),
      sampler: CommandServices.sampler(parsed, context), calendar: context.calendar)
  }

  /// What the gate says when it cannot tell.
  static func undecided(_ location: StoreLocation, _ limit: Duration) -> String {
    "cannot read the session window in \(location.path) within \(Units.duration(limit)): it is locked by another process: a vpnstat writer kept changing it, or a program stopped in the middle of a write (the next vpnstat writer undoes it). Undecided: treat this as a refusal and try again."
  }

  /// `session reset`: clears the window; records a stop when there was one. A window or a
  /// trusted clock holding values no vpnstat writes is replaced, and said so: the way out of a
  /// damaged value (`StoreError.damagedValue` names this command).
  static func reset(_ location: StoreLocation, _ context: CommandContext) throws -> ExitStatus {
    guard let store = try context.openStore(location, intent: .write) else { return .unavailable }
    let cleared = try store.clearDamaged(.window)
    for damage in cleared { context.warn(damage.description) }
    let now = try store.trustedNow(context.clock.now())
    let damagedWindow = cleared.contains { $0.part == .window }
    let had = try store.updateSession { record -> Bool in
      let had = record.window != nil || damagedWindow
      record.window = nil
      record.tunnel = nil
      return had
    }
    if had {
      try store.recordStop(StopRecord(at: now, interface: nil, reason: .reset, detail: "vpnstat session reset"))
    }
    try context.write(had ? "session window cleared\n" : "there was no session window\n")
    return .success
  }
}
