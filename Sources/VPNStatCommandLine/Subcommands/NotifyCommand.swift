import VPNStatDesktop
import VPNStatEngine
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat notify`: the desktop agent — the session's end ahead, the stop, refusals and the
/// data cap as desktop notifications (`NotifyAgent`, `NotifyLoop`).
enum NotifyCommand: Subcommand {
  static let warnBefore = Option<[Duration]>(
    "warn-before", valueName: "durations", configurable: true,
    help: "When to warn before a free session ends, comma-separated (default 10m,2m,30s).",
    expected: "durations separated by commas, e.g. 2m,30s", parse: parseDurations)
  static let capWarning = Option<Int>(
    "cap-warning", valueName: "percent", configurable: true,
    help: "The share of the data cap that gets a notice before the cap itself (1 to 99, default 80).",
    expected: "a percentage from 1 to 99",
    parse: { parseCount($0.hasSuffix("%") ? String($0.dropLast()) : $0, in: 1...99) })

  static let spec = CommandSpec(
    name: "notify",
    abstract:
      "Desktop notifications of the session's end, the stop, refusals and the data cap (runs in a desktop session).",
    discussion: """
      A per-user agent: it reads the database as every reader does (read-only) and sends
      notifications to the desktop's notification server on the user's session bus, through
      vpnstat's own small D-Bus client. It wakes only when the database changes or a warning is
      due. Without a session bus or a notification server it exits 69.
      """,
    options: [warnBefore.spec, capWarning.spec, CommonOptions.db.spec] + CommonOptions.figures)

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let settings = NoticeSettings(
      warnings: parsed[warnBefore] ?? NoticeSettings.standard.warnings,
      capWarningPercent: parsed[capWarning] ?? NoticeSettings.standard.capWarningPercent)
    // What the bus's address is found from, and nothing else of the environment.
    var busEnvironment: [String: String] = [:]
    for name in ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"] { busEnvironment[name] = context.environment(name) }
    let notifications = try FreedesktopNotifications.connect(environment: busEnvironment)
    // One agent per user session, however it was started (the autostart entry, the user unit, a
    // terminal): a second says who runs and leaves.
    var lock: ProcessLock?
    if let runtime = context.environment("XDG_RUNTIME_DIR"), runtime.hasPrefix("/") {
      do {
        lock = try ProcessLock(path: runtime + "/vpnstat-notify.lock", role: "vpnstat notify")
      } catch ProcessLock.Failure.held(_, let holder) {
        context.warn("already running: \(holder)")
        return .success
      }
    }
    defer { withExtendedLifetime(lock) {} }
    let location = CommandServices.storeLocation(parsed, context)
    let changes: FileChanges
    do {
      changes = try location.changes()
    } catch {
      throw GeneralFailure(
        .unavailable,
        "cannot follow \(location.directory) (\(error)): no vpnstat database there yet; vpnstat record or enforce creates it"
      )
    }
    let signals = try SignalChannel.stopping()
    let alarm = try WallClockDeadline()
    var agent = NotifyAgent(
      notifications: notifications, settings: settings,
      options: DisplayOptions(
        bits: parsed.has(CommonOptions.bits), units: parsed[CommonOptions.units], calendar: context.calendar))
    context.warn("notifying through \(notifications.server) of the session in \(location.path)")
    try NotifyLoop.run(
      &agent, location: location, clock: context.clock, calendar: context.calendar, changes: changes, alarm: alarm,
      signals: signals, warn: context.warn)
    return .success
  }

  /// `2m,30s`: durations separated by commas, each above zero.
  static func parseDurations(_ text: String) -> [Duration]? {
    var durations: [Duration] = []
    for part in text.split(separator: ",", omittingEmptySubsequences: false) {
      guard let duration = parseDuration(String(part)), duration > .zero else { return nil }
      durations.append(duration)
    }
    return durations.isEmpty ? nil : durations
  }
}
