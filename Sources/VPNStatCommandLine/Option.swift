import VPNStatModel

/// An option that takes a value, declared once with what its values mean: the parser checks
/// every value with `parse` (on the command line and in the configuration file), help shows
/// `spec`, and a command reads the typed value with `parsed[option]`.
package struct Option<Value: Sendable>: Sendable {
  package let spec: OptionSpec
  let parse: @Sendable (String) -> Value?
  /// What the option means when given without its optional value (`--rate` alone).
  let implied: Value?

  /// `valueName` shows in help (`--interval <duration>`); `expected` says what a refused value
  /// should have been. `implied` makes the value optional.
  /// `values` says what shell completion offers (a fixed set is declared with `oneOf`).
  package init(
    _ long: String, short: Character? = nil, valueName: String, repeatable: Bool = false, configurable: Bool = false,
    help: String, expected: String, values: ValueSet = .free, implied: Value? = nil,
    parse: @escaping @Sendable (String) -> Value?
  ) {
    spec = OptionSpec(
      long, short: short, implied == nil ? .value(valueName) : .optionalValue(valueName), repeatable: repeatable,
      configurable: configurable, help: help, accepts: { parse($0) != nil }, expected: expected, values: values)
    self.parse = parse
    self.implied = implied
  }
}

extension Option where Value: RawRepresentable & CaseIterable, Value.RawValue == String {
  /// A `--name <word>` option taking one of `Value`'s cases: the one declaration of the set, which
  /// the parser checks, help lists and completion offers.
  package static func oneOf(
    _ long: String, short: Character? = nil, valueName: String, configurable: Bool = false, help: String
  ) -> Option {
    let words = Value.allCases.map { $0.rawValue }
    return Option(
      long, short: short, valueName: valueName, configurable: configurable, help: help,
      expected: ValueSet.alternatives(words), values: .oneOf(words), parse: Value.init(rawValue:))
  }
}

/// An option that is there or not (`--json`). A configurable one is set in the configuration
/// file as `name = yes` (or `no`).
package struct Flag: Sendable {
  package let spec: OptionSpec
  package init(_ long: String, short: Character? = nil, configurable: Bool = false, help: String) {
    spec = OptionSpec(
      long, short: short, .flag, configurable: configurable, help: help,
      expected: configurable ? ValueSet.alternatives(OptionSpec.settingWords) : nil)
  }
}

/// An option that takes every argument after it, as bytes (`--exec COMMAND ARG…`).
package struct Remainder: Sendable {
  package let spec: OptionSpec
  package init(_ long: String, valueName: String, help: String) {
    spec = OptionSpec(long, .remainder(valueName), help: help, values: .command)
  }
}

extension Option where Value == Duration {
  /// A `--name <duration>` option: every duration accepts the same range and says so.
  package static func duration(
    _ long: String, short: Character? = nil, configurable: Bool = false, implied: Duration? = nil, help: String
  ) -> Option {
    Option(
      long, short: short, valueName: "duration", configurable: configurable, help: help,
      expected: durationExpectation, implied: implied, parse: parseDuration)
  }
}

extension Option where Value == Int {
  /// A `--name <n>` count from `range` (every count has an upper bound, said in its help).
  package static func count(
    _ long: String, short: Character? = nil, in range: ClosedRange<Int>, implied: Int? = nil, help: String
  ) -> Option {
    Option(
      long, short: short, valueName: "n", help: help,
      expected: "a number from \(range.lowerBound) to \(range.upperBound)", implied: implied,
      parse: { parseCount($0, in: range) })
  }
}

extension ParsedCommand {
  /// The option's value: the last given (or set by the configuration file); nil when absent.
  package subscript<Value>(_ option: Option<Value>) -> Value? {
    guard let text = value(option.spec.long) else { return nil }
    if text.isEmpty, let implied = option.implied { return implied }
    return option.parse(text)
  }

  /// Every value of a repeatable option, in order.
  package func all<Value>(_ option: Option<Value>) -> [Value] {
    all(option.spec.long).compactMap(option.parse)
  }

  package func has(_ flag: Flag) -> Bool { has(flag.spec.long) }
  package func has<Value>(_ option: Option<Value>) -> Bool { has(option.spec.long) }
  package func has(_ remainder: Remainder) -> Bool { has(remainder.spec.long) }

  /// The remainder's words, byte for byte.
  package func bytes(_ remainder: Remainder) -> [[UInt8]] { remainderBytes[remainder.spec.long] ?? [] }
}
