import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The documents against the code. The reference is the man pages, and they are checked whole:
/// both are clean for mandoc; vpnstat(1) documents every command and option `--help` prints,
/// every exit status `ExitStatus` defines and every JSON key a real run prints; vpnstat.conf(5)
/// every setting the configuration file's parser takes. The README is the short page that points
/// at them: it holds its two commands (the ones CI runs) and its links lead to files and
/// headings that exist.
///
/// Where the man pages must say it:
/// - options: in the command's own section — vpnstat(1)'s `.Ss vpnstat status` block (as
///   `Fl -name`, or `\-\-name`) — or, for `session check` and the like, the parent command's
///   section when there is no own one; `--help` and `--version` anywhere;
/// - exit statuses: as `.It NN` under vpnstat(1)'s EXIT STATUS;
/// - JSON keys: as `Cm key` under vpnstat(1)'s JSON OUTPUT;
/// - settings: as `.It Cm name` under vpnstat.conf(5)'s SETTINGS.
struct DocumentationTests {
  static let mandoc = "/usr/bin/mandoc"
  static let manPage = Built.packageRoot.appendingPathComponent("man/vpnstat.1").path
  static let configurationPage = Built.packageRoot.appendingPathComponent("man/vpnstat.conf.5").path
  static let readme = Built.packageRoot.appendingPathComponent("README.md").path
  static let guide = Built.packageRoot.appendingPathComponent("docs/guide.md").path
  /// Never the machine's own configuration file: it could change what commands print.
  static let environment = ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"]

  static func text(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8)
  }

  // MARK: - (a) the man pages are clean

  @Test(
    "mandoc -Tlint -Wwarning finds nothing to say about either man page",
    arguments: ["man/vpnstat.1", "man/vpnstat.conf.5"])
  func manPageLints(page: String) throws {
    try Tool.require(Self.mandoc)
    let path = Built.packageRoot.appendingPathComponent(page).path
    let result = try run(Self.mandoc, ["-Tlint", "-Wwarning", path])
    #expect(result.status == 0, "mandoc exited \(result.status) on \(page):\n\(result.output)\(result.errors)")
    #expect(
      result.output.isEmpty && result.errors.isEmpty,
      "mandoc -Tlint -Wwarning \(page):\n\(result.output)\(result.errors)")
  }

  // MARK: - (b) every command and option

  /// One command as its `--help` describes it.
  struct Command {
    var path: [String]
    var longOptions: [String]
    var subcommands: [String]
    var name: String { path.joined(separator: " ") }
  }

  /// Reads `vpnstat … --help`: the long option of every OPTIONS row, the name of every
  /// SUBCOMMANDS row.
  static func help(_ path: [String]) throws -> Command {
    let result = try run(Built.vpnstat, Array(path.dropFirst()) + ["--help"], environment: environment)
    guard result.status == 0 else {
      throw TestSetupError("\(path.joined(separator: " ")) --help exited \(result.status): \(result.errors)")
    }
    var command = Command(path: path, longOptions: [], subcommands: [])
    var section = ""
    for line in result.output.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasSuffix(":") && !line.hasPrefix(" ") {
        section = String(line)
        continue
      }
      // A blank line ends a section (SUBCOMMANDS is followed by a "See …" line).
      if line.trimmingCharacters(in: .whitespaces).isEmpty { section = "" }
      guard line.hasPrefix("  ") else { continue }
      let body = line.dropFirst(2)
      switch section {
      case "OPTIONS:":
        guard body.hasPrefix("-"), let option = firstLongOption(in: String(body)) else { continue }
        command.longOptions.append(option)
      case "SUBCOMMANDS:":
        guard let first = body.first, first.isLetter, let word = body.split(separator: " ").first else { continue }
        command.subcommands.append(String(word))
      default:
        continue
      }
    }
    return command
  }

  static func firstLongOption(in row: String) -> String? {
    guard let start = row.range(of: "--") else { return nil }
    let name = row[start.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" }
    return name.isEmpty ? nil : String(name)
  }

  /// The root command and every command below it, as `--help` lists them.
  static func allCommands() throws -> [Command] {
    var result: [Command] = []
    var queue = [["vpnstat"]]
    while !queue.isEmpty {
      let command = try help(queue.removeFirst())
      result.append(command)
      queue += command.subcommands.map { command.path + [$0] }
    }
    return result
  }

  /// True when `text` holds `prefix + name` not followed by another name character, so that
  /// `--only` is not found inside `--only-something`.
  static func contains(_ text: String, _ prefix: String, _ name: String, nameCharacters: (Character) -> Bool) -> Bool {
    var searchRange = text.startIndex..<text.endIndex
    while let found = text.range(of: prefix + name, range: searchRange) {
      if found.upperBound == text.endIndex || !nameCharacters(text[found.upperBound]) { return true }
      searchRange = found.upperBound..<text.endIndex
    }
    return false
  }

  static func optionCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "-" }

  static func manHasOption(_ text: String, _ name: String) -> Bool {
    contains(text, "Fl -", name, nameCharacters: optionCharacter)
      || contains(text, "\\-\\-", name, nameCharacters: optionCharacter)
  }

  /// The man page's `.Ss` blocks by title: from the `.Ss` line to the next `.Ss` or `.Sh`.
  static func manSubsections(_ page: String) -> [String: String] {
    var blocks: [String: String] = [:]
    var title: String?
    var body = ""
    func close() {
      if let title { blocks[title] = body }
    }
    for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix(".Ss ") || line.hasPrefix(".Sh ") {
        close()
        title =
          line.hasPrefix(".Ss ") ? line.dropFirst(4).trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) : nil
        body = ""
      } else {
        body += line + "\n"
      }
    }
    close()
    return blocks
  }

  /// The man page's `.Sh` section named `name`, up to the next `.Sh`.
  static func manSection(_ page: String, _ name: String) -> String? {
    var inside = false
    var body: String?
    for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix(".Sh ") {
        if inside { break }
        let title = line.dropFirst(4).trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        inside = title == name
        if inside { body = "" }
        continue
      }
      if inside { body! += line + "\n" }
    }
    return body
  }

  /// The man block for `path`: the most specific of `vpnstat session check`, `vpnstat session`
  /// that the page has.
  static func candidates(_ path: [String]) -> [String] {
    (2...path.count).reversed().map { path.prefix($0).joined(separator: " ") }
  }

  /// Whether `page` documents every option of every command in `commands`: the problems found.
  static func undocumentedOptions(_ commands: [Command], page: String) -> [String] {
    var problems: [String] = []
    let blocks = manSubsections(page)
    for option in commands[0].longOptions where !manHasOption(page, option) {
      problems.append("man/vpnstat.1 never mentions --\(option) (as Fl -\(option))")
    }
    for command in commands.dropFirst() {
      guard let title = candidates(command.path).first(where: { blocks[$0] != nil }) else {
        problems.append("man/vpnstat.1 has no '.Ss \(command.name)' section")
        continue
      }
      for option in command.longOptions where option != "help" && !manHasOption(blocks[title]!, option) {
        problems.append("man/vpnstat.1: '.Ss \(title)' does not document --\(option) of '\(command.name)'")
      }
    }
    return problems
  }

  @Test("every command --help lists has a section in man/vpnstat.1, with every option it prints")
  func everyOptionIsDocumented() throws {
    let commands = try Self.allCommands()
    let names = commands.map(\.name)
    // The parser of --help must find what is there, or this test would pass on nothing.
    try #require(names.contains("vpnstat status") && names.contains("vpnstat session check"), "commands read: \(names)")
    try #require(commands.first { $0.name == "vpnstat enforce" }?.longOptions.contains("exec") == true)
    let page = try Self.text(Self.manPage)
    let problems = Self.undocumentedOptions(commands, page: page)
    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")

    // The check can fail: the page without one option's lines misses that option, by name.
    let enforce = try #require(page.range(of: ".Ss vpnstat enforce\n"))
    let cut = page[enforce.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
      .filter { !$0.contains("Fl -exec-timeout") }.joined(separator: "\n")
    let withoutOption = Self.undocumentedOptions(commands, page: String(page[..<enforce.upperBound]) + cut)
    #expect(
      withoutOption.contains { $0.contains("--exec-timeout of 'vpnstat enforce'") },
      "a page without --exec-timeout passed: \(withoutOption)")
  }

  // MARK: - (c) every exit status

  /// The statuses `ExitStatus.swift` defines: every `case name = NN`.
  static func definedExitStatuses() throws -> [Int32] {
    let source = try text(
      Built.packageRoot.appendingPathComponent("Sources/VPNStatCommandLine/ExitStatus.swift").path)
    var statuses: [Int32] = []
    for line in source.split(separator: "\n") {
      let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
      guard words.count == 4, words[0] == "case", words[2] == "=", let value = Int32(words[3]) else { continue }
      statuses.append(value)
    }
    return statuses
  }

  @Test("every exit status the code defines is documented in man/vpnstat.1")
  func everyExitStatusIsDocumented() throws {
    let statuses = try Self.definedExitStatuses()
    // The parser of ExitStatus.swift must find exactly what the enum has.
    #expect(Set(statuses) == Set(ExitStatus.allCases.map(\.rawValue)), "parsed \(statuses)")
    let page = try Self.text(Self.manPage)
    let manExit = try #require(Self.manSection(page, "EXIT STATUS"), "man/vpnstat.1 has no EXIT STATUS section")
    let manItems = Set(manExit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
    for status in statuses {
      let inManPage = manItems.contains(".It \(status)")
      #expect(inManPage, "man/vpnstat.1 EXIT STATUS has no '.It \(status)'")
    }
  }

  // MARK: - (d) every JSON key

  /// Every key of every object in `value`, recursively.
  static func keys(of value: Any) -> Set<String> {
    var found = Set<String>()
    if let object = value as? [String: Any] {
      for (key, inner) in object {
        found.insert(key)
        found.formUnion(keys(of: inner))
      }
    } else if let array = value as? [Any] {
      for element in array { found.formUnion(keys(of: element)) }
    }
    return found
  }

  static func jsonKeys(_ arguments: [String]) throws -> Set<String> {
    let result = try run(Built.vpnstat, arguments, environment: environment)
    guard result.status == 0 else {
      throw TestSetupError("vpnstat \(arguments.joined(separator: " ")) exited \(result.status): \(result.errors)")
    }
    return keys(of: try JSONSerialization.jsonObject(with: result.stdout))
  }

  @Test(
    "every key of status, session, history, alert and connect JSON from real runs is documented in man/vpnstat.1"
  )
  func everyJSONKeyIsDocumented() throws {
    // A fixture sysfs tree, so the run does not depend on this machine's interfaces: a tunnel,
    // a Wi-Fi device, loopback, and one with garbage counters (a problem entry).
    let sysfs = try SysfsFixture()
    try sysfs.add("wg0", index: 7, rx: 10_000, tx: 2_000, type: 65534, uevent: "DEVTYPE=wireguard")
    try sysfs.add("wlan0", index: 3, uevent: "DEVTYPE=wlan", directories: ["phy80211", "device"])
    try sysfs.add("lo", index: 1, type: 772)
    try sysfs.add("bad0", index: 9, attributes: ["statistics/rx_bytes": "garbage\n"])
    let directory = try TemporaryDirectory("docs")
    let db = directory.file("vpnstat.db")
    let fixture = ["--db", db, "--sysfs-root", sysfs.directory.path]
    for rx: UInt64 in [10_000, 50_000] {
      try sysfs.add("wg0", index: 7, rx: rx, tx: rx / 5, type: 65534, uevent: "DEVTYPE=wireguard")
      let recorded = try run(Built.vpnstat, ["record", "--count", "1"] + fixture, environment: Self.environment)
      try #require(recorded.status == 0, "vpnstat record: \(recorded.errors)")
    }
    // A window and a stop record, as an enforcer would leave them, so that the session's
    // usage and last_stop objects are filled.
    do {
      let store = try #require(try Store.open(StoreLocation(path: db), intent: .write))
      let now = SystemTimeSource().now().wall
      try store.updateSession { record in
        record.window = SessionWindow.open(
          at: now, lengths: SessionLengths(session: .seconds(600), pause: .seconds(600)))
        record.tunnel = InterfaceName("wg0")
        record.dataCap = DataCap(limitBytes: 1 << 30, period: UsagePeriod(.month, monthStartDay: 15))
      }
      try store.recordStop(
        StopRecord(at: now, interface: InterfaceName("wg0"), reason: .user, detail: "documentation test"))
    }

    let status = try Self.jsonKeys(["status", "--json", "--rate", "100ms"] + fixture)
    let session = try Self.jsonKeys(["session", "--json", "--db", db])
    let history = try Self.jsonKeys(["history", "--json", "--five-minutes", "--by", "interface", "--db", db])
      .union(try Self.jsonKeys(["history", "--json", "--months", "--month-start-day", "15", "--db", db]))
      .union(try Self.jsonKeys(["history", "--json", "--top", "3", "--db", db]))
    let alert = try Self.jsonKeys(["alert", "--json", "--limit", "1GB", "-i", "wg0"] + fixture)
    // connect's object, as the gate refuses it in a pause (nothing can be started here): every
    // key is there whatever the outcome.
    let paused = directory.file("paused.db")
    do {
      let store = try #require(try Store.open(StoreLocation(path: paused), intent: .write))
      try store.updateSession { record in
        record.window = SessionWindow.open(
          at: SystemTimeSource().now().wall - .seconds(660),
          lengths: SessionLengths(session: .seconds(600), pause: .seconds(600)))
      }
    }
    // A wg-quick configuration, so that the name names a tunnel (a typo would be 69).
    let configurations = directory.file("wireguard")
    try FileManager.default.createDirectory(atPath: configurations, withIntermediateDirectories: false)
    chmod(configurations, 0o755)
    try Data("[Interface]\n".utf8).write(to: URL(fileURLWithPath: configurations + "/wgdoc0.conf"))
    chmod(configurations + "/wgdoc0.conf", 0o600)
    let refused = try run(
      Built.vpnstat, ["connect", "wgdoc0", "--wg-quick-dir", configurations, "--json", "--db", paused],
      environment: Self.environment)
    try #require(refused.status == 75, "connect in the pause: \(refused.status) \(refused.errors)")
    let connect = Self.keys(of: try JSONSerialization.jsonObject(with: refused.stdout))
    // The runs must have filled what this test is meant to see.
    for key in ["usage", "last_stop", "reason", "detail", "message", "total_rx_bytes", "now"] {
      try #require(status.contains(key), "status --json lacks '\(key)': \(status.sorted())")
    }
    try #require(session.contains("session") && history.contains("buckets") && history.contains("start"))
    for key in ["data_cap", "used_bytes", "current", "projected_rx_bytes", "order"] {
      try #require(session.union(history).contains(key), "session or history --json lacks '\(key)'")
    }
    try #require(alert.contains("selected_interfaces") && alert.contains("limit_bytes"), "\(alert.sorted())")
    try #require(connect.contains("waited_for") && connect.contains("recorded"), "\(connect.sorted())")
    // The refusal connect recorded there, as the session shows it.
    let refusal = try Self.jsonKeys(["session", "--json", "--db", paused])
    try #require(
      refusal.contains("last_refusal") && refusal.contains("until") && refusal.contains("by"), "\(refusal.sorted())")

    let page = try Self.text(Self.manPage)
    let manJSON = try #require(Self.manSection(page, "JSON OUTPUT"), "man/vpnstat.1 has no JSON OUTPUT section")
    func keyCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }
    for key in status.union(session).union(history).union(alert).union(connect).union(refusal).sorted() {
      let inManPage = Self.contains(manJSON, "Cm ", key, nameCharacters: keyCharacter)
      #expect(inManPage, "man/vpnstat.1 JSON OUTPUT does not document '\(key)' (as Cm \(key))")
    }
  }

  // MARK: - (e) examples that do what they say

  @Test(
    "no example acts on `alert`'s status with `||`: any non-zero status would read as crossed, a missing database (69) and a typo (64) too"
  )
  func alertExamplesTestForOne() throws {
    let files = [
      Self.readme, Self.manPage, Self.configurationPage, Self.guide,
      Built.packageRoot.appendingPathComponent("contrib/README.md").path,
    ]
    for file in files {
      let lines = try Self.text(file).split(separator: "\n", omittingEmptySubsequences: false)
      for (number, line) in lines.enumerated() {
        guard let alert = line.range(of: "alert") else { continue }
        let after = line[alert.upperBound...]
        #expect(
          !after.contains("||") && !after.contains("\\(br\\(br"),
          "\(file):\(number + 1): `alert … ||` acts on every non-zero status; test `[ $? -eq 1 ]`: \(line)")
        // A crontab line needs its five schedule fields.
        if after.contains("mail") && !line.contains("if [") {
          let fields = line.split(separator: " ").prefix(5)
          #expect(
            fields.count == 5 && fields.allSatisfy { $0.allSatisfy { "0123456789*/,-".contains($0) } },
            "\(file):\(number + 1): a cron line without a schedule: \(line)")
        }
      }
    }
  }

  // MARK: - (f) every configuration setting

  /// The settings the configuration file's parser takes, as its error for an unknown one lists
  /// them: what a user is told is settable is what the page must document.
  static func settableNames() throws -> [String] {
    let directory = try TemporaryDirectory("settings")
    let config = directory.file("vpnstat.conf")
    try Data("vpnstat-documentation-test = 1\n".utf8).write(to: URL(fileURLWithPath: config))
    let sysfs = try SysfsFixture()
    let result = try run(
      Built.vpnstat, ["status", "--sysfs-root", sysfs.directory.path], environment: ["VPNSTAT_CONFIG": config])
    guard result.status == 64, let start = result.errors.range(of: "(settable: "),
      let end = result.errors[start.upperBound...].firstIndex(of: ")")
    else {
      throw TestSetupError("an unknown setting did not list the settable ones: \(result.status) \(result.errors)")
    }
    return result.errors[start.upperBound..<end].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
  }

  /// The names `page` documents under SETTINGS: every `.It Cm name` line.
  static func documentedSettings(_ page: String) -> Set<String> {
    let settings = manSection(page, "SETTINGS") ?? ""
    return Set(
      settings.split(separator: "\n").compactMap { line -> String? in
        guard line.hasPrefix(".It Cm ") else { return nil }
        return line.dropFirst(".It Cm ".count).split(separator: " ").first.map(String.init)
      })
  }

  @Test("every setting the configuration file takes is documented in man/vpnstat.conf.5, and nothing else is")
  func everySettingIsDocumented() throws {
    let settable = try Self.settableNames()
    // The list must be what the parser holds, or this test would pass on nothing.
    for name in ["db", "class", "session-length", "exec-timeout", "bits"] {
      try #require(settable.contains(name), "settable: \(settable)")
    }
    let documented = Self.documentedSettings(try Self.text(Self.configurationPage))
    for name in settable {
      #expect(documented.contains(name), "man/vpnstat.conf.5 SETTINGS has no '.It Cm \(name)'")
    }
    for name in documented.subtracting(settable) {
      Issue.record("man/vpnstat.conf.5 documents '\(name)', which the configuration file does not take")
    }
  }

  // MARK: - (g) the README: short, its two commands, links that lead somewhere

  /// The commands `.ci/run` runs, one a line, comments and `set`/`cd` left out.
  static func ciCommands() throws -> [String] {
    try text(Built.packageRoot.appendingPathComponent(".ci/run").path).split(separator: "\n")
      .map { $0.trimmingCharacters(in: .whitespaces) }
      .filter { !$0.isEmpty && !$0.hasPrefix("#") && !$0.hasPrefix("set ") && !$0.hasPrefix("cd ") }
  }

  /// The lines of the README's fenced code blocks.
  static func codeLines(_ markdown: String) -> [String] {
    var inFence = false
    var lines: [String] = []
    for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("```") {
        inFence.toggle()
      } else if inFence {
        lines.append(String(line))
      }
    }
    return lines
  }

  @Test(
    "the README's two commands are CI's: the one that installs what running needs, builds and runs watch; the one that adds what the tests need and runs the whole suite"
  )
  func readmeCommandsAreCI() throws {
    let ci = try Self.ciCommands()
    // CI installs what is missing, then runs the whole suite, with these very lines.
    try #require(ci.first == "scripts/install-deps --test", ".ci/run: \(ci)")
    try #require(ci.dropFirst().first == "swift test", ".ci/run: \(ci)")
    let code = Self.codeLines(try Self.text(Self.readme))
    for line in ["scripts/install-deps && swift run -c release vpnstat watch", "\(ci[0]) && \(ci[1])"] {
      #expect(code.contains(line), "README.md has no code line '\(line)'")
    }
  }

  @Test(
    "what running needs installs no service and none of the test stack; --test adds it, and the tests' own packages are in it"
  )
  func installDepsSplit() throws {
    let script = Built.packageRoot.appendingPathComponent("scripts/install-deps").path
    let running = try run("/bin/sh", [script, "--list"])
    let testing = try run("/bin/sh", [script, "--test", "--list"])
    try #require(running.status == 0 && testing.status == 0, "\(running.errors)\(testing.errors)")
    let forRunning = Set(running.output.split(separator: "\n").map(String.init))
    let test = Set(testing.output.split(separator: "\n").map(String.init))
    #expect(forRunning.isSubset(of: test), "\(forRunning.subtracting(test))")
    for needed in ["libpcap-dev", "libsqlite3-dev", "zlib1g-dev", "libncurses6"] {
      #expect(forRunning.contains(needed), "\(needed)")
    }
    // Services (NetworkManager takes over a machine's network), a browser, the VPN software.
    for heavy in [
      "network-manager", "network-manager-openvpn", "openvpn", "dbus", "systemd", "chromium", "prometheus",
      "wireguard-go", "xvfb", "dunst", "lintian", "debootstrap", "zsh", "fish",
    ] {
      #expect(!forRunning.contains(heavy), "scripts/install-deps installs \(heavy) for running")
      #expect(test.contains(heavy), "scripts/install-deps --test lacks \(heavy)")
    }
    // Every package a test names as the home of a tool it needs is in the --test list.
    for package in Tool.packages.values {
      #expect(test.contains(package), "a test needs \(package), which --test does not install")
    }
    let wrong = try run("/bin/sh", [script, "--tset"])
    #expect(wrong.status == 64 && wrong.errors.contains("unknown option '--tset'"), "\(wrong.errors)")
  }

  @Test("the README is a page a new user reads in three minutes: at most 250 lines")
  func readmeIsShort() throws {
    let lines = try Self.text(Self.readme).split(separator: "\n", omittingEmptySubsequences: false)
    #expect(
      lines.count <= 250, "README.md has \(lines.count) lines; the reference belongs in man/, tasks in docs/guide.md")
  }

  /// GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as
  /// `-`.
  static func anchor(_ heading: String) -> String {
    let title = heading.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces).lowercased()
    return String(
      title.compactMap { c -> Character? in
        if c == " " { return "-" }
        return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
      })
  }

  /// The anchors of a Markdown file's headings (outside code blocks).
  static func anchors(_ markdown: String) -> Set<String> {
    var inFence = false
    var found = Set<String>()
    for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("```") { inFence.toggle() }
      if !inFence, line.hasPrefix("#") { found.insert(anchor(String(line))) }
    }
    return found
  }

  /// The relative links of a Markdown file, `[text](target)`, outside code blocks.
  static func relativeLinks(_ markdown: String) -> [String] {
    var inFence = false
    var links: [String] = []
    for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix("```") { inFence.toggle() }
      if inFence { continue }
      for match in line.matches(of: /\]\(([^)\s]+)\)/) {
        let target = String(match.output.1)
        if !target.contains("://") && !target.hasPrefix("mailto:") { links.append(target) }
      }
    }
    return links
  }

  /// The problems of `file`'s relative links: a file that does not exist, an anchor no heading
  /// of the target has.
  static func brokenLinks(in source: URL) throws -> [String] {
    let file = source.path.replacingOccurrences(of: Built.packageRoot.path + "/", with: "")
    let markdown = try text(source.path)
    var problems: [String] = []
    for link in relativeLinks(markdown) {
      let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
      let path = String(parts[0])
      let target = path.isEmpty ? source : source.deletingLastPathComponent().appendingPathComponent(path)
      guard FileManager.default.fileExists(atPath: target.path) else {
        problems.append("\(file): \(link): no file \(target.path)")
        continue
      }
      if parts.count == 2, target.pathExtension == "md" {
        let fragment = String(parts[1])
        if !anchors(try text(target.path)).contains(fragment) {
          problems.append("\(file): \(link): no heading with the anchor #\(fragment)")
        }
      }
    }
    return problems
  }

  @Test("the README maps the docs, and every relative link of the Markdown docs leads to a file and heading that exist")
  func docsMapResolves() throws {
    let readme = try Self.text(Self.readme)
    let links = Set(Self.relativeLinks(readme).map { String($0.split(separator: "#").first ?? "") })
    for document in [
      "man/vpnstat.1", "man/vpnstat.conf.5", "docs/guide.md", "CONTRIBUTING.md", "CHANGELOG.md", "ARCHITECTURE.md",
      "LICENSE", "contrib/README.md",
    ] {
      #expect(links.contains(document), "README.md does not link to \(document)")
    }
    var problems: [String] = []
    for file in ["README.md", "docs/guide.md", "CONTRIBUTING.md", "contrib/README.md", "docs/real-vpns.md"] {
      problems += try Self.brokenLinks(in: Built.packageRoot.appendingPathComponent(file))
    }
    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    // The check can fail: a link to a file or heading that is not there is reported.
    #expect(Self.anchor("### `vpnstat connect` and `disconnect`") == "vpnstat-connect-and-disconnect")
    let directory = try TemporaryDirectory("links")
    try Data("# Here\n[a](missing.md) [b](#here) [c](#nowhere)\n".utf8).write(
      to: URL(fileURLWithPath: directory.file("doc.md")))
    let broken = try Self.brokenLinks(in: URL(fileURLWithPath: directory.file("doc.md")))
    #expect(
      broken.count == 2 && broken.allSatisfy { $0.contains("missing.md") || $0.contains("#nowhere") }, "\(broken)")
  }
}
