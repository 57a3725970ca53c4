import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// The configuration: defaults for long options, one `name = value` per line, `#` comments.
/// `/etc/vpnstat.conf` for everyone, then, for users other than root, their own file on top
/// (`$XDG_CONFIG_HOME/vpnstat/config`, default `~/.config/vpnstat/config`): a setting there
/// replaces the system's (every line of it, for `class`). Root reads only the system's file, so
/// the daemons the units start as root never depend on someone's home. `$VPNSTAT_CONFIG` names
/// the one file to read instead of both. Options on the command line win.
enum ConfigFile {
  /// The largest file read. A larger one is refused, never cut: a cut file reads as a different
  /// one (a half line such as `session-length = 1` means one second).
  static let sizeLimit = 1 << 20

  /// The system's file, read by every user.
  static let systemPath = "/etc/vpnstat.conf"

  /// The files read, lowest layer first.
  static func paths(_ context: CommandContext) -> [String] {
    if let explicit = context.environment("VPNSTAT_CONFIG"), !explicit.isEmpty { return [explicit] }
    if context.isRoot { return [systemPath] }
    if let config = context.environment("XDG_CONFIG_HOME"), config.hasPrefix("/") {
      return [systemPath, config + "/vpnstat/config"]
    }
    return [systemPath, (context.environment("HOME") ?? "/") + "/.config/vpnstat/config"]
  }

  /// One setting's lines, with where each came from (for the error about a bad value).
  typealias Setting = [(value: String, file: String, line: Int)]

  /// Fills options of `parsed` that the command line left unset from the files at `paths` that
  /// exist, a later file's setting replacing an earlier one's. `settable`: the options declared
  /// configurable, asked for only when a file exists (deriving them builds every command's
  /// spec). Errors name the file and line and exit 64, like a wrong argument.
  static func apply(
    to parsed: inout ParsedCommand, paths: [String], settable: @autoclosure () -> Set<String>
  ) throws {
    let commandPath = parsed.commandPath
    var settings: [String: Setting] = [:]
    var known: Set<String>?
    for path in paths {
      guard let bytes = try read(path, commandPath: commandPath) else { continue }
      let settable = known ?? settable()
      known = settable
      settings.merge(try self.settings(bytes, path: path, settable: settable, commandPath: commandPath)) { $1 }
    }
    if settings.isEmpty { return }
    for option in parsed.spec.options where parsed.values[option.long] == nil {
      guard let entries = settings[option.long] else { continue }
      for entry in entries where !option.acceptsSetting(entry.value) {
        throw UsageError(
          "\(TerminalText.sanitize(entry.file)):\(entry.line): invalid value '\(TerminalText.sanitize(entry.value))' for '\(option.long)'"
            + (option.expected.map { ": expected \($0)" } ?? ""),
          commandPath: commandPath)
      }
      let values = entries.map(\.value)
      if option.arity == .flag {
        // `bits = yes` sets the flag, `bits = no` leaves it unset.
        if let last = values.last, OptionSpec.settingIsTrue(last) { parsed.values[option.long] = [""] }
        continue
      }
      parsed.values[option.long] = option.repeatable ? values : [values[values.count - 1]]
    }
  }

  /// The settings of one file, by name.
  static func settings(_ bytes: [UInt8], path: String, settable: Set<String>, commandPath: String) throws -> [String:
    Setting]
  {
    let shown = TerminalText.sanitize(path)
    var found: [String: Setting] = [:]
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
      found[key, default: []].append((value, path, number))
    }
    return found
  }

  /// The file's bytes; nil when there is none to read. A file that someone other than root and
  /// the user running vpnstat owns, that others may write (by its mode or an ACL), or that lies
  /// in a directory others may write (`DirectoryTrust.fileProblem`, sudo's rule for sudoers and
  /// ACLs besides) is refused with 77: whoever could write it could set the enforcer's action,
  /// lengths and database. So is anything but a regular file, at once: a FIFO would hold every
  /// command, root's daemons included, until someone wrote to it.
  static func read(_ path: String, commandPath: String) throws -> [UInt8]? {
    let fd: FileDescriptor
    do {
      fd = try FileDescriptor.openRegularFile(SystemPath(path))
    } catch let error as NotARegularFile {
      throw UntrustedFile(role: "configuration file", path: path, problem: error.description)
    } catch {
      // Missing (the usual case) or unreadable: there is no configuration.
      return nil
    }
    defer { fd.close() }
    let shown = TerminalText.sanitize(path)
    if let problem = DirectoryTrust.fileProblem(path) {
      throw UntrustedFile(role: "configuration file", path: path, problem: problem)
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
