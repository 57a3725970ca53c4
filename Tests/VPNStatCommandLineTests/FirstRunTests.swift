import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatTestSupport

/// A first run with nothing to explain: ASCII for a locale that is not UTF-8, plain lines for a
/// dumb terminal, hints that name the command typed, units and bits wherever figures are shown,
/// the version with its commit, and the README's instructions that work on a minimal Debian.
struct FirstRunTests {
  /// A tunnel with a name beyond ASCII, and loopback.
  static func fixture() throws -> SysfsFixture {
    let sysfs = try SysfsFixture()
    try sysfs.add("wgé", index: 7, rx: 10_000, tx: 2_000, type: 65534, uevent: "DEVTYPE=wireguard")
    try sysfs.add("lo", index: 1, rx: 5_000, tx: 5_000, type: 772)
    return sysfs
  }

  static let noConfig = ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"]

  static func isASCII(_ data: Data) -> Bool { data.allSatisfy { $0 < 0x80 } }

  @Test("a locale that is not UTF-8 gets ASCII (~ for ≈, names as \\xHH); LC_ALL, then LC_CTYPE, then LANG decides")
  func asciiLocale() throws {
    let sysfs = try Self.fixture()
    let arguments = ["status", "--sysfs-root", sysfs.directory.path]
    let cases: [(environment: [String: String], ascii: Bool)] = [
      (["LC_ALL": "C"], true),
      (["LC_ALL": "C", "LANG": "C.UTF-8"], true),
      (["LANG": "POSIX"], true),
      (["LANG": ""], true),
      (["LC_ALL": "C.UTF-8", "LANG": "C"], false),
      (["LC_ALL": "", "LC_CTYPE": "POSIX", "LANG": "C.UTF-8"], true),
      (["LC_CTYPE": "en_US.utf8", "LANG": "POSIX"], false),
      (["LANG": "de_DE.UTF-8"], false),
      (["LANG": "en_US.ISO-8859-1"], true),
      (["LANG": "sv_SE.Utf8"], false),
      (["LANG": "xx_XX.UTF-16"], true),
    ]
    for (environment, ascii) in cases {
      let result = try run(Built.vpnstat, arguments, environment: Self.noConfig.merging(environment) { $1 })
      #expect(result.status == 0, "\(environment): \(result.errors)")
      if ascii {
        #expect(Self.isASCII(result.stdout), "\(environment):\n\(result.output)")
        #expect(result.output.contains("~ 9.77 KiB"), "\(environment):\n\(result.output)")
        #expect(result.output.contains("wg\\xc3\\xa9"), "\(environment):\n\(result.output)")
      } else {
        #expect(result.output.contains("≈ 9.77 KiB") && result.output.contains("wgé"), "\(environment)")
      }
    }
    // Help and messages too; JSON stays UTF-8, it is for programs.
    let help = try run(Built.vpnstat, ["--help"], environment: ["LC_ALL": "C"])
    #expect(Self.isASCII(help.stdout) && help.output.contains("Wi-Fi"), "\(help.output)")
    let json = try run(
      Built.vpnstat, arguments + ["--json"], environment: Self.noConfig.merging(["LC_ALL": "C"]) { $1 })
    #expect(json.output.contains("\"name\":\"wgé\""), "\(json.output)")
  }

  /// Runs `command` on a terminal (util-linux's `script` gives it one) and returns what it wrote.
  static func onTerminal(_ command: String, term: String) throws -> String {
    try Tool.require("/usr/bin/script")
    let result = try run(
      "/usr/bin/script", ["-qefc", command, "/dev/null"], environment: Self.noConfig.merging(["TERM": term]) { $1 },
      timeout: 30)
    #expect(result.status == 0, "\(command): \(result.output)\(result.errors)")
    return result.output
  }

  @Test("watch on a TERM=dumb terminal prints plain lines: no alternate screen, no cursor movement")
  func dumbTerminal() throws {
    let sysfs = try Self.fixture()
    let command = "\(Built.vpnstat) watch --count 2 --interval 100ms --sysfs-root \(sysfs.directory.path)"
    let dumb = try Self.onTerminal(command, term: "dumb")
    #expect(!dumb.contains("\u{1B}"), "escape codes on a dumb terminal: \(dumb.debugDescription)")
    #expect(dumb.contains(" tunnel wg") && dumb.contains(" rx/s="), "\(dumb)")
    // The same terminal with a TERM that can: the full screen (so the check above can fail).
    let capable = try Self.onTerminal(command, term: "xterm")
    #expect(capable.contains("\u{1B}[?1049h"), "no alternate screen for xterm: \(capable.debugDescription)")
  }

  @Test("an error's hint names the command typed: vpnstat --bogus points to vpnstat --help, not status --help")
  func hintsNameWhatWasTyped() throws {
    let cases: [([String], String)] = [
      (["--bogus"], "see 'vpnstat --help'"),
      (["--rate", "0"], "see 'vpnstat --help'"),
      (["status", "--bogus"], "see 'vpnstat status --help'"),
      (["session", "--bogus"], "see 'vpnstat session --help'"),
      (["session", "check", "--bogus"], "see 'vpnstat session check --help'"),
      (["completions", "tcsh"], "see 'vpnstat completions --help'"),
    ]
    for (arguments, hint) in cases {
      let result = try run(Built.vpnstat, arguments, environment: Self.noConfig)
      #expect(result.status == 64, "\(arguments): \(result.errors)")
      #expect(result.errors.contains(hint), "\(arguments): \(result.errors)")
    }
    let bogus = try run(Built.vpnstat, ["--bogus"], environment: Self.noConfig)
    #expect(!bogus.errors.contains("status --help"), "\(bogus.errors)")
  }

  @Test("--units and --bits in every command that shows sizes or rates, and settable in the configuration file")
  func unitsEverywhere() throws {
    for path in [["status"], ["watch"], ["session", "status"], ["history"], ["flows"]] {
      let help = try run(Built.vpnstat, path + ["--help"], environment: Self.noConfig)
      #expect(help.output.contains("--units <units>") && help.output.contains("--bits"), "\(path): \(help.output)")
      #expect(help.output.contains("One of: iec, si."), "\(path)")
    }
    let sysfs = try Self.fixture()
    let directory = try TemporaryDirectory("units")
    let db = directory.file("v.db")
    let fixture = ["--sysfs-root", sysfs.directory.path, "--db", db]
    for rx: UInt64 in [10_000, 60_000] {
      try sysfs.add("wgé", index: 7, rx: rx, tx: 2_000, type: 65534, uevent: "DEVTYPE=wireguard")
      let recorded = try run(Built.vpnstat, ["record", "--count", "1"] + fixture, environment: Self.noConfig)
      try #require(recorded.status == 0, "\(recorded.errors)")
    }
    let si = try run(Built.vpnstat, ["status", "--units", "si"] + fixture, environment: Self.noConfig)
    #expect(si.output.contains("≈ 60.0 kB"), "\(si.output)")
    let bits = try run(Built.vpnstat, ["status", "--bits"] + fixture, environment: Self.noConfig)
    #expect(bits.output.contains("≈ 480 kbit"), "\(bits.output)")
    let history = try run(
      Built.vpnstat, ["history", "--hours", "--units", "si", "--db", db], environment: Self.noConfig)
    #expect(history.output.contains("≈ 50.0 kB"), "\(history.output)")
    let bad = try run(Built.vpnstat, ["status", "--units", "metric"] + fixture, environment: Self.noConfig)
    #expect(bad.status == 64 && bad.errors.contains("expected iec or si"), "\(bad.errors)")

    let config = directory.file("vpnstat.conf")
    try Data("units = si\nbits = yes\n".utf8).write(to: URL(fileURLWithPath: config))
    let configured = try run(Built.vpnstat, ["status"] + fixture, environment: ["VPNSTAT_CONFIG": config])
    #expect(configured.output.contains("≈ 480 kbit"), "\(configured.output)")
    try Data("bits = maybe\n".utf8).write(to: URL(fileURLWithPath: config))
    let wrong = try run(Built.vpnstat, ["status"] + fixture, environment: ["VPNSTAT_CONFIG": config])
    #expect(wrong.status == 64 && wrong.errors.contains("\(config):1"), "\(wrong.errors)")
  }

  @Test("--version names the version and the commit the build was made from")
  func version() throws {
    let result = try run(Built.vpnstat, ["--version"])
    #expect(result.status == 0)
    let line = result.output.trimmingCharacters(in: .newlines)
    #expect(line == "vpnstat \(vpnstatVersion) (commit \(vpnstatCommit))", "\(line)")
    // A checkout names its commit: the one git says (the tree may have changes: -dirty).
    let git = try? run("/usr/bin/git", ["-C", Built.packageRoot.path, "rev-parse", "--short=12", "HEAD"])
    if let git, git.status == 0 {
      let head = git.output.trimmingCharacters(in: .whitespacesAndNewlines)
      #expect(vpnstatCommit.hasPrefix(head), "built from \(vpnstatCommit), HEAD is \(head)")
    } else {
      #expect(vpnstatCommit.count >= 7, "\(vpnstatCommit)")
    }
  }

  @Test("the README's way to read the man pages works without man-db: mandoc -l, for every page of man/")
  func manInstruction() throws {
    let readme = try String(contentsOfFile: Built.packageRoot.appendingPathComponent("README.md").path, encoding: .utf8)
    #expect(readme.contains("mandoc -l man/vpnstat.1"))
    #expect(!readme.contains("man ./man/vpnstat.1"))
    try Tool.require("/usr/bin/mandoc")
    let pages = DocumentationTests.pageFiles
    try #require(pages.count > 8, "\(pages)")
    for page in pages {
      let result = try run(
        "/usr/bin/mandoc", ["-l", DocumentationTests.manDirectory.appendingPathComponent(page).path])
      #expect(result.status == 0, "mandoc -l man/\(page): \(result.errors)")
      // Piped, mandoc prints bold as a character, backspace, the character again.
      let text = result.output.replacing(/.\u{08}/, with: "")
      let name = DocumentationTests.nameAndSection(page).name
      #expect(text.contains(name) && text.contains("SEE ALSO"), "man/\(page): \(text.prefix(500))")
      if page == "vpnstat.1" { #expect(text.contains("EXIT STATUS"), "\(text.prefix(500))") }
    }
  }

  @Test("install-deps, when it cannot become root, says what to run as root and exits 1")
  func installDepsCannotElevate() throws {
    try Tool.require("/usr/bin/setpriv")
    // A PATH without sudo: only what the script needs to see that something is missing.
    let bin = try TemporaryDirectory("nosudo")
    for tool in ["id", "dpkg-query", "grep"] {
      try FileManager.default.createSymbolicLink(atPath: bin.file(tool), withDestinationPath: "/usr/bin/\(tool)")
    }
    // A copy the user nobody can read: the clone may sit under /root.
    let script = bin.file("install-deps")
    try FileManager.default.copyItem(
      atPath: Built.packageRoot.appendingPathComponent("scripts/install-deps").path, toPath: script)
    chmod(script, 0o755)
    let command = ["/usr/bin/env", "PATH=\(bin.path)", "/bin/sh", script, "vpnstat-no-such-package"]
    let result: CommandResult
    if Privilege.isRoot {
      try #require(Privilege.canRunAsNobody, Privilege.nobodyReason)
      result = try run(
        "/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] + command)
    } else {
      result = try run(command[0], Array(command.dropFirst()))
    }
    #expect(result.status == 1, "\(result.output)\(result.errors)")
    #expect(result.errors.contains("not root and there is no sudo"), "\(result.errors)")
    #expect(result.errors.contains("apt-get install --no-install-recommends vpnstat-no-such-package"))
    #expect(!result.errors.contains("not found"), "\(result.errors)")
  }
}
