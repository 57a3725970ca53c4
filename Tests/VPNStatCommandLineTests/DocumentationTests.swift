import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The documents against the code. The reference is the man pages in `man/`, split as git's
/// and ip's are: vpnstat(1) the overview (what every command shares, the common options, the
/// commands and their pages, the exit statuses, the environment, the files), a page per group
/// of commands (vpnstat-status(1), vpnstat-enforce(8), …), vpnstat-json(7), vpnstat-tunnels(7)
/// and vpnstat.conf(5). They are checked whole: every page is clean for mandoc, names itself,
/// has a SEE ALSO and every section it refers to exists; every command and option `--help`
/// prints is on a page, every option that has a setting names it, every exit status
/// `ExitStatus` defines is in vpnstat(1), every JSON key a real run prints is in vpnstat-json(7),
/// every setting the configuration file's parser takes is in vpnstat.conf(5); vpnstat(1) stays
/// an overview (at most 800 lines); and `make install` and the .deb install every page. The
/// README is the short page that points at them: it holds its two commands (the ones CI runs)
/// and its links lead to files and headings that exist.
///
/// Where the man pages must say it:
/// - commands: a `.Ss vpnstat status` block on exactly one page — or, for `session check` and
///   the like, the parent command's block when there is no own one; vpnstat(1)'s COMMANDS names
///   each command with that page (`Xr vpnstat-status 1`);
/// - options: in the command's block, as `Fl -name` (or `\-\-name`); `--help` and `--version`
///   in vpnstat(1); an option declared by several commands alike also under vpnstat(1)'s COMMON
///   OPTIONS;
/// - an option's setting: in the option's item, as `Cm name` on the line that names
///   `Xr vpnstat.conf 5` (`.No Setting: Cm month-start-day No in Xr vpnstat.conf 5 .`);
/// - exit statuses: as `.It NN` under vpnstat(1)'s EXIT STATUS;
/// - JSON keys: as `Cm key` under vpnstat-json(7)'s DESCRIPTION;
/// - settings: as `.It Cm name` under vpnstat.conf(5)'s SETTINGS.
struct DocumentationTests {
  static let mandoc = "/usr/bin/mandoc"
  static let manDirectory = Built.packageRoot.appendingPathComponent("man")
  /// vpnstat(1): the overview, with the exit statuses.
  static let manPage = manDirectory.appendingPathComponent("vpnstat.1").path
  /// vpnstat-json(7): the JSON documents.
  static let jsonPage = manDirectory.appendingPathComponent("vpnstat-json.7").path
  static let configurationPage = manDirectory.appendingPathComponent("vpnstat.conf.5").path
  static let readme = Built.packageRoot.appendingPathComponent("README.md").path
  static let guide = Built.packageRoot.appendingPathComponent("docs/guide.md").path
  /// Never the machine's own configuration file: it could change what commands print.
  static let environment = ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"]

  static func text(_ path: String) throws -> String {
    try String(contentsOfFile: path, encoding: .utf8)
  }

  // MARK: - (a) the man pages are clean, and each is a page of its own

  /// The pages in `man/`, by file name (`vpnstat.1`, `vpnstat-status.1`, …, `vpnstat.conf.5`),
  /// sorted: what the checks read and what `make install` and the .deb must install.
  static var pageFiles: [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: manDirectory.path)) ?? []
    return names.filter { $0.wholeMatch(of: /[a-z][a-z.-]*\.[1-8]/) != nil }.sorted()
  }

  /// Every page: its file name and text.
  static func pages() throws -> [(file: String, text: String)] {
    try pageFiles.map { ($0, try text(manDirectory.appendingPathComponent($0).path)) }
  }

  /// A page's name and section from its file name: `vpnstat-status.1` → (`vpnstat-status`, `1`).
  static func nameAndSection(_ file: String) -> (name: String, section: String) {
    let dot = file.lastIndex(of: ".")!
    return (String(file[..<dot]), String(file[file.index(after: dot)...]))
  }

  /// The titles of a page's `.Sh` and `.Ss` sections.
  static func sectionTitles(_ page: String) -> Set<String> {
    Set(
      page.split(separator: "\n").filter { $0.hasPrefix(".Sh ") || $0.hasPrefix(".Ss ") }
        .map { $0.dropFirst(4).trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) })
  }

  /// What is wrong with one page besides what mandoc says: a `.Dt` that is not its file's name and
  /// section (lintian: wrong-manual-section; `man` finds a page by both), a NAME whose first
  /// `.Nm` is not the file's name (the whatis entry), no SEE ALSO, or an `.Sx` that names a
  /// section neither this page has nor, when `in` and an `.Xr` follow it, that page.
  static func pageProblems(file: String, text: String, pages: [(file: String, text: String)]) -> [String] {
    var problems: [String] = []
    let (name, section) = nameAndSection(file)
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if !lines.contains(".Dt \(name.uppercased()) \(section)") {
      problems.append("\(file): no '.Dt \(name.uppercased()) \(section)'")
    }
    let nameSection = manSection(text, "NAME") ?? ""
    if nameSection.split(separator: "\n").first(where: { $0.hasPrefix(".Nm") }).map({
      $0.split(separator: " ").dropFirst().first.map(String.init) != name
    }) ?? true {
      problems.append("\(file): NAME does not start with '.Nm \(name)'")
    }
    if manSection(text, "SEE ALSO") == nil { problems.append("\(file): no SEE ALSO") }
    let titles = Dictionary(
      pages.map { page in (page.file, sectionTitles(page.text)) }, uniquingKeysWith: { first, _ in first })
    for (index, line) in lines.enumerated() where line.hasPrefix(".Sx ") {
      // The title is every word up to the first that is punctuation alone.
      let title = line.dropFirst(4).split(separator: " ")
        .prefix { $0.wholeMatch(of: /[,.;:()\[\]|!?]+/) == nil }.joined(separator: " ")
      var target = file
      if index + 2 < lines.count, lines[index + 1] == "in", lines[index + 2].hasPrefix(".Xr ") {
        let words = lines[index + 2].split(separator: " ")
        if words.count >= 3 { target = "\(words[1]).\(words[2])" }
      }
      guard let targetTitles = titles[target] else {
        problems.append("\(file):\(index + 1): '.Sx \(title)' refers to \(target), which man/ does not have")
        continue
      }
      if !targetTitles.contains(title) {
        problems.append("\(file):\(index + 1): '.Sx \(title)': \(target) has no such section")
      }
    }
    return problems
  }

  @Test(
    "every man page is clean for mandoc -Tlint -Wwarning, names itself, has a SEE ALSO, and every section it refers to exists",
    arguments: DocumentationTests.pageFiles)
  func manPageLints(page: String) throws {
    try Tool.require(Self.mandoc)
    let path = Self.manDirectory.appendingPathComponent(page).path
    let result = try run(Self.mandoc, ["-Tlint", "-Wwarning", path])
    #expect(result.status == 0, "mandoc exited \(result.status) on \(page):\n\(result.output)\(result.errors)")
    #expect(
      result.output.isEmpty && result.errors.isEmpty,
      "mandoc -Tlint -Wwarning \(page):\n\(result.output)\(result.errors)")
    let problems = Self.pageProblems(file: page, text: try Self.text(path), pages: try Self.pages())
    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
  }

  @Test(
    "the reference is split: vpnstat(1) an overview of at most 800 lines, a page per group of commands, the JSON, the tunnels, the configuration file"
  )
  func referenceIsSplit() throws {
    let files = Self.pageFiles
    // The pages the checks run on must be found, or every check above would pass on nothing.
    for page in ["vpnstat.1", "vpnstat.conf.5", "vpnstat-json.7", "vpnstat-tunnels.7", "vpnstat-enforce.8"] {
      try #require(files.contains(page), "man/ has no \(page): \(files)")
    }
    let overview = try Self.text(Self.manPage)
    let lines = overview.reduce(0) { $0 + ($1 == "\n" ? 1 : 0) }
    #expect(
      lines <= 800,
      "man/vpnstat.1 has \(lines) lines: it is the overview; a command's text belongs on its command's page")

    // The checks can fail: a reference to a section that is not there, a page named otherwise.
    let pages = try Self.pages()
    let status = try #require(pages.first { $0.file == "vpnstat-status.1" }?.text)
    let broken =
      status.replacingOccurrences(of: ".Dt VPNSTAT-STATUS 1", with: ".Dt VPNSTAT 1")
      + ".Sx No Such Section\n.Sx Trust\nin\n.Xr vpnstat-tunnels 7 .\n.Sx Trust\nin\n.Xr vpnstat 1 .\n"
    let problems = Self.pageProblems(file: "vpnstat-status.1", text: broken, pages: pages)
    #expect(problems.count == 3, "\(problems)")
    #expect(problems.contains { $0.contains("no '.Dt VPNSTAT-STATUS 1'") }, "\(problems)")
    #expect(problems.contains { $0.contains("'.Sx No Such Section'") }, "\(problems)")
    #expect(problems.contains { $0.contains("'.Sx Trust': vpnstat.1 has no such section") }, "\(problems)")
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

  /// The `.Ss` blocks of every page, by title, with the file each is on (a title on two pages is
  /// listed twice).
  static func blocks(_ pages: [(file: String, text: String)]) -> [String: [(file: String, block: String)]] {
    var found: [String: [(file: String, block: String)]] = [:]
    for page in pages {
      for (title, block) in manSubsections(page.text) { found[title, default: []].append((page.file, block)) }
    }
    return found
  }

  /// The words a `Cm` macro of `line` takes: `.No Settings: Cm units No and Cm bits No in …` →
  /// units, bits; `.Cm report , status .` → report, status.
  static func commandWords(_ line: Substring) -> [String] {
    let words = line.split(separator: " ")
    var found: [String] = []
    var inside = false
    for word in words {
      if word == "Cm" || word == ".Cm" {
        inside = true
      } else if word.wholeMatch(of: /\.?[A-Z][a-z][a-z]?/) != nil {
        inside = false
      } else if inside, word.wholeMatch(of: /[,.;:()|]+/) == nil {
        found.append(String(word))
      }
    }
    return found
  }

  /// The items of the top-level lists of `block`: each `.It` line with the lines up to the next
  /// one of its list (nested lists included) or the list's end.
  static func items(_ block: String) -> [(head: Substring, body: [Substring])] {
    var found: [(head: Substring, body: [Substring])] = []
    var depth = 0
    for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
      if line.hasPrefix(".Bl") {
        depth += 1
        if depth == 1 { continue }
      } else if line.hasPrefix(".El") {
        depth -= 1
        if depth == 0 { continue }
      } else if depth == 1, line.hasPrefix(".It") {
        found.append((line, []))
        continue
      }
      if depth >= 1, !found.isEmpty { found[found.count - 1].body.append(line) }
    }
    return found
  }

  /// Whether the option items of `block` name their settings: an item whose `.It` line names an
  /// option in `configurable` names it as a setting (`Cm name`, on a line with `Xr vpnstat.conf
  /// 5`), and a setting an item names is one of its own options' (so a setting that does not
  /// exist, or an option's that has none, is found too).
  static func settingProblems(_ block: String, title: String, configurable: Set<String>) -> [String] {
    var problems: [String] = []
    for item in items(block) {
      let options = item.head.matches(of: /Fl -([a-z0-9-]+)/).map { String($0.output.1) }
      let named = Set(item.body.filter { $0.contains("Xr vpnstat.conf 5") }.flatMap(commandWords))
      for option in options where configurable.contains(option) && !named.contains(option) {
        problems.append("'\(title)': --\(option) does not name its setting (Cm \(option) … Xr vpnstat.conf 5)")
      }
      for setting in named.sorted() where !(options.contains(setting) && configurable.contains(setting)) {
        problems.append("'\(title)': the item of \(options.map { "--" + $0 }) names a setting '\(setting)' it has not")
      }
    }
    return problems
  }

  /// The options each command declares configurable, by its path (`vpnstat session check`), from
  /// the declarations the parser and the configuration file use.
  static func configurableOptions() -> [String: Set<String>] {
    var found: [String: Set<String>] = [:]
    func visit(_ spec: CommandSpec, path: [String]) {
      found[path.joined(separator: " ")] = Set(spec.options.filter(\.configurable).map(\.long))
      for sub in spec.subcommands { visit(sub, path: path + [sub.name]) }
    }
    visit(VPNStat.rootSpec, path: ["vpnstat"])
    return found
  }

  /// Whether `pages` document every command in `commands` on exactly one page, each of its options
  /// in its block, and each setting in its option's item: the problems found.
  static func undocumentedOptions(_ commands: [Command], pages: [(file: String, text: String)]) -> [String] {
    var problems: [String] = []
    let blocks = blocks(pages)
    let overview = pages.first { $0.file == "vpnstat.1" }?.text ?? ""
    let configurable = configurableOptions()
    for option in commands[0].longOptions where !manHasOption(overview, option) {
      problems.append("man/vpnstat.1 never mentions --\(option) (as Fl -\(option))")
    }
    for command in commands.dropFirst() {
      guard let title = candidates(command.path).first(where: { blocks[$0] != nil }) else {
        problems.append("no page of man/ has a '.Ss \(command.name)' section")
        continue
      }
      let found = blocks[title]!
      if found.count != 1 {
        problems.append("'.Ss \(title)' is on \(found.count) pages: \(found.map(\.file))")
      }
      for option in command.longOptions where option != "help" && !manHasOption(found[0].block, option) {
        problems.append("man/\(found[0].file): '.Ss \(title)' does not document --\(option) of '\(command.name)'")
      }
      if title == command.name {
        problems += settingProblems(found[0].block, title: title, configurable: configurable[command.name] ?? [])
      }
    }
    return problems
  }

  @Test(
    "every command --help lists has its section on exactly one man page, with every option it prints, each option that has a setting naming it"
  )
  func everyOptionIsDocumented() throws {
    let commands = try Self.allCommands()
    let names = commands.map(\.name)
    // The parser of --help must find what is there, or this test would pass on nothing.
    try #require(names.contains("vpnstat status") && names.contains("vpnstat session check"), "commands read: \(names)")
    try #require(commands.first { $0.name == "vpnstat enforce" }?.longOptions.contains("exec") == true)
    try #require(Self.configurableOptions()["vpnstat report"]?.contains("month-start-day") == true)
    let pages = try Self.pages()
    let problems = Self.undocumentedOptions(commands, pages: pages)
    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")

    // The check can fail: a page without one option's lines misses that option, by name; one
    // whose option does not name its setting, or names another, is found; a section on two pages
    // is found.
    func changed(_ file: String, _ change: (String) -> String) -> [(file: String, text: String)] {
      pages.map { $0.file == file ? ($0.file, change($0.text)) : $0 }
    }
    let withoutOption = Self.undocumentedOptions(
      commands,
      pages: changed("vpnstat-enforce.8") { page in
        page.split(separator: "\n", omittingEmptySubsequences: false)
          .filter { !$0.contains("Fl -exec-timeout") }.joined(separator: "\n")
      })
    #expect(
      withoutOption.contains { $0.contains("--exec-timeout of 'vpnstat enforce'") },
      "a page without --exec-timeout passed: \(withoutOption)")
    let setting = ".No Setting: Cm month-start-day No in Xr vpnstat.conf 5 ."
    let report = try #require(pages.first { $0.file == "vpnstat-report.1" }?.text)
    try #require(report.contains(setting + "\n"))
    let withoutSetting = Self.undocumentedOptions(
      commands, pages: changed("vpnstat-report.1") { $0.replacingOccurrences(of: setting + "\n", with: "") })
    #expect(
      withoutSetting.contains { $0.contains("'vpnstat report': --month-start-day does not name its setting") },
      "\(withoutSetting)")
    let wrongSetting = Self.undocumentedOptions(
      commands,
      pages: changed("vpnstat-report.1") {
        $0.replacingOccurrences(of: setting, with: ".No Setting: Cm month-start No in Xr vpnstat.conf 5 .")
      })
    #expect(wrongSetting.contains { $0.contains("names a setting 'month-start' it has not") }, "\(wrongSetting)")
    let twice = Self.undocumentedOptions(
      commands, pages: changed("vpnstat-flows.8") { $0 + ".Ss vpnstat alert\n.Fl -limit\n" })
    #expect(twice.contains { $0.contains("'.Ss vpnstat alert' is on 2 pages") }, "\(twice)")
  }

  @Test(
    "vpnstat(1) lists every command with the page that documents it, and describes under COMMON OPTIONS every option several commands declare alike, with its setting"
  )
  func overviewListsCommandsAndCommonOptions() throws {
    let commands = try Self.allCommands()
    let pages = try Self.pages()
    let overview = try Self.text(Self.manPage)
    let list = try #require(Self.manSection(overview, "COMMANDS"), "man/vpnstat.1 has no COMMANDS section")
    let blocks = Self.blocks(pages)
    var problems: [String] = []
    let top = commands.filter { $0.path.count == 2 }
    try #require(top.count >= 10, "\(top.map(\.name))")
    for command in top {
      let name = command.path[1]
      guard let item = Self.items(list).first(where: { Self.commandWords($0.head).contains(name) }) else {
        problems.append("vpnstat(1) COMMANDS has no '.It Cm \(name)'")
        continue
      }
      guard let file = blocks[command.name]?.first?.file, file != "vpnstat.1" else { continue }
      let (page, section) = Self.nameAndSection(file)
      if !item.body.contains(where: { $0.hasPrefix(".Xr \(page) \(section)") }) {
        problems.append("vpnstat(1) COMMANDS: \(name) does not point to \(page)(\(section)), where it is")
      }
    }
    // An option several commands declare alike (the same long name and help: one declaration,
    // as CommonOptions has them) is a common option.
    var declarations: [String: Int] = [:]
    func visit(_ spec: CommandSpec) {
      for option in spec.options { declarations[option.long + "\u{0}" + option.help, default: 0] += 1 }
      spec.subcommands.forEach(visit)
    }
    visit(VPNStat.rootSpec)
    let common = Set(declarations.filter { $0.value >= 3 }.map { String($0.key.split(separator: "\u{0}")[0]) })
    try #require(common.isSuperset(of: ["db", "only", "units", "wg-quick-dir"]), "\(common.sorted())")
    let section = try #require(Self.manSection(overview, "COMMON OPTIONS"), "man/vpnstat.1 has no COMMON OPTIONS")
    for option in common.sorted() where option != "help" && !Self.manHasOption(section, option) {
      problems.append("vpnstat(1) COMMON OPTIONS does not describe --\(option)")
    }
    problems += Self.settingProblems(section, title: "COMMON OPTIONS", configurable: VPNStat.settable)
    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
  }

  @Test(
    "make install puts every page of man/ in its section's directory, and make uninstall removes it"
  )
  func pagesAreInstalled() throws {
    try Tool.require("/usr/bin/make")
    let files = Self.pageFiles
    try #require(files.count > 8 && files.contains("vpnstat-enforce.8"), "\(files)")
    let stage = try TemporaryDirectory("install")
    // The debug build stands in for the release binary install copies (and asks for the
    // completions); everything goes under the stage.
    let make = [
      "-s", "-C", Built.packageRoot.path, "BINARY=\(Built.vpnstat)", "DESTDIR=\(stage.path)", "PREFIX=/usr",
    ]
    let installed = try run("/usr/bin/make", make + ["install"])
    try #require(installed.status == 0, "make install: \(installed.output)\(installed.errors)")
    let manDirectory = stage.url.appendingPathComponent("usr/share/man")
    var problems: [String] = []
    for file in files {
      let section = Self.nameAndSection(file).section
      let path = manDirectory.appendingPathComponent("man\(section)/\(file)").path
      let source = Self.manDirectory.appendingPathComponent(file).path
      if FileManager.default.contents(atPath: path) != FileManager.default.contents(atPath: source) {
        problems.append("make install did not install man/\(file) as \(path)")
      }
    }
    // Nothing else: every installed page is one of man/.
    let installedPages =
      FileManager.default.enumerator(atPath: manDirectory.path)?.compactMap { $0 as? String }
      .filter { $0.contains(".") } ?? []
    #expect(
      Set(installedPages.map { ($0 as NSString).lastPathComponent }) == Set(files), "installed: \(installedPages)")
    let uninstalled = try run("/usr/bin/make", make + ["uninstall"])
    try #require(uninstalled.status == 0, "make uninstall: \(uninstalled.output)\(uninstalled.errors)")
    for file in files {
      let path = manDirectory.appendingPathComponent("man\(Self.nameAndSection(file).section)/\(file)").path
      if FileManager.default.fileExists(atPath: path) { problems.append("make uninstall left \(path)") }
    }
    #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    // What the package holds is PackagingTests.reusesAnUpToDateBuild's.
  }

  /// The man pages `text` names: `vpnstat-json(7)` → `vpnstat-json.7`.
  static func namedPages(_ text: String) -> [String] {
    text.matches(of: /(vpnstat[a-z.-]*)\(([1-8])\)/).map { "\($0.output.1).\($0.output.2)" }
  }

  @Test("every vpnstat page a command's help names is a page of man/")
  func helpNamesPagesThatExist() throws {
    var texts: [String] = []
    func visit(_ spec: CommandSpec) {
      texts += [spec.abstract, spec.usage ?? "", spec.discussion ?? ""] + spec.options.map(\.help)
      spec.subcommands.forEach(visit)
    }
    visit(VPNStat.rootSpec)
    let named = Set(texts.flatMap(Self.namedPages))
    // --json's help names where the documents are, or this test would pass on nothing.
    try #require(named.contains("vpnstat-json.7"), "\(named.sorted())")
    for page in named.sorted() {
      #expect(Self.pageFiles.contains(page), "a help text names \(page), which man/ does not have")
    }
    #expect(Self.namedPages("see vpnstat(8) and vpnstat.conf(5)") == ["vpnstat.8", "vpnstat.conf.5"])
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

  @Test("every exit status the code defines is documented in vpnstat(1)")
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
    "every key of status, session, report, history, alert and connect JSON from real runs is documented in vpnstat-json(7)"
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
    let report = try Self.jsonKeys(["report", "--json"] + fixture)
    try #require(report.contains("periods") && report.contains("members"), "report --json: \(report.sorted())")
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

    let page = try Self.text(Self.jsonPage)
    let manJSON = try #require(Self.manSection(page, "DESCRIPTION"), "man/vpnstat-json.7 has no DESCRIPTION")
    func keyCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }
    for key in status.union(session).union(history).union(alert).union(report).union(connect).union(refusal).sorted() {
      let inManPage = Self.contains(manJSON, "Cm ", key, nameCharacters: keyCharacter)
      #expect(inManPage, "man/vpnstat-json.7 does not document '\(key)' (as Cm \(key))")
    }
  }

  // MARK: - (e) examples that do what they say

  @Test(
    "no example acts on `alert`'s status with `||`: any non-zero status would read as crossed, a missing database (69) and a typo (64) too"
  )
  func alertExamplesTestForOne() throws {
    let files =
      [Self.readme, Self.guide, Built.packageRoot.appendingPathComponent("contrib/README.md").path]
      + Self.pageFiles.map { Self.manDirectory.appendingPathComponent($0).path }
    try #require(files.count > 8, "\(files)")
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

  @Test(
    "the README maps the docs, every man page included, and every relative link of the Markdown docs leads to a file and heading that exist"
  )
  func docsMapResolves() throws {
    let readme = try Self.text(Self.readme)
    let links = Set(Self.relativeLinks(readme).map { String($0.split(separator: "#").first ?? "") })
    // Every man page, the overview and each command group's.
    try #require(Self.pageFiles.count > 8, "\(Self.pageFiles)")
    for document in [
      "docs/guide.md", "CONTRIBUTING.md", "CHANGELOG.md", "ARCHITECTURE.md", "LICENSE", "contrib/README.md",
    ] + Self.pageFiles.map({ "man/" + $0 }) {
      #expect(links.contains(document), "README.md does not link to \(document)")
    }
    var problems: [String] = []
    for file in [
      "README.md", "docs/guide.md", "CONTRIBUTING.md", "contrib/README.md", "docs/real-vpns.md", "ARCHITECTURE.md",
      "docs/performance.md",
    ] {
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
