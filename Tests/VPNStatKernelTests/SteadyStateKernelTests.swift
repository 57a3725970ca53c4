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
          let store = try #require(
            try Store.open(
              StoreLocation(path: directory.file(file)), intent: .write, calendar: FixedOffsetCalendar.utc))
          return Recorder(
            sampler: TrafficSampler(reader: CounterReader(.netlink), catalog: InterfaceCatalog(), clock: clock),
            store: store, textfileDirectory: textfile, saveInterval: .seconds(3600), log: KeptLog())
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
          let mine = steady.keeper.ledger.entries
          // All but the instants of the reading, which the two took one after the other.
          for entry in whole.keeper.ledger.entries.values {
            guard let other = mine[entry.name], other.totals.traffic == entry.totals.traffic,
              other.totals.resets == entry.totals.resets, other.totals.discarded == entry.totals.discarded,
              other.baseline.counters == entry.baseline.counters,
              other.baseline.instance == entry.baseline.instance, other.interfaceClass == entry.interfaceClass
            else {
              differences.append("round \(turn): \(entry.name)")
              continue
            }
          }
          if mine.count != whole.keeper.ledger.entries.count { differences.append("round \(turn): the names") }
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
    #expect(result.steady.entries.keys.sorted() == result.whole.entries.keys.sorted())
    for entry in result.whole.entries.values {
      let other = try #require(result.steady.entries[entry.name], "\(entry.name)")
      #expect(other.totals.traffic == entry.totals.traffic, "\(entry.name)")
      #expect(
        [other.totals.resets, other.totals.wraps, other.totals.discarded]
          == [entry.totals.resets, entry.totals.wraps, entry.totals.discarded], "\(entry.name)")
      #expect(other.baseline.instance.index == entry.baseline.instance.index, "\(entry.name)")
    }
  }
}
