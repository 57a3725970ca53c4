import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// The declared shape of one command: its options, positional arguments and subcommands.
/// Follows swift-argument-parser's conventions: `--name value` and `--name=value`, `-n value`,
/// `--` ends options, `-h/--help` everywhere, `--version` at the top.
package struct CommandSpec: Sendable {
  package var name: String
  package var abstract: String
  package var usage: String?
  package var discussion: String?
  package var options: [OptionSpec]
  package var positionals: [PositionalSpec]
  package var subcommands: [CommandSpec]
  /// The subcommand run when none is named (`vpnstat` → `status`, `session` → `status`).
  package var defaultSubcommand: String?
  /// Options that may not be given together, in the order they are checked.
  package var exclusions: [Exclusion]

  package init(
    name: String, abstract: String, usage: String? = nil, discussion: String? = nil,
    options: [OptionSpec] = [], positionals: [PositionalSpec] = [], subcommands: [CommandSpec] = [],
    defaultSubcommand: String? = nil, exclusions: [Exclusion] = []
  ) {
    self.name = name
    self.abstract = abstract
    self.usage = usage
    self.discussion = discussion
    self.options = options
    self.positionals = positionals
    self.subcommands = subcommands
    self.defaultSubcommand = defaultSubcommand
    self.exclusions = exclusions
  }
}

/// Options a command refuses together, declared with its spec and checked by the parser, once,
/// after the command line is read: the usage error (64) says `message`.
package struct Exclusion: Sendable {
  /// One option as an exclusion counts it: given at all, or only given with a value of its own
  /// (`--days 5`, not `--days` alone, which means its default).
  package struct Member: Sendable {
    package var long: String
    package var onlyWithValue: Bool
    package init(_ option: OptionSpec, onlyWithValue: Bool = false) {
      self.long = option.long
      self.onlyWithValue = onlyWithValue
    }
  }

  /// Broken when members of more than one group are given.
  package var groups: [[Member]]
  package var message: String

  /// At most one of `options`.
  package static func atMostOne(of options: [OptionSpec], _ message: String) -> Exclusion {
    Exclusion(groups: options.map { [Member($0)] }, message: message)
  }

  /// Nothing of `first` with anything of `second`.
  package static func notBoth(_ first: [Member], _ second: [Member], _ message: String) -> Exclusion {
    Exclusion(groups: [first, second], message: message)
  }

  /// Nothing of `first` with anything of `second`.
  package static func notBoth(_ first: [OptionSpec], _ second: [OptionSpec], _ message: String) -> Exclusion {
    notBoth(first.map { Member($0) }, second.map { Member($0) }, message)
  }

  /// Whether `parsed` gives members of more than one group.
  func isBroken(by parsed: ParsedCommand) -> Bool {
    let given = groups.filter { group in
      group.contains { member in
        guard let value = parsed.value(member.long) else { return false }
        return !member.onlyWithValue || !value.isEmpty
      }
    }
    return given.count > 1
  }
}

/// What a value can be, declared once with its option or positional: a fixed set is what the
/// parser accepts and what help lists, and every kind is what shell completion offers.
package enum ValueSet: Sendable, Equatable {
  /// Whatever the option's parser accepts (a duration, a rate, a count): nothing to offer.
  case free
  /// One of these words (`--source netlink`).
  case oneOf([String])
  /// One or more of these words, comma-separated (`--only tunnel,wifi`).
  case listOf([String])
  /// An interface name (completion lists the interfaces there are).
  case interface
  case file
  case directory
  /// A program and its arguments (`--exec`).
  case command

  /// The words of a fixed set; empty for the others.
  package var words: [String] {
    switch self {
    case .oneOf(let words), .listOf(let words): words
    default: []
    }
  }

  /// `netlink, sysfs or getifaddrs`: the words as a sentence says them.
  static func alternatives(_ words: [String]) -> String {
    guard words.count > 1 else { return words.first ?? "" }
    // Appended in a loop: the first `joined` of a slice of Strings costs the runtime more type
    // set-up than every option of a command, and each command's spec says its alternatives.
    var text = words[0]
    for index in 1..<words.count - 1 {
      text += ", "
      text += words[index]
    }
    return text + " or " + words[words.count - 1]
  }
}

/// One option. `long` is the canonical key (without dashes) the parsed result is read by.
package struct OptionSpec: Sendable {
  package enum Arity: Sendable, Equatable {
    /// `--bytes`: present or not.
    case flag
    /// `--interval 2s`: always takes a value.
    case value(String)
    /// `--rate [2s]`: takes a value only when one follows that `accepts` approves
    /// (or with `--rate=2s`).
    case optionalValue(String)
    /// `--exec CMD ARG…`: takes every remaining argument.
    case remainder(String)
  }

  package var long: String
  package var short: Character?
  package var arity: Arity
  package var repeatable: Bool
  package var help: String
  /// Checks a value as the option reads it, for `optionalValue` and for early, clear errors.
  package var accepts: @Sendable (String) -> Bool
  /// What `accepts` wants, in words, for the error about a value it refused.
  package var expected: String?
  /// Whether the configuration file may set it (`name = value`; a flag as `name = yes|no`).
  package var configurable: Bool
  /// What its value can be.
  package var values: ValueSet

  package init(
    _ long: String, short: Character? = nil, _ arity: Arity = .flag, repeatable: Bool = false,
    configurable: Bool = false, help: String, accepts: @escaping @Sendable (String) -> Bool = { _ in true },
    expected: String? = nil, values: ValueSet = .free
  ) {
    self.long = long
    self.short = short
    self.arity = arity
    self.repeatable = repeatable
    self.configurable = configurable
    self.help = help
    self.accepts = accepts
    self.expected = expected
    self.values = values
  }

  /// The words a configurable flag's setting may be; `settingIsTrue` says which set it.
  static let settingWords = ["yes", "no", "true", "false", "on", "off"]
  static func settingIsTrue(_ value: String) -> Bool { ["yes", "true", "on"].contains(value) }

  /// Whether the configuration file's `value` is one this option takes.
  func acceptsSetting(_ value: String) -> Bool {
    arity == .flag ? Self.settingWords.contains(value) : accepts(value)
  }

  /// How the option shows in messages: `--interval <duration>`.
  package var display: String {
    switch arity {
    case .flag: "--\(long)"
    case .value(let name), .optionalValue(let name): "--\(long) <\(name)>"
    case .remainder(let name): "--\(long) <\(name)>…"
    }
  }

  /// The usage error for a value this option refuses.
  func invalidValue(_ value: String, commandPath: String) -> UsageError {
    var message = "invalid value '\(TerminalText.sanitize(value))' for '\(display)'"
    if let expected { message += ": expected \(expected)" }
    return UsageError(message, commandPath: commandPath)
  }
}

/// One positional argument.
package struct PositionalSpec: Sendable {
  package var name: String
  package var help: String
  package var optional: Bool
  package var repeating: Bool
  package var values: ValueSet
  package init(_ name: String, help: String, optional: Bool = false, repeating: Bool = false, values: ValueSet = .free)
  {
    self.name = name
    self.help = help
    self.optional = optional
    self.repeating = repeating
    self.values = values
  }
}
