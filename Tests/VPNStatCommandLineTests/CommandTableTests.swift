import Testing
import VPNStatModel

@testable import VPNStatCommandLine
@testable import VPNStatTestSupport

/// A command runs against a table holding only its own spec (`VPNStat.root(for:)`): it must
/// parse exactly as against the whole table, and the table of names must name every command as
/// its spec does.
struct CommandTableTests {
  @Test("the classes' names written out in the options are InterfaceClass's, in its order")
  func classNamesMatchTheEnum() {
    let names = InterfaceClass.allCases.map(\.rawValue)
    #expect(CommonOptions.classNames == names)
    #expect(CommonOptions.classAlternatives == ValueSet.alternatives(names))
  }

  @Test("every command is in the table of names, under the name its spec gives it")
  func namesMatchSpecs() {
    for command in VPNStat.subcommands {
      let name = command.spec.name
      #expect(VPNStat.listedCommand(named: name).map { $0.spec.name } == name, "\(name)")
      #expect(VPNStat.command(named: name).map { $0.spec.name } == name, "\(name)")
    }
    #expect(VPNStat.listedCommand(named: "bogus") == nil)
    #expect(VPNStat.command(named: "bogus") == nil)
    #expect(VPNStat.command(named: nil) == nil)
  }

  /// What a parse gave, as text: the command, its values and positionals, or the error's message.
  func outcome(_ words: [String], root: CommandSpec) -> String {
    do {
      let parsed = try parseCommandLine(words, root: root)
      let values = parsed.values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
      return "\(parsed.path) \(values) \(parsed.positionals) help=\(parsed.helpRequested) "
        + "version=\(parsed.versionRequested) typed=\(parsed.commandPath) spec=\(parsed.spec.name)"
    } catch let error as UsageError {
      return "usage: \(error.message) (\(error.commandPath))"
    } catch {
      return "error: \(error)"
    }
  }

  @Test(
    "a command line parses against its own command's table as against the whole one",
    arguments: [
      [], ["--json"], ["status"], ["status", "--json", "--db", "/tmp/x.db"], ["-i", "lo"], ["--bogus"], ["--"],
      ["status", "--bogus"], ["status", "-h"], ["status", "--version"], ["session"], ["session", "check"],
      ["session", "bogus"], ["watch", "--interval", "2s"], ["history", "--days", "5"], ["help"], ["help", "status"],
      ["-h"], ["--help"], ["--version"], ["bogus"], ["stauts"], ["export", "--format", "openmetrics"],
      ["enforce", "wg0", "--action", "auto", "--exec", "true"], ["completions", "bash"],
    ] as [[String]])
  func sameParse(_ words: [String]) {
    let raw = words.map { Array($0.utf8) }
    let own = VPNStat.root(for: raw)
    #expect(outcome(words, root: own) == outcome(words, root: VPNStat.rootSpec))
    // Only a command line that names one command (or the default's options) gets a small table.
    let named = words.first.map { word in word.hasPrefix("-") || VPNStat.listedCommand(named: word) != nil } ?? true
    let small = named && !["-h", "--help", "--version"].contains(words.first ?? "")
    // The version alone reads no command's table at all.
    let expected = words == ["--version"] ? 0 : small ? 1 : VPNStat.subcommands.count
    #expect(own.subcommands.count == expected, "\(words)")
  }
}
