import Testing
import VPNStatSimulation

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// Readers stay exact between a writer's checkpoints: a reader adds what the kernel's counters
/// grew since the stored baseline to the stored totals, and the writer saves whatever the reader
/// could not work out that way — whatever the widths of the writer's and the reader's counters.
struct CheckpointRuleTests {
  let name = InterfaceName("lo")
  let instance = InterfaceInstance(index: 1, bootID: "boot-a")

  /// The kernel's counter `truth` as a reader of `width` sees it, `step` tenths of a second in.
  func observation(_ truth: UInt64, _ width: CounterWidth, step: Int64) -> LedgerObservation {
    let counters = TrafficCounts(rxBytes: truth, txBytes: truth / 2, rxPackets: truth / 1000, txPackets: truth / 2000)
    return LedgerObservation(
      name: name, interfaceClass: .loopback,
      baseline: LedgerBaseline(
        instance: instance, counters: width == .bits32 ? counters.masked32 : counters, width: width,
        wall: Timestamp(seconds: 1_800_000_000) + .milliseconds(100 * step),
        boottime: 1_000_000_000 + step * 100_000_000),
      plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
  }

  /// A writer between checkpoints, and the ledger as its checkpoints left it in the database.
  struct Writer {
    var memory: CheckpointedLedger
    var stored = Ledger()
    var saves = 0

    init() { memory = CheckpointedLedger(stored: Ledger()) }

    /// One sample; saved when the writer asks for it (the save interval itself never passes).
    mutating func sample(_ observation: LedgerObservation) {
      memory.advance([observation], calendar: FixedOffsetCalendar.utc)
      guard memory.saveRequested else { return }
      let checkpoint = memory.checkpoint
      for entry in checkpoint.entries { stored.replace(entry) }
      memory.saved(checkpoint)
      saves += 1
    }
  }

  /// What a reader reports: the stored ledger advanced by its own reading.
  func reader(_ stored: Ledger, _ observation: LedgerObservation) -> TrafficCounts? {
    var view = stored
    _ = view.advance([observation])
    return view.entries[name]?.totals.traffic
  }

  @Test(
    "a writer saves before a reader could miss a turn of a 32-bit counter: 32- and 64-bit writers, 32- and 64-bit readers, exact at every moment over 50 GiB and a dozen turns between save intervals"
  )
  func readersExactBetweenCheckpoints() throws {
    for writerWidth in CounterWidth.allCases {
      var random = SplitMix(seed: 0x5EED_0000 + UInt64(writerWidth.rawValue))
      let first: UInt64 = 4_294_000_000  // just below a turn
      var truth = first
      var writer = Writer()
      writer.sample(observation(truth, writerWidth, step: 0))
      for step in 1...200 {
        // Anything up to 2^31 bytes a sample: idle, a trickle, or most of what the margin allows.
        let pace = [0, 1_000, 300_000_000, 2_000_000_000, 2_147_483_647][Int(random.next() % 5)]
        truth += random.next() % (UInt64(pace) + 1)
        let expected = TrafficCounts(
          rxBytes: truth - first, txBytes: truth / 2 - first / 2, rxPackets: truth / 1000 - first / 1000,
          txPackets: truth / 2000 - first / 2000)
        // Before the writer samples this: the stored ledger and the kernel as it is now.
        for readerWidth in CounterWidth.allCases {
          let seen = reader(writer.stored, observation(truth, readerWidth, step: Int64(step)))
          #expect(
            seen == expected,
            "\(writerWidth) writer, \(readerWidth) reader, sample \(step): \(String(describing: seen))")
        }
        writer.sample(observation(truth, writerWidth, step: Int64(step)))
        #expect(writer.memory.ledger.entries[name]?.totals.traffic == expected)
      }
      #expect(truth - first > 12 << 32, "too few turns for the test to mean anything")
      #expect(writer.saves > 8, "\(writerWidth): \(writer.saves) saves")
    }
  }

  @Test("a slow counter is saved once per 2^31 bytes and per turn at most, never at every sample")
  func slowCountersSaveLittle() {
    var writer = Writer()
    var truth: UInt64 = 1_000_000_000
    for step in 0...3500 {
      truth += 1_000_000  // 10 MB/s: 3.5 GB, one turn of the 32-bit counter
      writer.sample(observation(truth, .bits32, step: Int64(step)))
    }
    // The first sample, the sample before 2^31 bytes since it, and the turn.
    #expect(writer.saves == 3, "\(writer.saves)")
  }

  @Test(
    "a 32-bit counter that turns twice between two of the writer's samples: the readings cannot tell, so the writer books the least they allow and readers agree; a 64-bit writer books it all"
  )
  func twoTurnsBetweenSamples() {
    let first: UInt64 = 1_000_000_000
    let truth = first + (1 << 32) + 5_000
    for writerWidth in CounterWidth.allCases {
      var writer = Writer()
      writer.sample(observation(first, writerWidth, step: 0))
      writer.sample(observation(truth, writerWidth, step: 10))
      let booked = writer.memory.ledger.entries[name]?.totals.traffic.rxBytes
      let known: UInt64 = writerWidth == .bits32 ? 5_000 : (1 << 32) + 5_000
      #expect(booked == known, "\(writerWidth): \(String(describing: booked))")
      for readerWidth in CounterWidth.allCases {
        let later = observation(truth + 100, readerWidth, step: 11)
        #expect(reader(writer.stored, later)?.rxBytes == known + 100, "\(writerWidth) writer, \(readerWidth) reader")
      }
    }
  }

  @Test("a reset, a wrap and a discarded sample are saved at once: the reader's arithmetic cannot redo them")
  func eventsSaveAtOnce() {
    var writer = Writer()
    writer.sample(observation(4_294_967_000, .bits32, step: 0))
    #expect(writer.saves == 1)
    writer.sample(observation(4_294_967_000 + 1_000, .bits32, step: 10))
    #expect(writer.saves == 2, "a wrap")
    var recreated = observation(500, .bits32, step: 20)
    recreated.baseline.instance = InterfaceInstance(index: 2, bootID: "boot-a")
    writer.sample(recreated)
    #expect(writer.saves == 3, "a reset")
    var fast = observation(500 + 900_000_000, .bits32, step: 21)
    fast.plausibleBytesPerSecond = 1_000_000
    fast.baseline.instance = recreated.baseline.instance
    writer.sample(fast)
    #expect(writer.saves == 4, "a discarded sample")
    #expect(writer.memory.ledger.entries[name]?.totals.discarded == 1)
  }

  @Test(
    "a baseline that moves to another instance without a reset (a boot id stored unreadable, read now) is saved at once, and asked for until a save is made; the next samples are not"
  )
  func instanceLearnedIsSaved() {
    var unknownBoot = observation(1_000, .bits64, step: 0)
    unknownBoot.baseline.instance.bootID = ""
    var writer = Writer()
    writer.sample(unknownBoot)
    #expect(writer.saves == 1)
    // The clocks say the same boot: growth from the stored counters, not a reset.
    writer.memory.advance([observation(1_500, .bits64, step: 10)], calendar: FixedOffsetCalendar.utc)
    #expect(writer.memory.ledger.entries[name]?.totals.traffic.rxBytes == 500)
    #expect(writer.memory.ledger.entries[name]?.totals.resets == 0)
    #expect(writer.memory.saveRequested, "readers compare the stored boot id with the kernel's")
    // A save that did not happen (a busy database): the next sample, of the same instance as
    // memory's, still asks for it.
    writer.memory.advance([observation(1_600, .bits64, step: 20)], calendar: FixedOffsetCalendar.utc)
    #expect(writer.memory.saveRequested)
    writer.sample(observation(1_700, .bits64, step: 30))
    #expect(writer.saves == 2)
    #expect(writer.stored.entries[name]?.baseline.instance.bootID == "boot-a")
    writer.sample(observation(1_800, .bits64, step: 40))
    #expect(writer.saves == 2, "saved once: the stored instance is the kernel's now")
  }
}
