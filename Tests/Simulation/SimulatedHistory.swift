import VPNStatModel
import VPNStatStore

/// Traffic history made with an injected clock through the store's own API — the ledger
/// advances a recorder makes, sample by sample — for the benchmark (a simulated year: the
/// database's size) and the tests that draw a simulated month. The first `tunnels` of the
/// interfaces are tunnels, the rest Ethernet; all carry the same traffic.
package struct SimulatedHistory {
  /// How many interfaces (`if0`, `if1` …) and how many of the first ones are tunnels.
  package var interfaces = 20
  package var tunnels = 5
  /// Steps of `fineStep` seconds for the first `fineSpan` seconds, then of `step` seconds: a
  /// recorder's 5-second interval where the 5-minute buckets are kept, and 5-minute steps after
  /// that, which write the same bucket rows (every sample of a 5-minute window lands in the
  /// same ones) at 1/60 of the time.
  package var fineStep: Int64 = 5
  package var fineSpan: Int64 = 2 * 86_400
  package var step: Int64 = 300
  /// Bytes per second each interface receives at an instant (Unix seconds); it sends a third.
  package var rate: (Int64) -> UInt64 = { _ in 40_000 }

  package init() {}

  /// Records `duration` seconds of traffic from `start` into `store`; returns how many ledger
  /// advances that took.
  @discardableResult
  package func record(into store: Store, from start: Timestamp, duration: Int64) throws -> Int {
    let names = (0..<interfaces).map { InterfaceName("if\($0)") }
    var wall = start
    var boottime: Int64 = 1_000_000_000
    var counter: UInt64 = 0
    var elapsed: Int64 = 0
    var advances = 0
    while elapsed < duration {
      let step = elapsed < fineSpan ? fineStep : self.step
      elapsed += step
      wall = wall + .seconds(step)
      boottime += step * 1_000_000_000
      counter += UInt64(step) * rate(wall.seconds)
      let batch = names.enumerated().map { i, name in
        LedgerObservation(
          name: name, interfaceClass: i < tunnels ? .tunnel : .ethernet,
          baseline: LedgerBaseline(
            instance: InterfaceInstance(index: Int32(i + 2), bootID: "simulated"),
            counters: TrafficCounts(
              rxBytes: counter, txBytes: counter / 3, rxPackets: counter / 1400, txPackets: counter / 4200),
            width: .bits64, wall: wall, boottime: boottime),
          plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
      }
      _ = try store.advanceLedger(batch, now: wall)
      advances += 1
    }
    return advances
  }
}
