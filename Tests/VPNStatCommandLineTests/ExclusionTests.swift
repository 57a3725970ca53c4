import Testing

@testable import VPNStatCommandLine
@testable import VPNStatTestSupport

/// Options a command refuses together are declared in its spec and checked by the parser, once:
/// the same messages the commands gave by hand, as usage errors (64), before anything runs.
struct ExclusionTests {
  func refusal(_ words: [String]) -> String? {
    do {
      _ = try parseCommandLine(words, root: VPNStat.rootSpec)
      return nil
    } catch let error as UsageError {
      return error.message
    } catch {
      return "\(error)"
    }
  }

  @Test(
    "every declared exclusion refuses with its message",
    arguments: [
      (["history", "--hours", "--days"], "choose one of --five-minutes, --hours, --days, --months"),
      (["history", "--json", "--svg", "-"], "choose one of --json, --graph, --svg"),
      (["history", "--days", "5", "--since", "2026-11-20"], "give either a count or --since/--until, not both"),
      (["history", "--top", "5", "--hours"], "--top ranks days: use it alone or with --days"),
      (["history", "--top", "3", "--graph"], "--top is a list: it cannot be drawn with --graph or --svg"),
      (["alert", "--limit", "1GB", "-i", "wg0", "--only", "tunnel"], "give either -i/--interface or --only, not both"),
      (["enforce", "wg0", "--action", "auto", "--exec", "true"], "give either --action or --exec, not both"),
    ])
  func refused(words: [String], message: String) {
    #expect(refusal(words) == message, "\(words)")
  }

  @Test(
    "what an exclusion allows still parses: a view alone with a range, --top with --days, one output, help",
    arguments: [
      ["history", "--days", "--since", "2026-11-20"], ["history", "--top", "3", "--days", "20", "--json"],
      ["history", "--months", "--graph"], ["alert", "--limit", "1GB", "--only", "tunnel"],
      ["enforce", "wg0", "--exec", "true", "--action", "auto"], ["history", "--hours", "--days", "--help"],
    ])
  func allowed(words: [String]) {
    // `--exec` takes every word after it: the --action there is the program's.
    #expect(refusal(words) == nil, "\(words)")
  }

  @Test("a member counted only with a value: the option alone (its default) does not break the exclusion")
  func onlyWithValue() throws {
    let count = OptionSpec("days", .optionalValue("n"), help: "d", accepts: { Int($0) != nil })
    let since = OptionSpec("since", .value("when"), help: "s")
    let spec = CommandSpec(
      name: "tool", abstract: "t", options: [count, since],
      exclusions: [.notBoth([Exclusion.Member(count, onlyWithValue: true)], [Exclusion.Member(since)], "no")])
    #expect(try parseCommandLine(["--days", "--since", "x"], root: spec).has("days"))
    #expect(throws: UsageError("no", commandPath: "tool")) {
      try parseCommandLine(["--days=3", "--since", "x"], root: spec)
    }
  }

  @Test("the whole command line exits 64 with the message and the help hint")
  func exitStatus() throws {
    let result = try runInProcess(["history", "--json", "--graph"], clock: ManualTimeSource())
    #expect(result.status == 64)
    #expect(result.errors == "vpnstat: choose one of --json, --graph, --svg\nvpnstat: see 'vpnstat history --help'\n")
  }
}
