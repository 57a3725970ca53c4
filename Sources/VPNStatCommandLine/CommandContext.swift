import VPNStatEngine
import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// Everything a command may reach of the process: its streams, its environment, who it runs
/// as, the clock and the calendar. Subcommands go through it, never to the process directly,
/// so a test can run any of them in-process with its own streams, environment and clock.
package struct CommandContext: Sendable {
  package var standardInput: FileDescriptor
  package var standardOutput: FileDescriptor
  package var standardError: FileDescriptor
  /// The environment a test gives; nil: the process's own, read variable by variable, so that
  /// a command makes no table of an environment it reads three names of.
  package var environmentVariables: [String: String]?
  /// Root reads only the system's configuration file, never one in a home.
  package var isRoot: Bool
  package var clock: any TimeSource
  package var calendar: any LocalCalendar
  /// True for the process's own context, which exits after the command: what a one-shot command
  /// built is left to the exit (`leaveToExit`). A test's context runs many commands and frees each.
  package var leavesToExit = false

  package init(
    standardInput: FileDescriptor = .standardInput, standardOutput: FileDescriptor = .standardOutput,
    standardError: FileDescriptor = .standardError, environmentVariables: [String: String]?, isRoot: Bool,
    clock: any TimeSource, calendar: any LocalCalendar
  ) {
    self.standardInput = standardInput
    self.standardOutput = standardOutput
    self.standardError = standardError
    self.environmentVariables = environmentVariables
    self.isRoot = isRoot
    self.clock = clock
    self.calendar = calendar
  }

  /// The process as it is: its standard streams, environment, user, clocks and time zone.
  package static func process() -> CommandContext {
    var context = CommandContext(
      environmentVariables: nil, isRoot: CurrentProcess.isRoot, clock: SystemTimeSource(),
      calendar: SystemCalendar())
    context.leavesToExit = true
    return context
  }

  /// Leaves `value` to the process's exit rather than freeing it, where this is the process's
  /// own context (`leavesToExit`); a test's frees it as usual.
  func leaveToExit(_ value: Any) {
    if leavesToExit { CurrentProcess.leaveToExit(value) }
  }

  package func environment(_ name: String) -> String? {
    guard let environmentVariables else { return CurrentProcess.environment(name) }
    return environmentVariables[name]
  }

  /// Colour only on a terminal, and never under `NO_COLOR` (any non-empty value), `TERM=dumb`
  /// or `--no-color`.
  func colorEnabled(noColor: Bool) -> Bool {
    if noColor { return false }
    if let value = environment("NO_COLOR"), !value.isEmpty { return false }
    if environment("TERM") == "dumb" { return false }
    return standardOutput.isTerminal
  }

  /// Whether the locale says the terminal shows only ASCII: the first of `LC_ALL`, `LC_CTYPE` and
  /// `LANG` that is set and not empty decides, as for every C program, and only a UTF-8 one
  /// (`C.UTF-8`, `en_US.utf8`) gets `≈` and `·`; none at all is the C locale.
  var asciiOnly: Bool {
    let locale = ["LC_ALL", "LC_CTYPE", "LANG"].lazy.compactMap { environment($0) }.first { !$0.isEmpty } ?? "C"
    // Compared as ASCII bytes: String's substring search builds a [Character: Int] table, and
    // the first such table makes the runtime scan every conformance in the program (~160,000
    // instructions, a warning's whole cost).
    let lowered = locale.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }
    func has(_ word: StaticString) -> Bool {
      let needle = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
      guard lowered.count >= needle.count else { return false }
      return (0...(lowered.count - needle.count)).contains { lowered[$0..<$0 + needle.count].elementsEqual(needle) }
    }
    return !(has("utf-8") || has("utf8"))
  }

  /// Whether the terminal on stdout may be drawn on (the alternate screen, cursor movement):
  /// never for `TERM=dumb` or no `TERM`, which get plain lines.
  var canDrawScreen: Bool {
    guard let term = environment("TERM"), !term.isEmpty, term != "dumb" else { return false }
    return standardOutput.isTerminal
  }

  /// Text for people: in ASCII when the locale is not UTF-8 (`TerminalText.ascii`). Output for
  /// programs (JSON, metrics) is written as bytes, untouched.
  func write(_ text: String) throws {
    try standardOutput.writeAll(asciiOnly ? TerminalText.ascii(text) : text)
  }

  func write(_ bytes: [UInt8]) throws {
    try standardOutput.writeAll(bytes)
  }

  /// Writes a file a person named (`history --svg FILE`): `-`, `/dev/stdout` and `/dev/stderr`
  /// (and their `/dev/fd/N`, `/proc/self/fd/N`) are this command's own streams, written as they
  /// are (reopening one would truncate a file it was redirected to, or replace it); anything
  /// else by `AtomicFile.write(_:toNamed:)` — into a device or a FIFO, a regular file replaced.
  func writeFile(_ bytes: [UInt8], named path: String) throws {
    switch path {
    case "-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1": try standardOutput.writeAll(bytes)
    case "/dev/stderr", "/dev/fd/2", "/proc/self/fd/2": try standardError.writeAll(bytes)
    default: try AtomicFile.write(bytes, toNamed: path)
    }
  }

  /// Writes what `produce` hands out, piece by piece as it is made; the first write that fails
  /// stops the rest, and is thrown once `produce` returns.
  func write(pieces produce: ((UnsafeRawBufferPointer) -> Void) -> Void) throws {
    var failure: (any Error)?
    produce { piece in
      guard failure == nil else { return }
      do { try standardOutput.writeAll(piece) } catch { failure = error }
    }
    if let failure { throw failure }
  }

  /// A line on stderr, prefixed `vpnstat: `. Messages quote what they were given — paths,
  /// values, names — so every line is made safe for a terminal here, the one way out: a path
  /// holding ESC must not repaint the screen of whoever reads the error.
  func warn(_ text: String) {
    var message = "vpnstat: "
    for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      if i > 0 { message += "\n" }
      message += TerminalText.sanitize(String(line))
    }
    message += "\n"
    try? standardError.writeAll(asciiOnly ? TerminalText.ascii(message) : message)
  }

  /// Opens the database at `location` the way every command does (the context's calendar).
  func openStore(
    _ location: StoreLocation, intent: Store.Intent, busyTimeoutMilliseconds: Int32 = 2000,
    waitingAtMost: Duration? = nil
  ) throws -> Store? {
    try Store.open(
      location, intent: intent, busyTimeoutMilliseconds: busyTimeoutMilliseconds, waitingAtMost: waitingAtMost,
      calendar: calendar)
  }
}

/// One subcommand: its declared options and the code that turns them into library calls.
protocol Subcommand: SendableMetatype {
  static var spec: CommandSpec { get }
  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus
}

/// The lines a long-running command logs go to stderr, through the context.
struct StandardErrorLog: EventLog {
  let context: CommandContext
  func event(_ entry: LoggedEvent) { context.warn(entry.text) }
}
