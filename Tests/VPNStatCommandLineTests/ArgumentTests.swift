import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatTestSupport

/// The argument parser's conventions (swift-argument-parser's) and the CLI's usage errors.
struct ArgumentTests {
  static let spec = CommandSpec(
    name: "tool", abstract: "test",
    subcommands: [
      CommandSpec(
        name: "status", abstract: "s",
        options: [
          OptionSpec("json", help: "j"),
          OptionSpec("interval", short: "n", .value("d"), help: "i", accepts: { parseDuration($0) != nil }),
          OptionSpec("interface", short: "i", .value("name"), repeatable: true, help: "i"),
          OptionSpec("rate", .optionalValue("d"), help: "r", accepts: { parseDuration($0) != nil }),
          OptionSpec("bytes", short: "b", help: "b"),
          OptionSpec("quiet", short: "q", help: "q"),
        ]),
      CommandSpec(
        name: "enforce", abstract: "e",
        options: [OptionSpec("exec", .remainder("cmd"), help: "x")],
        positionals: [PositionalSpec("iface", help: "i")]),
    ], defaultSubcommand: "status")

  func parse(_ words: String...) throws -> ParsedCommand {
    try parseCommandLine(words, root: Self.spec)
  }

  @Test("--name value, --name=value, -n value, -nvalue and clustered flags all parse")
  func optionForms() throws {
    let a = try parse("status", "--interval", "2s", "-i", "wg0", "--interface=tun0", "-bq")
    #expect(a.value("interval") == "2s")
    #expect(a.all("interface") == ["wg0", "tun0"])
    #expect(a.has("bytes") && a.has("quiet"))
    let b = try parse("status", "-n2s", "-iwg1")
    #expect(b.value("interval") == "2s")
    #expect(b.value("interface") == "wg1")
  }

  @Test("the default subcommand runs when none is named")
  func defaultSubcommand() throws {
    #expect(try parse().path == ["tool", "status"])
    #expect(try parse("--json").path == ["tool", "status"])
    #expect(try parse("--json").has("json"))
  }

  @Test("an optional value is taken only when one that parses follows")
  func optionalValue() throws {
    #expect(try parse("status", "--rate").value("rate") == "")
    #expect(try parse("status", "--rate", "2s").value("rate") == "2s")
    #expect(try parse("status", "--rate=500ms").value("rate") == "500ms")
    let c = try parse("status", "--rate", "--json")
    #expect(c.value("rate") == "" && c.has("json"))
    #expect(throws: UsageError.self) { try parse("status", "--rate=soon") }
  }

  @Test("-- ends options; a remainder option takes the rest verbatim")
  func doubleDashAndRemainder() throws {
    let e = try parse("enforce", "--", "-weird-name")
    #expect(e.positionals == ["-weird-name"])
    let x = try parse("enforce", "wg0", "--exec", "nmcli", "--flag", "$(rm -rf /)", "a b")
    #expect(x.positionals == ["wg0"])
    #expect(x.all("exec") == ["nmcli", "--flag", "$(rm -rf /)", "a b"])
  }

  @Test("`enforce IFACE --exec -- CMD ARGS`: the `--` is vpnstat's, not the program's name")
  func execAfterDoubleDash() throws {
    let x = try parse(
      "enforce", "wg0", "--exec", "--", "/usr/bin/nmcli", "--wait", "3", "connection", "down", "--", "id")
    #expect(x.positionals == ["wg0"])
    // Only the first `--` is vpnstat's; one among the command's own arguments is kept.
    #expect(x.all("exec") == ["/usr/bin/nmcli", "--wait", "3", "connection", "down", "--", "id"])
    #expect(try parse("enforce", "wg0", "--exec", "--", "--").all("exec") == ["--"])
    #expect(try parse("enforce", "wg0", "--exec=/bin/true", "x").all("exec") == ["/bin/true", "x"])
    let empty = try #require(throws: UsageError.self) { try parse("enforce", "wg0", "--exec", "--") }
    #expect(empty.message.contains("missing value for '--exec <cmd>…'"))
  }

  @Test("unknown options and commands name the word and suggest the close one")
  func suggestions() throws {
    let error = try #require(throws: UsageError.self) { try parse("status", "--intervall", "1s") }
    #expect(error.message.contains("'--intervall'"))
    #expect(error.message.contains("did you mean '--interval'"))
    let command = try #require(throws: UsageError.self) { try parse("stauts") }
    #expect(command.message.contains("did you mean 'status'"))
    let value = try #require(throws: UsageError.self) { try parse("status", "--interval", "fast") }
    #expect(value.message.contains("'fast'") && value.message.contains("--interval"))
    let missing = try #require(throws: UsageError.self) { try parse("status", "--interval") }
    #expect(missing.message.contains("missing value"))
    let positional = try #require(throws: UsageError.self) { try parse("enforce") }
    #expect(positional.message.contains("<iface>"))
    let extra = try #require(throws: UsageError.self) { try parse("enforce", "a", "b") }
    #expect(extra.message.contains("'b'"))
    let flagValue = try #require(throws: UsageError.self) { try parse("status", "--json=yes") }
    #expect(flagValue.message.contains("takes no value"))
  }

  @Test("-h and --help anywhere ask for help; help SUBCOMMAND too")
  func help() throws {
    #expect(try parse("status", "-h").helpRequested)
    #expect(try parse("enforce", "--help").helpRequested)
    let viaHelp = try parse("help", "enforce")
    #expect(viaHelp.helpRequested && viaHelp.path == ["tool", "enforce"])
    let text = helpText(for: Self.spec.subcommands[0], path: ["tool", "status"])
    #expect(text.contains("--interval <d>") && text.contains("-h, --help"))
  }

  @Test("durations: 500ms, 90s, 15m, 1h, 1h30m, 1.5s, bare seconds; junk rejected")
  func durations() {
    #expect(parseDuration("500ms") == .milliseconds(500))
    #expect(parseDuration("90s") == .seconds(90))
    #expect(parseDuration("15m") == .seconds(900))
    #expect(parseDuration("1h") == .seconds(3600))
    #expect(parseDuration("1h30m") == .seconds(5400))
    #expect(parseDuration("1.5s") == .milliseconds(1500))
    #expect(parseDuration("2") == .seconds(2))
    for junk in ["", "s", "1x", "-1s", "0", "0s", "1e9s", "nan", "1 s s", "999d"] {
      #expect(parseDuration(junk) == nil, "\(junk)")
    }
  }
}

/// Wrong arguments through the real binary: exit 64, a clear message on stderr, for every command.
struct CommandLineUsageTests {
  /// The subcommands the binary lists in its help, so a new command is covered automatically.
  static func subcommands() throws -> [String] {
    let help = try run(Built.vpnstat, ["--help"]).output
    guard let section = help.components(separatedBy: "SUBCOMMANDS:").last else { return [] }
    return section.split(separator: "\n").compactMap { line in
      let trimmed = line.drop(while: { $0 == " " })
      guard line.hasPrefix("  "), !line.hasPrefix("    "), let word = trimmed.split(separator: " ").first,
        !trimmed.hasPrefix("See")
      else { return nil }
      return String(word)
    }
  }

  @Test("every command rejects an unknown option with 64 and names it")
  func unknownOptionEverywhere() throws {
    let commands = try Self.subcommands()
    #expect(commands.contains("status"))
    for command in commands {
      let result = try run(Built.vpnstat, [command, "--no-such-option"])
      #expect(result.status == 64, "\(command): \(result.errors)")
      #expect(result.errors.contains("unknown option '--no-such-option'"), "\(command)")
      #expect(result.stdout.isEmpty, "\(command)")
      let help = try run(Built.vpnstat, [command, "--help"])
      #expect(help.status == 0, "\(command)")
      #expect(help.output.contains("USAGE:"), "\(command)")
    }
  }

  @Test("bad values, unknown commands and hostile arguments exit 64 with a clear message")
  func badValues() throws {
    let cases: [([String], String)] = [
      (["status", "--source", "proc"], "'proc'"),
      (["status", "--rate=later"], "'later'"),
      (["status", "--only", "satellite"], "'satellite'"),
      (["status", "--class", "wg0"], "NAME=CLASS"),
      (["status", "--class", "wg0=vpn"], "'wg0=vpn'"),
      (["statsu"], "did you mean 'status'"),
      (["status", "--jsn"], "did you mean '--json'"),
      (["status", "--source"], "missing value"),
      (["status", "\u{1B}[2J"], "\\x1b[2J"),
    ]
    for (arguments, fragment) in cases {
      let result = try run(Built.vpnstat, arguments)
      #expect(result.status == 64, "\(arguments): \(result.errors)")
      #expect(result.errors.contains(fragment), "\(arguments): \(result.errors)")
      #expect(!result.errors.contains("\u{1B}"), "raw ESC echoed for \(arguments)")
    }
    let version = try run(Built.vpnstat, ["--version"])
    #expect(version.status == 0 && version.output.hasPrefix("vpnstat "))
  }
}
