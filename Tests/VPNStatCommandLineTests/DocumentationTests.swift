import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// README.md and man/vpnstat.1 against the code: the page is clean for mandoc, and every command
/// and option `--help` prints, every exit status `ExitStatus` defines and every JSON key a real
/// run prints is documented in both.
///
/// Where the documents must say it:
/// - options: in the command's own section — the man page's `.Ss vpnstat status` block (as
///   `Fl -name`, or `\-\-name`), the README's heading holding `` `vpnstat status` `` — or, for
///   `session check` and the like, the parent command's section when there is no own one;
///   `--help` and `--version` anywhere;
/// - exit statuses: as `.It NN` under the man page's EXIT STATUS, as a `| NN |` table row under
///   the README's "Exit status";
/// - JSON keys: as `Cm key` under the man page's JSON OUTPUT, in the first cell of a table row
///   (`` | `key` | ``) under the README's "JSON output".
struct DocumentationTests {
  static let mandoc = "/usr/bin/mandoc"
  static let manPage = Built.packageRoot.appendingPathComponent("man/vpnstat.1").path
  static let readme = Built.packageRoot.appendingPathComponent("README.md").path
  /// Never the machine's own configuration file: it could change what commands print.
  static let environment = ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"]

  static func text(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8)
  }

  // MARK: - (a) the man page is clean

  @Test("mandoc -Tlint -Wwarning finds nothing to say about man/vpnstat.1")
  func manPageLints() throws {
    try Tool.require(Self.mandoc)
    let result = try run(Self.mandoc, ["-Tlint", "-Wwarning", Self.manPage])
    #expect(result.status == 0, "mandoc exited \(result.status):\n\(result.output)\(result.errors)")
    #expect(
      result.output.isEmpty && result.errors.isEmpty, "mandoc -Tlint -Wwarning:\n\(result.output)\(result.errors)")
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

  static func readmeHasOption(_ text: String, _ name: String) -> Bool {
    contains(text, "--", name, nameCharacters: optionCharacter)
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

  /// The README's sections: every heading with the text under it, up to the next heading of the
  /// same or a higher level (so a section includes its subsections).
  static func readmeSections(_ readme: String) -> [(heading: String, body: String)] {
    let lines = readme.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    var headings: [(index: Int, level: Int)] = []
    var inFence = false
    for (i, line) in lines.enumerated() {
      if line.hasPrefix("```") { inFence.toggle() }
      if inFence { continue }
      let level = line.prefix { $0 == "#" }.count
      if level > 0, line.dropFirst(level).hasPrefix(" ") { headings.append((i, level)) }
    }
    return headings.enumerated().map { n, heading in
      let end = headings[(n + 1)...].first { $0.level <= heading.level }?.index ?? lines.count
      return (lines[heading.index], lines[(heading.index + 1)..<end].joined(separator: "\n"))
    }
  }

  /// The man block or README section for `path`: the most specific of `vpnstat session check`,
  /// `vpnstat session` that the document has.
  static func candidates(_ path: [String]) -> [String] {
    (2...path.count).reversed().map { path.prefix($0).joined(separator: " ") }
  }

  @Test("every command --help lists has a section in the man page and the README, with every option it prints")
  func everyOptionIsDocumented() throws {
    let commands = try Self.allCommands()
    let names = commands.map(\.name)
    // The parser of --help must find what is there, or this test would pass on nothing.
    try #require(names.contains("vpnstat status") && names.contains("vpnstat session check"), "commands read: \(names)")
    try #require(commands.first { $0.name == "vpnstat enforce" }?.longOptions.contains("exec") == true)
    let page = try Self.text(Self.manPage)
    let readme = try Self.text(Self.readme)
    let blocks = Self.manSubsections(page)
    let sections = Self.readmeSections(readme)

    for option in commands[0].longOptions {
      let inManPage = Self.manHasOption(page, option)
      let inReadme = Self.readmeHasOption(readme, option)
      #expect(inManPage, "man/vpnstat.1 never mentions --\(option) (as Fl -\(option))")
      #expect(inReadme, "README.md never mentions --\(option)")
    }
    for command in commands.dropFirst() {
      let options = command.longOptions.filter { $0 != "help" }
      if let title = Self.candidates(command.path).first(where: { blocks[$0] != nil }) {
        for option in options {
          let documented = Self.manHasOption(blocks[title]!, option)
          #expect(documented, "man/vpnstat.1: '.Ss \(title)' does not document --\(option) of '\(command.name)'")
        }
      } else {
        Issue.record("man/vpnstat.1 has no '.Ss \(command.name)' section")
      }
      if let section = Self.candidates(command.path).lazy.compactMap({ title in
        sections.first { $0.heading.contains("`\(title)`") }
      }).first {
        for option in options {
          let documented = Self.readmeHasOption(section.body, option)
          #expect(
            documented, "README.md: section '\(section.heading)' does not document --\(option) of '\(command.name)'")
        }
      } else {
        Issue.record("README.md has no section whose heading holds `\(command.name)`")
      }
    }
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

  @Test("every exit status the code defines is documented in the man page and the README")
  func everyExitStatusIsDocumented() throws {
    let statuses = try Self.definedExitStatuses()
    // The parser of ExitStatus.swift must find exactly what the enum has.
    #expect(Set(statuses) == Set(ExitStatus.allCases.map(\.rawValue)), "parsed \(statuses)")
    let page = try Self.text(Self.manPage)
    let readme = try Self.text(Self.readme)
    let manExit = try #require(Self.manSection(page, "EXIT STATUS"), "man/vpnstat.1 has no EXIT STATUS section")
    let readmeExit = try #require(
      Self.readmeSections(readme).first { $0.heading.hasPrefix("## Exit status") }?.body,
      "README.md has no '## Exit status' section")
    let manItems = Set(manExit.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) })
    let readmeRows = readmeExit.split(separator: "\n").map { line in
      line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().first.map {
        $0.trimmingCharacters(in: CharacterSet(charactersIn: " `"))
      } ?? ""
    }
    for status in statuses {
      let inManPage = manItems.contains(".It \(status)")
      let inReadme = readmeRows.contains("\(status)")
      #expect(inManPage, "man/vpnstat.1 EXIT STATUS has no '.It \(status)'")
      #expect(inReadme, "README.md 'Exit status' has no row for \(status)")
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
    "every key of status, session, history, alert and connect JSON from real runs is documented in the man page and the README"
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
    let refused = try run(
      Built.vpnstat, ["connect", "vpnstat-documentation", "--json", "--db", paused], environment: Self.environment)
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

    let page = try Self.text(Self.manPage)
    let readme = try Self.text(Self.readme)
    let manJSON = try #require(Self.manSection(page, "JSON OUTPUT"), "man/vpnstat.1 has no JSON OUTPUT section")
    let readmeJSON = try #require(
      Self.readmeSections(readme).first { $0.heading.hasPrefix("## JSON output") }?.body,
      "README.md has no '## JSON output' section")
    let firstCells = readmeJSON.split(separator: "\n").filter { $0.hasPrefix("|") }.map {
      $0.split(separator: "|", omittingEmptySubsequences: false).dropFirst().first.map(String.init) ?? ""
    }
    func keyCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }
    for key in status.union(session).union(history).union(alert).union(connect).sorted() {
      let inManPage = Self.contains(manJSON, "Cm ", key, nameCharacters: keyCharacter)
      let inReadme = firstCells.contains { $0.contains("`\(key)`") }
      #expect(inManPage, "man/vpnstat.1 JSON OUTPUT does not document '\(key)' (as Cm \(key))")
      #expect(inReadme, "README.md 'JSON output' has no table row for '\(key)'")
    }
  }

  // MARK: - (e) examples that do what they say

  @Test(
    "no example acts on `alert`'s status with `||`: any non-zero status would read as crossed, a missing database (69) and a typo (64) too"
  )
  func alertExamplesTestForOne() throws {
    let files = [Self.readme, Self.manPage, Built.packageRoot.appendingPathComponent("contrib/README.md").path]
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
}
