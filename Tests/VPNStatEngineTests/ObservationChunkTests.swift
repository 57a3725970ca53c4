import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatTestSupport

/// The sampler's observations a chunk at a time (what the recorder and every reader advance their
/// ledgers with): the whole array's observations in its order, whatever the count and selection,
/// and a ledger advanced chunk by chunk is the one the whole array gives.
struct ObservationChunkTests {
  @Test(
    "chunks of at most 64 hold the whole array's observations in order; a selection filters as there",
    arguments: [0, 1, 63, 64, 65, 150])
  func sameObservations(count: Int) throws {
    let kernel = FakeKernel()
    let clock = ManualTimeSource()
    for i in 0..<count { kernel.add("tun\(i)", up: true) }
    let everyThird = InterfaceSelection(names: Set(stride(from: 0, to: count, by: 3).map { InterfaceName("tun\($0)") }))
    for recorded in [InterfaceSelection(), everyThird] {
      var sampler = TrafficSampler(
        reader: CounterReader(source: FakeCounters(kernel: kernel)), catalog: InterfaceCatalog(), recorded: recorded,
        clock: clock)
      let sample = try sampler.sample()
      let whole = sampler.observations(sample)
      var chunks: [[LedgerObservation]] = []
      sampler.forEachObservationChunk(of: sample) { chunks.append($0) }
      #expect(chunks.flatMap { $0 } == whole)
      #expect(chunks.allSatisfy { !$0.isEmpty && $0.count <= TrafficSampler.chunkLength })
      if recorded.names.isEmpty {
        #expect(whole.count == count)
        #expect(chunks.count == (count + TrafficSampler.chunkLength - 1) / TrafficSampler.chunkLength)
      } else {
        #expect(whole.count == everyThird.names.count)
      }
    }
  }

  @Test("a ledger advanced chunk by chunk books what the whole array books, traffic in every chunk")
  func sameLedger() throws {
    let kernel = FakeKernel()
    let clock = ManualTimeSource()
    for i in 0..<150 { kernel.add("tun\(i)", up: true) }
    var sampler = fakeSampler(kernel, clock)
    var whole = Ledger()
    var chunked = Ledger()
    for round in 0..<3 {
      for name in ["tun0", "tun63", "tun64", "tun100", "tun149"] {
        kernel.carry(try #require(kernel.index(of: name)), rx: UInt64(1000 * (round + 1)), tx: 7)
      }
      clock.advance(.seconds(1))
      let sample = try sampler.sample()
      whole.advance(sampler.observations(sample)) { _, _ in }
      sampler.forEachObservationChunk(of: sample) { chunked.advance($0) { _, _ in } }
    }
    #expect(chunked.entries == whole.entries)
    #expect(chunked.entries.count == 150)
    // Booked after the first sample (which only starts each name): the second's and the third's.
    #expect(chunked.entries[InterfaceName("tun149")]?.totals.traffic.rxBytes == 5000)
  }
}
