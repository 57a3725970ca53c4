import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatTestSupport

/// A report's rates are the counter rules applied between the previous sample and this one. The
/// snapshot decides once whether the two readings are of one boot and reads each interface where
/// it lies: the rates must be those of a baseline made of each interface of each sample.
struct ReportRateTests {
  func sample(boot: String, second: Int64, boottime: Int64, _ entries: [(String, Int32, UInt64, CounterWidth)])
    -> CounterSample
  {
    CounterSample(
      interfaces: entries.map { name, index, rx, width in
        InterfaceSample(
          name: InterfaceName(name), index: index,
          counters: InterfaceCounters(TrafficCounts(rxBytes: rx, txBytes: rx / 2, rxPackets: rx / 100, txPackets: 1)),
          width: width, link: LinkAttributes(arpType: 1, flags: 0x1, kind: "veth"))
      }, source: .netlink,
      taken: ClockReading(
        wall: Timestamp(seconds: 1_800_000_000 + second), boottime: boottime, monotonic: boottime, bootID: boot))
  }

  /// The rates the rules give, from baselines made of each sample's interfaces.
  func expectedRates(_ previous: CounterSample, _ current: CounterSample) -> [InterfaceName: Double] {
    let seconds = Double(current.taken.boottime - previous.taken.boottime) / 1e9
    var rates: [InterfaceName: Double] = [:]
    for entry in current.interfaces {
      guard let before = previous.interfaces.first(where: { $0.name == entry.name }) else { continue }
      let delta =
        CounterDelta.between(LedgerBaseline(before, taken: previous.taken), LedgerBaseline(entry, taken: current.taken))
        ?? CounterDelta(.zero, kind: .growth)
      rates[entry.name] = Double(delta.traffic.rxBytes) / seconds
    }
    return rates
  }

  @Test(
    "rates are the counter rules between two samples: growth, a recreation, a 32-bit wrap, counters gone back in one boot, a boot id learned (one boot by the clocks) and one changed, in another order"
  )
  func ratesFollowTheRules() {
    let entries: [(String, Int32, UInt64, CounterWidth)] = [
      ("eth0", 2, 1_000, .bits64), ("tun0", 3, 5_000, .bits64), ("wrap0", 4, 4_294_967_000, .bits32),
      ("back0", 5, 9_000, .bits64),
    ]
    let first = sample(boot: "", second: 0, boottime: 100_000_000_000, entries)
    // Another order, tun0 recreated, wrap0 wrapped, back0 behind.
    let later: [(String, Int32, UInt64, CounterWidth)] = [
      ("back0", 5, 8_000, .bits64), ("wrap0", 4, 1_000, .bits32), ("tun0", 7, 100, .bits64),
      ("eth0", 2, 3_000, .bits64),
    ]
    // The boot id read now (stored unreadable before): the clocks say one boot.
    let learned = sample(boot: "boot-a", second: 2, boottime: 102_000_000_000, later)
    // Then another boot id with CLOCK_BOOTTIME still ahead: another boot, every instance new.
    let changed = sample(
      boot: "boot-b", second: 4, boottime: 104_000_000_000, later.map { ($0.0, $0.1, $0.2 + 500, $0.3) })
    var catalog = InterfaceCatalog()
    for (previous, current) in [(first, learned), (learned, changed)] {
      let snapshot = StatusSnapshot.make(
        sample: current, catalog: &catalog, selection: InterfaceSelection(), previous: previous)
      let expected = expectedRates(previous, current)
      #expect(snapshot.interfaces.count == 4)
      for report in snapshot.interfaces {
        #expect(report.rate?.rxBytesPerSecond == expected[report.name], "\(report.name)")
      }
    }
    let rates = StatusSnapshot.make(
      sample: learned, catalog: &catalog, selection: InterfaceSelection(), previous: first
    ).interfaces.reduce(into: [String: Double]()) { $0[$1.name.escaped] = $1.rate?.rxBytesPerSecond }
    #expect(rates["eth0"] == 1_000, "growth")
    #expect(rates["tun0"] == 50, "a recreation: the new instance's counters")
    #expect(rates["wrap0"] == Double(296 + 1_000) / 2, "a wrap")
    #expect(rates["back0"] == 0, "behind in one boot: nothing")
    let rebooted = StatusSnapshot.make(
      sample: changed, catalog: &catalog, selection: InterfaceSelection(), previous: learned
    ).interfaces.first { $0.name == InterfaceName("eth0") }
    #expect(rebooted?.rate?.rxBytesPerSecond == 1_750, "another boot: counted anew (3,500 bytes in 2 s)")
  }
}
