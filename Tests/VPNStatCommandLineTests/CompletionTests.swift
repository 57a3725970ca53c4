import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatTestSupport

/// Shell completion, generated from the parser's declarations: driven in the real shells (bash
/// through COMP_WORDS, fish through `complete -C`, zsh on a pseudo-terminal), and checked to
/// cover every command and option.
struct CompletionTests {
  /// The script `vpnstat completions SHELL` prints, in a file of `directory`.
  static func script(_ shell: String, in directory: TemporaryDirectory) throws -> String {
    let result = try run(Built.vpnstat, ["completions", shell])
    try #require(result.status == 0, "\(result.errors)")
    let path = directory.file("vpnstat.\(shell)")
    try result.stdout.write(to: URL(fileURLWithPath: path))
    return path
  }

  /// What bash's completion offers for `words` (the last one being completed).
  static func bash(_ script: String, _ words: [String], namespace: TestNamespace? = nil) throws -> [String] {
    try Tool.require("/usr/bin/bash")
    let driver = """
      . "$1"; shift
      COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
      _vpnstat
      printf '%s\\n' "${COMPREPLY[@]}"
      """
    let arguments = ["--norc", "--noprofile", "-c", driver, "bash", script] + words
    let result =
      try namespace.map { try $0.run("/usr/bin/bash", arguments) } ?? run("/usr/bin/bash", arguments)
    #expect(result.status == 0, "\(words): \(result.errors)")
    #expect(result.errors.isEmpty, "\(words): \(result.errors)")
    return result.output.split(separator: "\n").map(String.init)
  }

  @Test("bash: vpnstat se → session, watch --on → --only, status --source → the readers, and more")
  func bashCompletes() throws {
    let directory = try TemporaryDirectory("bashcomp")
    let script = try Self.script("bash", in: directory)
    #expect(try Self.bash(script, ["vpnstat", "se"]) == ["session"])
    #expect(try Self.bash(script, ["vpnstat", "watch", "--on"]) == ["--only"])
    #expect(try Self.bash(script, ["vpnstat", "status", "--source", ""]) == ["netlink", "sysfs", "getifaddrs"])
    #expect(try Self.bash(script, ["vpnstat", "status", "--source", "=", "s"]) == ["sysfs"])
    #expect(try Self.bash(script, ["vpnstat", "status", "--only", "tunnel,w"]) == ["tunnel,wifi"])
    #expect(try Self.bash(script, ["vpnstat", "session", ""]) == ["status", "check", "reset"])
    #expect(try Self.bash(script, ["vpnstat", "session", "check", "--t"]) == ["--timeout"])
    #expect(try Self.bash(script, ["vpnstat", "plan", ""]) == ["free", "premium"])
    #expect(try Self.bash(script, ["vpnstat", "export", "--format", ""]) == ["openmetrics", "prometheus"])
    #expect(try Self.bash(script, ["vpnstat", "history", "--by", ""]) == ["class", "interface"])
    #expect(try Self.bash(script, ["vpnstat", "completions", ""]) == ["bash", "zsh", "fish"])
    // vpnstat alone runs status: its options complete there too.
    #expect(try Self.bash(script, ["vpnstat", "--jso"]) == ["--json"])
    // A value to type (a duration) offers nothing rather than options or files.
    #expect(try Self.bash(script, ["vpnstat", "watch", "--interval", ""]).isEmpty)
    // Interface names: this machine's, from /sys/class/net (lo is everywhere).
    #expect(try Self.bash(script, ["vpnstat", "enforce", "l"]).contains("lo"))
    #expect(try Self.bash(script, ["vpnstat", "status", "-i", "l"]).contains("lo"))
  }

  @Test("fish: the same completions through complete -C, with descriptions")
  func fishCompletes() throws {
    try Tool.require("/usr/bin/fish")
    let directory = try TemporaryDirectory("fishcomp")
    let script = try Self.script("fish", in: directory)
    #expect(try run("/usr/bin/fish", ["-n", script]).status == 0)
    func complete(_ line: String) throws -> [String] {
      let result = try run(
        "/usr/bin/fish", ["--no-config", "-c", "source $argv[1]; complete -C $argv[2]", script, line])
      #expect(result.status == 0 && result.errors.isEmpty, "\(line): \(result.errors)")
      return result.output.split(separator: "\n").map { String($0.split(separator: "\t").first ?? "") }
    }
    #expect(try complete("vpnstat se") == ["session"])
    #expect(try complete("vpnstat watch --on") == ["--only"])
    #expect(try Set(complete("vpnstat status --source ")) == ["netlink", "sysfs", "getifaddrs"])
    #expect(try Set(complete("vpnstat session ")) == ["status", "check", "reset"])
    #expect(try complete("vpnstat enforce l").contains("lo"))
  }

  @Test("zsh: the script is valid, and on a terminal vpnstat se completes to session, --on to --only")
  func zshCompletes() throws {
    try Tool.require("/usr/bin/zsh")
    let directory = try TemporaryDirectory("zshcomp")
    let script = try Self.script("zsh", in: directory)
    let check = try run("/usr/bin/zsh", ["-n", script])
    #expect(check.status == 0, "\(check.errors)")
    // compinit wants the function named _vpnstat in a directory of $fpath.
    let functions = directory.file("functions")
    try FileManager.default.createDirectory(atPath: functions, withIntermediateDirectories: true)
    try FileManager.default.copyItem(atPath: script, toPath: functions + "/_vpnstat")
    // An interactive zsh on a pseudo-terminal (zpty): type the line and TAB, read until the
    // completed line shows (or 20 s), then clear the line for the next case.
    let driver = """
      zmodload zsh/zpty
      zpty z zsh -f -i
      zpty -w z "PS1='> '; fpath=($1 \\$fpath); autoload -U compinit; compinit -u -D; vpnstat() { :; }; print READY"
      zpty -r z out '*READY*'
      shift
      while (( $# >= 2 )); do
        zpty -w -n z "$1"$'\\t'
        if zpty -r -m z out "*$2*"; then print -r -- "OK $2"; else print -r -- "MISSING $2"; fi
        zpty -w -n z $'\\C-e\\C-u'
        shift 2
      done
      zpty -d z
      """
    let cases = [
      "vpnstat se", "vpnstat session", "vpnstat watch --on", "vpnstat watch --only", "vpnstat plan p",
      "vpnstat plan premium", "vpnstat status --only tunnel,wi", "tunnel,wifi",
    ]
    let result = try run("/usr/bin/zsh", ["-f", "-c", driver, "zsh", functions] + cases, timeout: 60)
    #expect(result.status == 0, "\(result.errors)")
    #expect(result.output.contains("OK vpnstat session\n"), "\(result.output)")
    #expect(result.output.contains("OK vpnstat watch --only\n"), "\(result.output)")
    #expect(result.output.contains("OK vpnstat plan premium\n"), "\(result.output)")
    #expect(result.output.contains("OK tunnel,wifi"), "\(result.output)")
  }

  @Test("every script covers every command, every long option and every fixed value set the parser declares")
  func coverage() {
    for shell in ShellCompletion.Shell.allCases {
      let script = ShellCompletion.script(shell, root: VPNStat.rootSpec)
      var specs = [VPNStat.rootSpec]
      while let spec = specs.popLast() {
        specs += spec.subcommands
        #expect(script.contains(spec.name), "\(shell): no command \(spec.name)")
        for option in spec.options {
          let spelled = shell == .fish ? "-l \(option.long)" : "--\(option.long)"
          #expect(script.contains(spelled), "\(shell): no \(spelled) of \(spec.name)")
          for word in option.values.words { #expect(script.contains(word), "\(shell): no value \(word)") }
        }
        for positional in spec.positionals {
          for word in positional.values.words { #expect(script.contains(word), "\(shell): no value \(word)") }
        }
      }
    }
  }
}

@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct CompletionHostileNameTests {
  @Test("an interface named x$(id) is offered quoted and never run by bash's completion")
  func hostileInterfaceName() throws {
    let ns = try TestNamespace("comp")
    try ns.ip("link", "add", "x$(id)", "type", "ifb")
    try ns.ip("link", "add", "y\\z", "type", "ifb")
    let directory = try TemporaryDirectory("hostilecomp")
    let script = try CompletionTests.script("bash", in: directory)
    let offered = try CompletionTests.bash(script, ["vpnstat", "-i", "x"], namespace: ns)
    #expect(offered == ["x\\$\\(id\\)"], "\(offered)")
    #expect(!offered.joined().contains("uid="), "the name was evaluated: \(offered)")
    // vpnstat's escaped form doubles the backslash, then the shell's quoting doubles both.
    #expect(try CompletionTests.bash(script, ["vpnstat", "enforce", "y"], namespace: ns) == ["y\\\\\\\\z"])
  }
}
