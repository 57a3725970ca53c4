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

  /// A line on stderr, prefixed `vpnstat: `.
  func warn(_ text: String) {
    try? standardError.writeAll("vpnstat: " + text + "\n")
  }
}

/// One subcommand: its declared options and the code that turns them into library calls.
protocol Subcommand {
  static var spec: CommandSpec { get }
  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus
}
