import VPNStatCore

/// The configuration file: defaults for long options, one `name = value` per line, `#` comments.
/// `$VPNSTAT_CONFIG`, else `/etc/vpnstat.conf` for root and `$XDG_CONFIG_HOME/vpnstat/config`
/// (default `~/.config/vpnstat/config`) otherwise. Options on the command line win.
enum ConfigFile {
  /// The options a configuration file may set.
  static let settable: Set<String> = [
    "db", "source", "max-rate", "class", "session-length", "pause-length", "exec-timeout",
  ]

  static func path(_ context: CommandContext, isRoot: Bool) -> String {
    if let explicit = context.environment("VPNSTAT_CONFIG"), !explicit.isEmpty { return explicit }
    if isRoot { return "/etc/vpnstat.conf" }
    if let config = context.environment("XDG_CONFIG_HOME"), config.hasPrefix("/") {
      return config + "/vpnstat/config"
    }
    return (context.environment("HOME") ?? "/") + "/.config/vpnstat/config"
  }

  /// Fills options of `parsed` that the command line left unset from the file at `path`, when
  /// it exists. Errors name the file and line and exit 64, like a wrong argument.
  static func apply(to parsed: inout ParsedCommand, path: String) throws {
    guard let bytes = try? SmallFile.read(SystemPath(path), limit: 1 << 20) else { return }
    var fromFile: [String: [String]] = [:]
    for (number, rawLine) in String(decoding: bytes, as: UTF8.self).split(
      separator: "\n", omittingEmptySubsequences: false
    ).enumerated() {
      // A comment is a line starting with '#', so that values may hold one.
      let trimmed = String(rawLine).trimmingCharacters(in: " \t\r")
      if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
      guard let equals = trimmed.firstIndex(of: "=") else {
        throw UsageError("\(path):\(number + 1): expected 'name = value'", commandPath: parsed.commandPath)
      }
      let key = String(trimmed[..<equals]).trimmingCharacters(in: " \t")
      let value = String(trimmed[trimmed.index(after: equals)...]).trimmingCharacters(in: " \t")
      guard settable.contains(key) else {
        throw UsageError(
          "\(path):\(number + 1): unknown setting '\(TerminalText.sanitize(key))' (settable: \(settable.sorted().joined(separator: ", ")))",
          commandPath: parsed.commandPath)
      }
      fromFile[key, default: []].append(value)
    }
    for option in parsed.spec.options where parsed.values[option.long] == nil {
      guard let values = fromFile[option.long] else { continue }
      for value in values where !option.accepts(value) {
        throw UsageError(
          "\(path): invalid value '\(TerminalText.sanitize(value))' for '\(option.long)'",
          commandPath: parsed.commandPath)
      }
      parsed.values[option.long] = option.repeatable ? values : [values[values.count - 1]]
    }
  }
}
