import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// A wrong command line: what was wrong, with the offending word, and a suggestion where one is
/// close. Exits 64 (EX_USAGE).
package struct UsageError: Error, Equatable, Sendable, CustomStringConvertible {
  package var message: String
  /// The command path the error belongs to (`vpnstat session check`), for the help hint.
  package var commandPath: String
  package init(_ message: String, commandPath: String = "vpnstat") {
    self.message = message
    self.commandPath = commandPath
  }
  package var description: String { message }
}

/// Option values by long name: a handful of entries, in an array.
///
/// Not a `[String: [String]]`: the first dictionary a process makes has the Swift runtime scan
/// every protocol conformance in the program for `String: Hashable` — some 180,000 instructions,
/// a fifth of all `status --json` runs at four interfaces.
package struct OptionValues: Sendable, Sequence, ExpressibleByDictionaryLiteral {
  /// One option's values. A struct, not a `(key:value:)` tuple: a tuple's type, and its array's,
  /// is made by the runtime at its first use, some 16,000 instructions of every command's.
  package struct Entry: Sendable {
    package var key: String
    package var value: [String]
  }

  private var entries: [Entry] = []

  package init(dictionaryLiteral elements: (String, [String])...) {
    for (key, value) in elements { self[key] = value }
  }

  package subscript(long: String) -> [String]? {
    get { entries.first { $0.key == long }?.value }
    set {
      let at = entries.firstIndex { $0.key == long }
      switch (at, newValue) {
      case (let at?, let value?): entries[at].value = value
      case (let at?, nil): entries.remove(at: at)
      case (nil, let value?): entries.append(Entry(key: long, value: value))
      case (nil, nil): break
      }
    }
  }

  package subscript(long: String, default empty: [String]) -> [String] {
    get { self[long] ?? empty }
    set { self[long] = newValue }
  }

  package var isEmpty: Bool { entries.isEmpty }

  package func makeIterator() -> IndexingIterator<[Entry]> { entries.makeIterator() }
}

/// The result of parsing: which command, which options with which values, which positionals.
package struct ParsedCommand: Sendable {
  /// The command names from the top, e.g. `["vpnstat", "session", "check"]`.
  package var path: [String]
  package var spec: CommandSpec
  /// Values by option long name, in command-line order; flags map to `[""]` per occurrence.
  package var values: OptionValues
  package var positionals: [String]
  /// The exact bytes of a remainder option's words (`--exec`), by long name: a command's
  /// arguments are passed on as given, also when they are not UTF-8.
  package var remainderBytes: [String: [[UInt8]]] = [:]
  package var helpRequested = false
  package var versionRequested = false
  /// How many names of `path` were typed: `vpnstat --json` runs `vpnstat status` but typed only
  /// `vpnstat`, and the help an error points to is that of what was typed.
  package var typedCount: Int?

  /// The command as typed, for messages (`vpnstat`, not the `vpnstat status` it ran).
  /// (Appended in a loop: the first `joined` of a slice of Strings costs the runtime more
  /// type set-up than parsing the whole command line.)
  package var commandPath: String {
    var text = ""
    for position in 0..<min(typedCount ?? path.count, path.count) {
      if position > 0 { text += " " }
      text += path[position]
    }
    return text
  }

  /// Whether the option with this long name was given (for the parser and the config file;
  /// commands ask with the typed `Option` or `Flag`).
  func has(_ long: String) -> Bool { values[long] != nil }
  func value(_ long: String) -> String? { values[long]?.last }
  func all(_ long: String) -> [String] { values[long] ?? [] }
}

/// Parses the arguments as the kernel passed them (without the program name) against `root`.
/// Options and positionals are read as text (`argumentText`); a remainder option keeps its
/// words' bytes too, in `remainderBytes`.
package func parseCommandLine(rawArguments: [[UInt8]], root: CommandSpec) throws -> ParsedCommand {
  try parseCommandLine(rawArguments.map(argumentText), raw: rawArguments, root: root)
}

/// Parses `arguments` (without the program name) against `root`.
package func parseCommandLine(_ arguments: [String], root: CommandSpec) throws -> ParsedCommand {
  try parseCommandLine(arguments, raw: arguments.map { Array($0.utf8) }, root: root)
}

/// `arguments[i]` is the text of the bytes `raw[i]`.
private func parseCommandLine(_ arguments: [String], raw: [[UInt8]], root: CommandSpec) throws -> ParsedCommand {
  var remaining = arguments[...]
  var parsed: ParsedCommand
  switch try selectCommand(&remaining, root: root) {
  case .help(let request): return request
  case .command(let selected): parsed = selected
  }
  try readOptions(&remaining, raw: raw, into: &parsed)
  if parsed.helpRequested || parsed.versionRequested { return parsed }
  let commandPath = parsed.commandPath
  try checkPositionals(parsed, path: commandPath)
  try checkExclusions(parsed, path: commandPath)
  return parsed
}

/// What the words before the options name: a command to run (nothing read yet), or `help`'s.
private enum Selection {
  case command(ParsedCommand)
  case help(ParsedCommand)
}

/// Descends through subcommand names; options may not come before the subcommand name except
/// -h/--help and --version (swift-argument-parser does the same).
private func selectCommand(_ remaining: inout ArraySlice<String>, root: CommandSpec) throws -> Selection {
  var spec = root
  var path = [root.name]
  var typedCount = 1
  while !spec.subcommands.isEmpty {
    let defaultSub = spec.defaultSubcommand.flatMap { name in spec.subcommands.first { $0.name == name } }
    guard let word = remaining.first else {
      if let sub = defaultSub {
        spec = sub
        path.append(sub.name)
        continue
      }
      break
    }
    if let sub = spec.subcommands.first(where: { $0.name == word }) {
      spec = sub
      path.append(sub.name)
      typedCount = path.count
      remaining = remaining.dropFirst()
      continue
    }
    if word == "help" { return .help(try helpRequest(remaining.dropFirst(), in: spec, path: path)) }
    if word.hasPrefix("-") {
      if word == "-h" || word == "--help" || word == "--version" { break }
      if let sub = defaultSub {
        spec = sub
        path.append(sub.name)
        continue
      }
      break
    }
    throw unknownSubcommand(word, in: spec, path: path)
  }
  var parsed = ParsedCommand(path: path, spec: spec, values: [:], positionals: [])
  parsed.typedCount = typedCount
  return .command(parsed)
}

/// `vpnstat help session check`: the help of the command `names` name under `spec`.
private func helpRequest(_ names: ArraySlice<String>, in spec: CommandSpec, path: [String]) throws -> ParsedCommand {
  var target = spec
  var targetPath = path
  for name in names {
    guard let sub = target.subcommands.first(where: { $0.name == name }) else {
      throw unknownSubcommand(name, in: target, path: targetPath)
    }
    target = sub
    targetPath.append(name)
  }
  var parsed = ParsedCommand(path: targetPath, spec: target, values: [:], positionals: [])
  parsed.helpRequested = true
  return parsed
}

/// Reads the options and positionals after the command's name into `parsed`.
private func readOptions(_ remaining: inout ArraySlice<String>, raw: [[UInt8]], into parsed: inout ParsedCommand)
  throws
{
  let commandPath = parsed.commandPath
  var optionsEnded = false
  while let wordIndex = remaining.indices.first {
    let word = remaining.removeFirst()
    if optionsEnded || word == "-" || !word.hasPrefix("-") {
      parsed.positionals.append(word)
      continue
    }
    if word == "--" {
      optionsEnded = true
      continue
    }
    if word == "-h" || word == "--help" {
      parsed.helpRequested = true
      continue
    }
    if word == "--version", parsed.path.count == 1 {
      parsed.versionRequested = true
      continue
    }
    guard let named = try nameOption(word, bytes: raw[wordIndex], into: &parsed) else { continue }
    try readValue(of: named, &remaining, raw: raw, into: &parsed, path: commandPath)
  }
}

/// An option as a word names it, with the value the word carries (`--name=value`, `-nvalue`).
private struct NamedOption {
  var option: OptionSpec
  var inlineValue: String?
  /// The inline value's bytes: what follows `--name=` or `-n` in the word as passed (the name
  /// is ASCII, so it is the same length in the text and in the bytes).
  var inlineBytes: [UInt8] = []
}

/// The option `word` names; nil when the word was a cluster of flags (`-ab`), recorded here.
private func nameOption(_ word: String, bytes: [UInt8], into parsed: inout ParsedCommand) throws -> NamedOption? {
  let spec = parsed.spec
  let commandPath = parsed.commandPath
  if word.hasPrefix("--") {
    let body = word.dropFirst(2)
    let name = body.firstIndex(of: "=").map { body[..<$0] } ?? body
    guard let found = spec.options.first(where: { $0.long == name }) else {
      throw unknownOption("--" + name, in: spec, path: commandPath)
    }
    guard let equals = body.firstIndex(of: "=") else { return NamedOption(option: found) }
    return NamedOption(
      option: found, inlineValue: String(body[body.index(after: equals)...]),
      inlineBytes: Array(bytes.drop { $0 != 0x3D }.dropFirst()))
  }
  // -i wg0, -iwg0; a cluster of flags -ab.
  let letters = Array(word.dropFirst())
  guard let first = letters.first,
    let found = spec.options.first(where: { $0.short == first })
  else {
    throw unknownOption(word, in: spec, path: commandPath)
  }
  guard letters.count > 1 else { return NamedOption(option: found) }
  if found.arity == .flag {
    // Expand the cluster: every letter must be a flag.
    for letter in letters {
      guard let flag = spec.options.first(where: { $0.short == letter }), flag.arity == .flag
      else {
        throw unknownOption("-" + String(letter), in: spec, path: commandPath)
      }
      try record(flag, "", into: &parsed, path: commandPath)
    }
    return nil
  }
  return NamedOption(option: found, inlineValue: String(letters.dropFirst()), inlineBytes: Array(bytes.dropFirst(2)))
}

/// Reads the value `named` takes, as its arity says, from the word or the words after it.
private func readValue(
  of named: NamedOption, _ remaining: inout ArraySlice<String>, raw: [[UInt8]], into parsed: inout ParsedCommand,
  path commandPath: String
) throws {
  let option = named.option
  let inlineValue = named.inlineValue
  switch option.arity {
  case .flag:
    if inlineValue != nil {
      throw UsageError("'--\(option.long)' takes no value", commandPath: commandPath)
    }
    try record(option, "", into: &parsed, path: commandPath)
  case .value:
    let value: String
    if let inlineValue {
      value = inlineValue
    } else if let next = remaining.first {
      value = next
      remaining = remaining.dropFirst()
    } else {
      throw UsageError("missing value for '\(option.display)'", commandPath: commandPath)
    }
    guard option.accepts(value) else { throw option.invalidValue(value, commandPath: commandPath) }
    try record(option, value, into: &parsed, path: commandPath)
  case .optionalValue:
    try readOptionalValue(of: option, inline: inlineValue, &remaining, into: &parsed, path: commandPath)
  case .remainder:
    var rest = Array(remaining)
    var restBytes = remaining.indices.map { raw[$0] }
    remaining = []
    if let inlineValue {
      rest.insert(inlineValue, at: 0)
      restBytes.insert(named.inlineBytes, at: 0)
    }
    if rest.first == "--" {
      rest.removeFirst()
      restBytes.removeFirst()
    }
    guard !rest.isEmpty else {
      throw UsageError("missing value for '\(option.display)'", commandPath: commandPath)
    }
    parsed.values[option.long] = rest
    parsed.remainderBytes[option.long] = restBytes
  }
}

/// `--rate [2s]`: the value inline, or the next word when it fits.
private func readOptionalValue(
  of option: OptionSpec, inline inlineValue: String?, _ remaining: inout ArraySlice<String>,
  into parsed: inout ParsedCommand, path commandPath: String
) throws {
  if let inlineValue {
    guard option.accepts(inlineValue) else { throw option.invalidValue(inlineValue, commandPath: commandPath) }
    try record(option, inlineValue, into: &parsed, path: commandPath)
  } else if let next = remaining.first, !next.hasPrefix("-") {
    // A word after the option is its value when it fits; when it does not and the command
    // takes no positional, it can only have been meant as the value (`--hours 0`), so that
    // is the error to report rather than an unexpected argument.
    if option.accepts(next) {
      remaining = remaining.dropFirst()
      try record(option, next, into: &parsed, path: commandPath)
    } else if parsed.spec.positionals.isEmpty {
      throw option.invalidValue(next, commandPath: commandPath)
    } else {
      try record(option, "", into: &parsed, path: commandPath)
    }
  } else {
    try record(option, "", into: &parsed, path: commandPath)
  }
}

/// The command's declared exclusions, in order: the first broken one is the error.
private func checkExclusions(_ parsed: ParsedCommand, path: String) throws {
  if let broken = parsed.spec.exclusions.first(where: { $0.isBroken(by: parsed) }) {
    throw UsageError(broken.message, commandPath: path)
  }
}

private func record(
  _ option: OptionSpec, _ value: String, into parsed: inout ParsedCommand, path: String
) throws {
  if !option.repeatable, parsed.values[option.long] != nil, option.arity != .flag {
    throw UsageError("'--\(option.long)' given more than once", commandPath: path)
  }
  parsed.values[option.long, default: []].append(value)
}

private func checkPositionals(_ parsed: ParsedCommand, path: String) throws {
  let specs = parsed.spec.positionals
  let required = specs.filter { !$0.optional }.count
  if parsed.positionals.count < required {
    let missing = specs.filter { !$0.optional }[parsed.positionals.count]
    throw UsageError("missing argument <\(missing.name)>", commandPath: path)
  }
  if specs.last?.repeating != true, parsed.positionals.count > specs.count {
    let extra = parsed.positionals[specs.count]
    var message = "unexpected argument '\(TerminalText.sanitize(extra))'"
    if let close = closest(extra, among: parsed.spec.subcommands.map(\.name)) {
      message += "; did you mean '\(close)'?"
    }
    throw UsageError(message, commandPath: path)
  }
}

private func unknownOption(_ word: String, in spec: CommandSpec, path: String) -> UsageError {
  var message = "unknown option '\(TerminalText.sanitize(word))'"
  let candidates = spec.options.map { "--" + $0.long } + ["--help"]
  if let close = closest(word, among: candidates) { message += "; did you mean '\(close)'?" }
  return UsageError(message, commandPath: path)
}

private func unknownSubcommand(_ word: String, in spec: CommandSpec, path: [String]) -> UsageError {
  var message = "unknown command '\(TerminalText.sanitize(word))'"
  if let close = closest(word, among: spec.subcommands.map(\.name)) {
    message += "; did you mean '\(close)'?"
  } else {
    message += "; commands: " + spec.subcommands.map(\.name).joined(separator: ", ")
  }
  return UsageError(message, commandPath: path.joined(separator: " "))
}

/// The candidate within a small edit distance of `word`, if one is clearly closest.
func closest(_ word: String, among candidates: [String]) -> String? {
  let target = Array(word.lowercased().utf8)
  var best: (String, Int)?
  for candidate in candidates {
    let distance = editDistance(target, Array(candidate.lowercased().utf8))
    let limit = max(1, min(3, candidate.utf8.count / 3))
    guard distance <= limit else { continue }
    if best == nil || distance < best!.1 { best = (candidate, distance) }
  }
  if best == nil {
    // A prefix that identifies one candidate: `--inter` → `--interval`.
    let matches = candidates.filter { $0.hasPrefix(word) && word.count >= 3 }
    if matches.count == 1 { return matches[0] }
  }
  return best?.0
}

func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
  if a.isEmpty { return b.count }
  if b.isEmpty { return a.count }
  var previous = Array(0...b.count)
  var current = [Int](repeating: 0, count: b.count + 1)
  for i in 1...a.count {
    current[0] = i
    for j in 1...b.count {
      let cost = a[i - 1] == b[j - 1] ? 0 : 1
      current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
    }
    swap(&previous, &current)
  }
  return previous[b.count]
}
