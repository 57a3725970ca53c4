import Testing

@testable import VPNStatModel
@testable import VPNStatTestSupport

/// A writer's ledger is changed in place, one entry at a time, with nothing collected per sample:
/// it must keep every rule the collecting `Ledger.advance(_:)` keeps.
struct WriterLedgerTests {
  let boot = "6f1c2a7e-0d4b-4a53-9a3e-2b7c1d9e8f40"

  func observation(
    _ name: String, index: Int32 = 1, rx: UInt64, width: CounterWidth = .bits64, second: Int64,
    boottime: Int64? = nil, plausible: Double = Ledger.defaultCapBytesPerSecond
  ) -> LedgerObservation {
    LedgerObservation(
      name: InterfaceName(name), interfaceClass: name.hasPrefix("tun") ? .tunnel : .ethernet,
      baseline: LedgerBaseline(
        instance: InterfaceInstance(index: index, bootID: boot),
        counters: TrafficCounts(rxBytes: rx, txBytes: rx / 2, rxPackets: rx / 100, txPackets: rx / 200),
        width: width, wall: Timestamp(seconds: 1_800_000_000 + second),
        boottime: boottime ?? (1_000 + second) * 1_000_000_000),
      plausibleBytesPerSecond: plausible)
  }

  /// Samples over growth, an idle interface, old news, a 32-bit wrap, a reset, a discarded
  /// sample and a name first seen midway.
  var samples: [[LedgerObservation]] {
    [
      [
        observation("eth0", rx: 1_000, second: 0), observation("idle0", rx: 77, second: 0),
        observation("tun0", rx: 4_294_966_000, width: .bits32, second: 0),
        observation("tun1", index: 7, rx: 5_000, second: 0), observation("fast0", rx: 10, second: 0),
      ],
      [
        observation("eth0", rx: 3_000, second: 1), observation("idle0", rx: 77, second: 1),
        observation("tun0", rx: 2_000, width: .bits32, second: 1),
        observation("tun1", index: 8, rx: 300, second: 1),
        observation("fast0", rx: 900_000_000, second: 1, plausible: 1_000_000),
      ],
      [
        // Read before the baseline of the same instance: old news, neither booked nor kept.
        observation("eth0", rx: 2_000, second: 0, boottime: 1_000_500_000_000),
        observation("eth0", rx: 9_000, second: 2), observation("idle0", rx: 77, second: 2),
        observation("tun9", rx: 123, second: 2), observation("tun1", index: 8, rx: 900, second: 2),
      ],
    ]
  }

  @Test(
    "changed in place, a writer's ledger keeps the rules: the entries, events and unsaved buckets the collecting advance gives, across growth, idle, old news, a wrap, a reset, a discarded sample and a new name"
  )
  func inPlaceKeepsTheRules() {
    var reference = Ledger()
    var referenceBooked = UnsavedTraffic()
    var writer = CheckpointedLedger(stored: Ledger())
    var kinds: [LedgerEvent.Kind] = []
    for sample in samples {
      let advance = reference.advance(sample)
      referenceBooked.add(advance.booked, calendar: FixedOffsetCalendar.utc)
      let events = writer.advance(sample, calendar: FixedOffsetCalendar.utc)
      #expect(events == advance.events)
      kinds += events.map(\.kind)
      #expect(writer.ledger.entries == reference.entries)
    }
    #expect(kinds == [.wrap, .reset, .discarded])
    let name = { (name: String) in writer.ledger.entries[InterfaceName(name)] }
    #expect(name("eth0")?.totals.traffic.rxBytes == 8_000)
    #expect(name("idle0")?.baseline.wall == Timestamp(seconds: 1_800_000_000), "an idle interface keeps its baseline")
    #expect(name("tun0")?.totals.wraps == 1 && name("tun0")?.totals.traffic.rxBytes == 3_296)
    #expect(name("tun1")?.totals.resets == 1 && name("tun1")?.totals.traffic.rxBytes == 900)
    #expect(name("fast0")?.totals.discarded == 1 && name("fast0")?.totals.traffic == .zero)
    #expect(name("tun9")?.totals.traffic == .zero && name("tun9")?.totals.firstSeenAt.seconds == 1_800_000_002)
    let rows = writer.unsavedTraffic.rows
    #expect(!rows.isEmpty)
    #expect(rows.map(\.bucket) == referenceBooked.rows.map(\.bucket))
    #expect(rows.map(\.granularity) == referenceBooked.rows.map(\.granularity))
    #expect(writer.saveRequested, "new names and events are saved at once")
  }

  @Test(
    "a checkpoint's rows are one per bucket, in the table's key order (granularity, start, name), also when the save interval crossed a bucket's end"
  )
  func rowsInKeyOrder() {
    var unsaved = UnsavedTraffic()
    // 1_800_000_000 is a multiple of 300: seconds 290 and 310 fall in two 5-minute buckets, the
    // same hour, day and month. Names booked out of order, one a prefix of another.
    var expected: [[Int64]: UInt64] = [:]
    for (second, names) in [(290, ["wg1", "eth0", "wg", "a"]), (310, ["eth0", "b", "wg"]), (295, ["wg1", "b"])] {
      let wall = Timestamp(seconds: 1_800_000_000 + Int64(second))
      for (i, name) in names.enumerated() {
        let rx = UInt64(100 * second + i)
        unsaved.add(
          BookedTraffic(
            name: InterfaceName(name), interfaceClass: .ethernet, wall: wall,
            delta: CounterDelta(TrafficCounts(rxBytes: rx, txBytes: 0, rxPackets: 1, txPackets: 0), kind: .growth)),
          calendar: FixedOffsetCalendar.utc)
        for granularity in TrafficGranularity.allCases {
          let key =
            [Int64(granularity.rawValue), granularity.start(of: wall, in: FixedOffsetCalendar.utc)]
            + InterfaceName(name).bytes.map(Int64.init)
          expected[key, default: 0] += rx
        }
      }
    }
    let rows = unsaved.rows
    let keys = rows.map { [Int64($0.granularity.rawValue), $0.bucket.start] + $0.bucket.name.bytes.map(Int64.init) }
    #expect(
      keys
        == expected.keys.sorted {
          ($0[0], $0[1]) != ($1[0], $1[1])
            ? ($0[0], $0[1]) < ($1[0], $1[1]) : $0[2...].lexicographicallyPrecedes($1[2...])
        })
    #expect(Dictionary(uniqueKeysWithValues: zip(keys, rows.map(\.bucket.traffic.rxBytes))) == expected)
    #expect(Set(rows.filter { $0.granularity == .fiveMinutes }.map(\.bucket.start)).count == 2)
  }

  @Test("the boot id \"unknown\" an older database stored is no evidence: the clocks decide, and the same boot grows")
  func unknownStoredBootID() throws {
    var stored = observation("eth0", rx: 1_000, second: 0).baseline
    stored.instance.bootID = "unknown"
    let new = observation("eth0", rx: 1_500, second: 5).baseline
    #expect(BootIdentity.same(stored, new) == true)
    let delta = try #require(CounterDelta.between(stored, new))
    #expect(delta.kind == .growth && delta.traffic.rxBytes == 500)
    // A real id that differs is a new boot.
    var other = new
    other.instance.bootID = "0a0b0c0d-0000-4000-8000-000000000000"
    #expect(BootIdentity.same(observation("eth0", rx: 1_000, second: 0).baseline, other) == false)
  }
}
