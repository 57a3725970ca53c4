import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// The configuration file: defaults for long options, one `name = value` per line, `#` comments.
/// `$VPNSTAT_CONFIG`, else `/etc/vpnstat.conf` for root and `$XDG_CONFIG_HOME/vpnstat/config`
/// (default `~/.config/vpnstat/config`) otherwise. Options on the command line win.
enum ConfigFile {
  /// The largest file read. A larger one is refused, never cut: a cut file reads as a different
  /// one (a half line such as `session-length = 1` means one second).
  static let sizeLimit = 1 << 20

  static func path(_ context: CommandContext) -> String {
    if let explicit = context.environment("VPNSTAT_CONFIG"), !explicit.isEmpty { return explicit }
    if context.isRoot { return "/etc/vpnstat.conf" }
    if let config = context.environment("XDG_CONFIG_HOME"), config.hasPrefix("/") {
      return config + "/vpnstat/config"
    }
    return (context.environment("HOME") ?? "/") + "/.config/vpnstat/config"
  }

  /// Fills options of `parsed` that the command line left unset from the file at `path`, when
  /// it exists. `settable`: the options declared configurable. Errors name the file and line and
  /// exit 64, like a wrong argument.
  static func apply(to parsed: inout ParsedCommand, path: String, settable: Set<String>) throws {
    let commandPath = parsed.commandPath
    guard let bytes = try read(path, commandPath: commandPath) else { return }
    let shown = TerminalText.sanitize(path)
    var fromFile: [String: [(value: String, line: Int)]] = [:]
    for (index, rawLine) in lines(bytes).enumerated() {
      let number = index + 1
      // A comment is a line starting with '#', so that values may hold one.
      let trimmed = String(decoding: rawLine, as: UTF8.self).trimmingCharacters(in: " \t")
      if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
      guard let equals = trimmed.firstIndex(of: "=") else {
        throw UsageError("\(shown):\(number): expected 'name = value'", commandPath: commandPath)
      }
      let key = String(trimmed[..<equals]).trimmingCharacters(in: " \t")
      let value = String(trimmed[trimmed.index(after: equals)...]).trimmingCharacters(in: " \t")
      guard settable.contains(key) else {
        throw UsageError(
          "\(shown):\(number): unknown setting '\(TerminalText.sanitize(key))' (settable: \(settable.sorted().joined(separator: ", ")))",
          commandPath: commandPath)
      }
      fromFile[key, default: []].append((value, number))
    }
    for option in parsed.spec.options where parsed.values[option.long] == nil {
      guard let entries = fromFile[option.long] else { continue }
      for (value, number) in entries where !option.accepts(value) {
        throw UsageError(
          "\(shown):\(number): invalid value '\(TerminalText.sanitize(value))' for '\(option.long)'"
            + (option.expected.map { ": expected \($0)" } ?? ""),
          commandPath: commandPath)
      }
      let values = entries.map(\.value)
      parsed.values[option.long] = option.repeatable ? values : [values[values.count - 1]]
    }
  }

  /// The file's bytes; nil when there is none to read. A file that someone other than root and
  /// the user running vpnstat owns, or that anyone may write, is refused as sudo refuses such a
  /// sudoers file: whoever could write it could set the enforcer's action, lengths and database.
  static func read(_ path: String, commandPath: String) throws -> [UInt8]? {
    // Missing (the usual case) or unreadable: there is no configuration.
    guard let fd = try? FileDescriptor.openForReading(SystemPath(path)) else { return nil }
    defer { fd.close() }
    let shown = TerminalText.sanitize(path)
    let user = FileOwnership.currentUser
    if let ownership = try? fd.ownership() {
      if ownership.owner != 0 && ownership.owner != user {
        throw UsageError(
          "\(shown) is owned by uid \(ownership.owner), should be 0\(user == 0 ? "" : " or \(user)"); not reading it",
          commandPath: commandPath)
      }
      if ownership.isWorldWritable {
        throw UsageError(
          "\(shown) is world writable; not reading it (chmod o-w \(shown))", commandPath: commandPath)
      }
    }
    guard let bytes = try? SmallFile.read(fd, limit: sizeLimit + 1) else { return nil }
    if bytes.count > sizeLimit {
      throw UsageError(
        "\(shown) is larger than 1 MiB; not reading it (a configuration file is a few lines)",
        commandPath: commandPath)
    }
    return bytes
  }

  /// The lines of `bytes`, ended by LF, CRLF or CR alike.
  static func lines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
    var result: [ArraySlice<UInt8>] = []
    var start = 0
    var index = 0
    while index < bytes.count {
      let byte = bytes[index]
      guard byte == 0x0A || byte == 0x0D else {
        index += 1
        continue
      }
      result.append(bytes[start..<index])
      index += byte == 0x0D && index + 1 < bytes.count && bytes[index + 1] == 0x0A ? 2 : 1
      start = index
    }
    result.append(bytes[start...])
    return result
  }
}
