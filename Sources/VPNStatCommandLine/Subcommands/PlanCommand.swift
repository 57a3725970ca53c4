import VPNStatEngine
import VPNStatModel
import VPNStatRender

/// `vpnstat plan [free|premium] [--data-cap SIZE --per PERIOD]`: show or set the plan and the
/// data cap. Premium has no window, and switching to it clears the window so that a later
/// downgrade starts clean. The cap is a second, separate limit: with the free plan's window, or
/// alone with premium.
enum PlanCommand: Subcommand {
  /// `--data-cap 2GiB`, or `none` to remove the cap.
  enum CapSetting: Sendable, Equatable {
    case none
    case bytes(UInt64)
  }

  static let dataCap = Option<CapSetting>(
    "data-cap", valueName: "size",
    help:
      "Cap the tunnel class's traffic (received and sent together) per period, e.g. 2GiB; none removes the cap. Kept until changed.",
    expected: sizeExpectation + ", or none",
    parse: { $0.trimmingASCIIWhitespace == "none" ? CapSetting.none : parseSize($0).map(CapSetting.bytes) })

  static let spec = CommandSpec(
    name: "plan",
    abstract:
      "Show or set the plan — free (15 min sessions, 45 min pauses) or premium (no session window) — and the data cap.",
    discussion: """
      The data cap is a second limit, with the free plan's window or alone (with premium): when the
      tunnel class's traffic in the period reaches it, the enforcer disconnects (stop reason
      data-cap) and the gate refuses until the period rolls over.
      """,
    options: [dataCap.spec, CommonOptions.per.spec, CommonOptions.monthStartDay.spec, CommonOptions.db.spec],
    positionals: [
      PositionalSpec(
        "plan", help: "free or premium; omitted: show the plan (or only set the cap).", optional: true,
        values: .oneOf(Plan.allCases.map(\.rawValue)))
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let location = CommandServices.storeLocation(parsed, context)
    if parsed.has(CommonOptions.per) && !parsed.has(dataCap) {
      throw UsageError("--per sets the period of a data cap: give --data-cap too", commandPath: parsed.commandPath)
    }
    let plan = try parsed.positionals.first.map { word in
      guard let plan = Plan(rawValue: word) else {
        throw UsageError(
          "invalid plan '\(TerminalText.sanitize(word))': expected free or premium", commandPath: parsed.commandPath)
      }
      return plan
    }
    guard plan != nil || parsed.has(dataCap) else {
      let record = try PlanChange.current(at: location, calendar: context.calendar)
      try context.write("\(record.plan.rawValue)\n" + capLine(record.dataCap))
      return .success
    }
    let cap: PlanChange.CapChange? =
      switch parsed[dataCap] {
      case .bytes(let limit)?: .set(DataCap(limitBytes: limit, period: CommandServices.period(parsed)))
      case .none?: .remove
      case nil: nil
      }
    guard
      let outcome = try PlanChange(plan: plan, cap: cap).apply(
        at: location, calendar: context.calendar, clock: context.clock, warn: context.warn)
    else { return .unavailable }
    try context.write(
      "plan: \(outcome.record.plan.rawValue)\(outcome.cleared ? " (session window cleared)" : "")\n"
        + capLine(outcome.record.dataCap))
    return .success
  }

  /// `data cap: 2.00 GiB per month from the 15th`, or nothing without a cap.
  static func capLine(_ cap: DataCap?) -> String {
    guard let cap else { return "" }
    return "data cap: \(Units.limit(cap.limitBytes)) (\(cap.limitBytes) bytes) per \(cap.period.label)\n"
  }
}
