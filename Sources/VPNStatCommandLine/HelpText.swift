import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatSystem

/// The `--help` text of a command, generated from its spec so it cannot drift from the parser.
package func helpText(for spec: CommandSpec, path: [String]) -> String {
  var out = "OVERVIEW: \(spec.abstract)\n\n"
  let name = path.joined(separator: " ")
  if let usage = spec.usage {
    out += "USAGE: \(usage)\n"
  } else {
    var usage = name
    if !spec.subcommands.isEmpty { usage += " <subcommand>" }
    if !spec.options.isEmpty { usage += " [<options>]" }
    for positional in spec.positionals {
      var word = "<\(positional.name)>"
      if positional.repeating { word += " …" }
      usage += " " + (positional.optional ? "[\(word)]" : word)
    }
    out += "USAGE: \(usage)\n"
  }
  if let discussion = spec.discussion { out += "\n" + discussion + "\n" }
  if !spec.positionals.isEmpty {
    out += "\nARGUMENTS:\n"
    for positional in spec.positionals {
      out += row("<\(positional.name)>", positional.help + values(positional.values))
    }
  }
  out += "\nOPTIONS:\n"
  for option in spec.options {
    var left = option.short.map { "-\($0), " } ?? ""
    left += "--\(option.long)"
    switch option.arity {
    case .flag: break
    case .value(let value): left += " <\(value)>"
    case .optionalValue(let value): left += " [<\(value)>]"
    case .remainder(let value): left += " <\(value)> …"
    }
    out += row(left, option.help + values(option.values) + (option.repeatable ? " (repeatable)" : ""))
  }
  if path.count == 1 { out += row("--version", "Show the version.") }
  out += row("-h, --help", "Show help information.")
  if !spec.subcommands.isEmpty {
    out += "\nSUBCOMMANDS:\n"
    for sub in spec.subcommands {
      let marker = sub.name == spec.defaultSubcommand ? " (default)" : ""
      out += row(sub.name + marker, sub.abstract)
    }
    out += "\n  See '\(name) help <subcommand>' for detailed help.\n"
  }
  return out
}

/// A fixed set of values as help lists it, from the declaration the parser checks.
private func values(_ set: ValueSet) -> String {
  switch set {
  case .oneOf(let words): " One of: \(words.joined(separator: ", "))."
  case .listOf(let words): " Any of: \(words.joined(separator: ", "))."
  default: ""
  }
}

private func row(_ left: String, _ right: String) -> String {
  let indent = "  "
  let column = 26
  if left.count + indent.count < column - 1 {
    return indent + left + String(repeating: " ", count: column - left.count - indent.count) + right
      + "\n"
  }
  return indent + left + "\n" + String(repeating: " ", count: column) + right + "\n"
}
