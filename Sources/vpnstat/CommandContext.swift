import VPNStatCore

#if canImport(Glibc)
  import Glibc
#endif

/// What a subcommand may touch besides the library: its output streams and the environment.
/// Subcommands write through it, never to the process directly.
struct CommandContext {
  var standardOutput = FileDescriptor.standardOutput
  var standardError = FileDescriptor.standardError

  func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
  }

  /// Colour only on a terminal, and never under `NO_COLOR` (any non-empty value) or `--no-color`.
  func colorEnabled(_ parsed: ParsedCommand) -> Bool {
    if parsed.has("no-color") { return false }
    if let noColor = environment("NO_COLOR"), !noColor.isEmpty { return false }
    if environment("TERM") == "dumb" { return false }
    return standardOutput.isTerminal
  }

  func write(_ text: String) throws {
    try standardOutput.writeAll(text)
  }

  func write(_ bytes: [UInt8]) throws {
    try standardOutput.writeAll(bytes)
  }

  /// A line on stderr, prefixed `vpnstat: `. Messages quote what they were given — paths,
  /// values, names — so every line is made safe for a terminal here, the one way out: a path
  /// holding ESC must not repaint the screen of whoever reads the error.
  func warn(_ text: String) {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { TerminalText.sanitize(String($0)) }
    try? standardError.writeAll("vpnstat: " + lines.joined(separator: "\n") + "\n")
  }
}

/// One subcommand: its declared options and the code that turns them into library calls.
protocol Subcommand {
  static var spec: CommandSpec { get }
  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus
}
