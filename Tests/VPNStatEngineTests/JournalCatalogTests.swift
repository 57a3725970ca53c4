import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatTestSupport

/// The journal's event kinds, their catalog and their man page agree: every `MESSAGE_ID` the
/// code logs is explained by contrib/vpnstat.catalog and listed, with its name and priority, in
/// vpnstat-enforce(8); the catalog explains nothing the code never logs.
struct JournalCatalogTests {
  static func file(_ path: String) throws -> String {
    try String(contentsOf: Built.packageRoot.appendingPathComponent(path), encoding: .utf8)
  }

  @Test("every event kind has a catalog entry with a subject, and the catalog has no other")
  func catalogCoversEveryKind() throws {
    let catalog = try Self.file("contrib/vpnstat.catalog")
    let entries = catalog.split(separator: "\n").filter { $0.hasPrefix("-- ") }.map { String($0.dropFirst(3)) }
    #expect(Set(entries) == Set(EventKind.allCases.map(\.messageID)), "\(entries)")
    #expect(entries.count == EventKind.allCases.count, "a MESSAGE_ID twice")
    for kind in EventKind.allCases {
      let entry = try #require(catalog.range(of: "-- \(kind.messageID)\n"))
      #expect(catalog[entry.upperBound...].hasPrefix("Subject: vpnstat: "), "\(kind)")
      #expect(kind.messageID.wholeMatch(of: /[0-9a-f]{32}/) != nil, "\(kind)")
    }
  }

  @Test("vpnstat-enforce(8) lists every MESSAGE_ID with its event name and priority")
  func manPageListsEveryKind() throws {
    let page = try Self.file("man/vpnstat-enforce.8")
    for kind in EventKind.allCases {
      #expect(
        page.contains(".It \(kind.messageID) Ta \(kind.journalName) Ta \(kind.priority)\n"),
        "\(kind.journalName) is not in the page's table as the code has it")
    }
  }
}
