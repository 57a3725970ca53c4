import Foundation
import Testing
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatStore
import VPNStatSystem

@testable import VPNStatTestSupport

/// The recorder's steady state against the real kernel: between saves a recorder that publishes
/// no sample (no textfile, no listener) reads the counter dump straight into its ledger, and books
/// exactly what a recorder reading whole samples books, across a link added without notice, a
/// link deleted and made again under its name, and a save.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct SteadyStateKernelTests {
  /// What the two recorders stored, how often each read the counters through its book, and what
  /// the kernel counted on `lo` over the whole run.
  struct Outcome {
    var steady: Ledger
    var whole: Ledger
    var steadySamples: Int
    var wholeSteadySamples: Int
    var loopbackGrowth: TrafficCounts
    /// Per round, the names whose entries in memory differed between the two.
    var differences: [String]
  }

  /// Lines a recorder logs, kept.
  final class KeptLog: EventLog, @unchecked Sendable {
    var lines: [String] = []
    func event(_ entry: LoggedEvent) { lines.append(entry.text) }
  }

  /// A recorder of the test's own in this thread's namespace; a textfile makes it read whole
  /// samples.
  static func recorder(
    _ path: String, textfile: String?, recorded: InterfaceSelection = InterfaceSelection(), clock: any TimeSource
  ) throws -> Recorder {
    let store = try #require(
      try Store.open(StoreLocation(path: path), intent: .write, calendar: FixedOffsetCalendar.utc))
    return Recorder(
      sampler: TrafficSampler(
        reader: CounterReader(.netlink), catalog: InterfaceCatalog(), recorded: recorded, clock: clock),
      store: store, textfileDirectory: textfile, saveInterval: .seconds(3600), log: KeptLog())
  }

  /// The names whose entries differ between two ledgers in all but the instants of their readings
  /// (two recorders read one after the other).
  static func differences(_ one: Ledger, _ other: Ledger) -> [String] {
    var found: [String] = []
    for entry in other.entries.values {
      guard let mine = one.entries[entry.name], mine.totals.traffic == entry.totals.traffic,
        mine.totals.resets == entry.totals.resets, mine.totals.wraps == entry.totals.wraps,
        mine.totals.discarded == entry.totals.discarded,
        mine.baseline.counters == entry.baseline.counters, mine.baseline.instance == entry.baseline.instance,
        mine.interfaceClass == entry.interfaceClass
      else {
        found.append("\(entry.name)")
        continue
      }
    }
    if one.entries.count != other.entries.count { found.append("the names") }
    return found
  }

  @Test(
    "between saves the recorder reads the counter dump straight into its ledger, and its totals, resets and new names are those whole samples book"
  )
  func steadyStateBooksWhatWholeSamplesBook() throws {
    let directory = try TemporaryDirectory("steady")
    let outcome = try inOwnNamespace(if: true) {
      Result { () throws -> Outcome in
        try VPNStatTestSupport.ip("link", "set", "lo", "up")
        for i in 0..<3 {
          try VPNStatTestSupport.ip("link", "add", "sty\(i)", "type", "ifb")
          try VPNStatTestSupport.ip("link", "set", "sty\(i)", "up")
        }
        let clock = SystemTimeSource()
        func recorder(_ file: String, textfile: String?) throws -> Recorder {
          try Self.recorder(directory.file(file), textfile: textfile, clock: clock)
        }
        // One publishes nothing (the steady state); the other writes a textfile, so it reads
        // whole samples.
        var steady = try recorder("steady.db", textfile: nil)
        var whole = try recorder("whole.db", textfile: directory.path)
        var kernel = try NetlinkCounterSource()
        func loopback() throws -> TrafficCounts {
          try #require(try kernel.sample(at: clock).interfaces.first { $0.name == InterfaceName("lo") }).counters
            .traffic
        }
        let first = try loopback()
        // Both read the same counters in each round: bytes move only between rounds. Their
        // ledgers in memory (ahead of what is saved) are then the same, entry by entry.
        var differences: [String] = []
        func round(_ turn: Int) throws {
          try steady.sample()
          try whole.sample()
          differences += Self.differences(steady.keeper.ledger, whole.keeper.ledger).map { "round \(turn): \($0)" }
        }
        try round(-1)
        for turn in 0..<12 {
          let sent = try run(Built.testPeer, ["udp-send", "127.0.0.1", "9", "40", "1200"])
          if sent.status != 0 { throw TestSetupError("udp-send failed: \(sent.errors)") }
          usleep(50_000)
          switch turn {
          case 3:
            // No notification tells the recorders: the dump shows an ifindex their table lacks.
            try VPNStatTestSupport.ip("link", "add", "sty9", "type", "ifb")
          case 6:
            // Another instance under a known name: a reset to bridge.
            try VPNStatTestSupport.ip("link", "del", "sty1")
            try VPNStatTestSupport.ip("link", "add", "sty1", "type", "ifb")
          case 8:
            steady.keeper.requestSave()
            whole.keeper.requestSave()
          default: break
          }
          try round(turn)
        }
        let last = try loopback()
        try steady.finish(patience: 1000)
        try whole.finish(patience: 1000)
        func stored(_ file: String) throws -> Ledger {
          try #require(try Store.open(StoreLocation(path: directory.file(file)), intent: .read)).loadLedger()
        }
        return Outcome(
          steady: try stored("steady.db"), whole: try stored("whole.db"), steadySamples: steady.keeper.steadySamples,
          wholeSteadySamples: whole.keeper.steadySamples, loopbackGrowth: last - first,
          differences: differences)
      }
    }
    let result = try outcome.get()
    #expect(
      result.steadySamples >= 6,
      "the recorder with nothing to publish read \(result.steadySamples) samples through its book")
    #expect(result.wholeSteadySamples == 0, "the recorder with a textfile must read whole samples")
    #expect(result.loopbackGrowth.txBytes > 12 * 40 * 1200)
    #expect(result.differences.isEmpty, "\(result.differences)")
    let lo = try #require(result.steady.entries[InterfaceName("lo")])
    #expect(lo.totals.traffic == result.loopbackGrowth, "lo's totals are the kernel's growth over the run")
    #expect(result.steady.entries[InterfaceName("sty9")] != nil, "a link added without notice joins the ledger")
    #expect(result.steady.entries[InterfaceName("sty1")]?.totals.resets == 1, "the instance made again is a reset")
    // As stored after the last save, the same as in memory every round.
    let stored = Self.differences(result.steady, result.whole)
    #expect(stored.isEmpty, "stored: \(stored)")
  }

  @Test(
    "a link the recorder does not record, deleted with a notification, moves the links after it in the reader's table: the steady state reads them through a new book, never the old positions"
  )
  func unrecordedLinkChangeMakesANewBook() throws {
    let directory = try TemporaryDirectory("steadymove")
    let outcome = try inOwnNamespace(if: true) {
      Result { () throws -> (differences: [String], steadySamples: Int, booked: UInt64) in
        // No IPv6 on the links made here: its own packets (duplicate address detection, router
        // solicitations, MLD reports) go out at moments of the kernel's choosing, and one between
        // the two recorders' readings of a round would set them apart. This thread's namespace:
        // /proc/sys/net is the opening thread's.
        for scope in ["all", "default"] {
          try Data("1".utf8).write(to: URL(fileURLWithPath: "/proc/sys/net/ipv6/conf/\(scope)/disable_ipv6"))
        }
        // stz0 first, so its ifindex is below the veth's and its deletion moves them in the table.
        try VPNStatTestSupport.ip("link", "add", "stz0", "type", "ifb")
        try VPNStatTestSupport.ip("link", "add", "stm0", "type", "veth", "peer", "name", "stm1")
        for name in ["stz0", "stm0", "stm1"] { try VPNStatTestSupport.ip("link", "set", name, "up") }
        try VPNStatTestSupport.ip("addr", "add", "169.254.78.1/24", "dev", "stm0")
        // Datagrams for an address no one here owns, to stm1's hardware address: out of stm0 and
        // into stm1, both counted.
        try VPNStatTestSupport.ip("link", "set", "stm1", "address", "02:00:00:00:78:02")
        try VPNStatTestSupport.ip(
          "neigh", "add", "169.254.78.2", "lladdr", "02:00:00:00:78:02", "dev", "stm0", "nud", "permanent")
        func send() throws {
          let sent = try run(Built.testPeer, ["udp-send", "169.254.78.2", "9", "30", "800"])
          if sent.status != 0 { throw TestSetupError("udp-send failed: \(sent.errors)") }
          usleep(50_000)
        }
        let clock = SystemTimeSource()
        let recorded = InterfaceSelection(names: [InterfaceName("stm0"), InterfaceName("stm1")])
        var steady = try Self.recorder(directory.file("steady.db"), textfile: nil, recorded: recorded, clock: clock)
        var whole = try Self.recorder(
          directory.file("whole.db"), textfile: directory.path, recorded: recorded, clock: clock)
        var differences: [String] = []
        func round(_ turn: Int) throws {
          try steady.sample()
          try whole.sample()
          differences += Self.differences(steady.keeper.ledger, whole.keeper.ledger).map { "round \(turn): \($0)" }
        }
        try round(0)
        try send()
        try round(1)
        try send()
        try round(2)
        // The deletion as the recorder's loop hands it over: not recorded, so nothing to book.
        let gone = try #require(try NetlinkLinkTable().link(named: InterfaceName("stz0")))
        try VPNStatTestSupport.ip("link", "del", "stz0")
        try steady.book([LinkNotifications.Change(record: gone, deleted: true)], overflowed: false)
        try whole.book([LinkNotifications.Change(record: gone, deleted: true)], overflowed: false)
        for turn in 3..<7 {
          try send()
          try round(turn)
        }
        let booked = steady.keeper.ledger.entries[InterfaceName("stm1")]?.totals.traffic.rxBytes ?? 0
        return (differences, steady.keeper.steadySamples, booked)
      }
    }
    let result = try outcome.get()
    #expect(result.differences.isEmpty, "\(result.differences)")
    #expect(result.steadySamples >= 4, "\(result.steadySamples) samples read through a book")
    #expect(result.booked >= 6 * 30 * 800, "stm1 received \(result.booked) bytes")
  }
}
