import Foundation
import Testing

@testable import VPNStatModel

/// Names, JSON and tables: what leaves vpnstat is exact and safe whatever the names hold.
/// The ledger's delta rules, without a kernel.
struct CounterRuleTests {
  let a = InterfaceInstance(index: 4, bootID: "boot-a")

  func counters(_ rx: UInt64, _ tx: UInt64) -> TrafficCounts {
    TrafficCounts(rxBytes: rx, txBytes: tx, rxPackets: rx / 100, txPackets: tx / 100)
  }

  /// A reading of `counters` from `instance`, `seconds` into a boot that began at wall time
  /// 1_800_000_000 s (moved by `clockSet` when the wall clock was set).
  func reading(
    _ counters: TrafficCounts, _ instance: InterfaceInstance, width: CounterWidth = .bits64, seconds: Int64 = 100,
    clockSet: Int64 = 0
  ) -> LedgerBaseline {
    LedgerBaseline(
      instance: instance, counters: counters, width: width,
      wall: Timestamp(seconds: 1_800_000_000 + seconds + clockSet),
      boottime: seconds * 1_000_000_000)
  }

  /// An observation of the tunnel `name` at `baseline`, under the default plausible rate.
  func tunnel(_ name: InterfaceName, _ baseline: LedgerBaseline) -> LedgerObservation {
    LedgerObservation(
      name: name, interfaceClass: .tunnel, baseline: baseline, plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
  }

  func delta(_ old: LedgerBaseline, _ new: LedgerBaseline) throws -> CounterDelta {
    try #require(CounterDelta.between(old, new))
  }

  @Test("growth is new − old")
  func growth() throws {
    let d = try delta(reading(counters(100, 200), a), reading(counters(350, 900), a, seconds: 105))
    #expect(d.kind == .growth && d.traffic.rxBytes == 250 && d.traffic.txBytes == 700)
  }

  @Test("a new ifindex is a reset: the new instance counts from zero")
  func recreated() throws {
    let b = InterfaceInstance(index: 5, bootID: "boot-a")
    let d = try delta(reading(counters(9_000_000, 9_000_000), a), reading(counters(300, 400), b, seconds: 105))
    #expect(d.kind == .reset && d.traffic.rxBytes == 300 && d.traffic.txBytes == 400)
  }

  @Test("a changed boot id is a reset, never a wrap, even with the same ifindex and 32-bit counters")
  func reboot() throws {
    let rebooted = InterfaceInstance(index: 4, bootID: "boot-b")
    let d = try delta(
      reading(counters(4_000_000_000, 10), a, width: .bits32), reading(counters(1000, 5), rebooted, width: .bits32))
    #expect(d.kind == .reset && d.traffic.rxBytes == 1000 && d.traffic.txBytes == 5)
  }

  @Test("a dropped 32-bit counter wraps exactly at 2^32")
  func wrap() throws {
    let d = try delta(
      reading(counters(4_294_967_000, 50), a, width: .bits32),
      reading(counters(704, 60), a, width: .bits32, seconds: 105))
    #expect(d.kind == .wrap && d.traffic.rxBytes == 1000 && d.traffic.txBytes == 10)
  }

  @Test("a 64-bit counter of the same instance that went back is old news: nothing booked, never a reset")
  func dropped64() {
    #expect(
      CounterDelta.between(reading(counters(5_000_000_000, 50), a), reading(counters(704, 60), a, seconds: 105)) == nil)
    // One counter behind is enough: the reading was taken before the baseline.
    #expect(CounterDelta.between(reading(counters(5000, 50), a), reading(counters(6000, 40), a, seconds: 105)) == nil)
  }

  @Test("readers of different widths on one instance: the 32-bit one decides, in both orders, no phantom 4 GiB")
  func mixedWidths() throws {
    let wide = counters(5_000_000_000, 9_000_000_000)
    let later = counters(5_000_001_000, 9_000_002_000)
    let narrowLater = later.masked32
    let narrowWide = wide.masked32
    let down = try delta(reading(wide, a), reading(narrowLater, a, width: .bits32, seconds: 105))
    #expect(down.traffic.rxBytes == 1000 && down.traffic.txBytes == 2000 && down.kind != .reset)
    let up = try delta(reading(narrowWide, a, width: .bits32), reading(later, a, seconds: 105))
    #expect(up.traffic.rxBytes == 1000 && up.traffic.txBytes == 2000 && up.kind != .reset)
  }

  @Test("a 32-bit poll stamped before the stored baseline is old news to the ledger: never a phantom wrap")
  func earlyNarrowPoll() {
    // Another reader committed a newer baseline between this poll's stamp and its booking.
    let name = InterfaceName("tun0")
    func observation(_ baseline: LedgerBaseline) -> LedgerObservation { tunnel(name, baseline) }
    var ledger = Ledger()
    let stored = reading(counters(5000, 900), a, width: .bits32, seconds: 105)
    _ = ledger.advance([observation(stored)])
    let early = ledger.advance([observation(reading(counters(4000, 800), a, width: .bits32, seconds: 100))])
    #expect(early.booked.isEmpty && early.events.isEmpty)
    #expect(ledger.entries[name]?.baseline == stored)
    #expect(ledger.entries[name]?.totals.traffic == .zero)
  }

  @Test(
    "after a reboot the entry takes the new boot's id, equal or the same String: the next samples of that boot count growth, not the counters again"
  )
  func ledgerFollowsReboot() {
    let name = InterfaceName("wg0")
    func observation(_ baseline: LedgerBaseline) -> LedgerObservation { tunnel(name, baseline) }
    // The new boot's id as each sample reads it: a String of its own each time (equal bytes,
    // other storage), then one String shared by every sample, as a process keeps it.
    let shared = String(decoding: Array("boot-b-0123456789abcdef0123456789ab".utf8), as: UTF8.self)
    for id in [{ String(decoding: Array(shared.utf8), as: UTF8.self) }, { shared }] {
      var ledger = Ledger()
      _ = ledger.advance([observation(reading(counters(9000, 900), a, seconds: 500))])
      var instance = InterfaceInstance(index: 4, bootID: id())
      _ = ledger.advance([observation(reading(counters(1000, 100), instance, seconds: 10))])
      #expect(ledger.entries[name]?.baseline.instance.bootID == shared)
      instance.bootID = id()
      _ = ledger.advance([observation(reading(counters(1500, 150), instance, seconds: 11))])
      instance.bootID = id()
      let third = ledger.advance([observation(reading(counters(1700, 170), instance, seconds: 12))])
      #expect(third.events.isEmpty, "\(third.events)")
      #expect(ledger.entries[name]?.totals.traffic.rxBytes == 1700)
      #expect(ledger.entries[name]?.totals.resets == 1)
    }
  }

  @Test("without boot ids the clocks tell boots apart: uptime back is a reboot, a steady boot instant is not")
  func unknownBootIDs() throws {
    let unknown = InterfaceInstance(index: 4, bootID: "")
    // Same boot: uptime forward, boot instant unchanged, even with a readable id on one side.
    let same = try delta(reading(counters(1000, 10), a), reading(counters(1500, 20), unknown, seconds: 160))
    #expect(same.kind == .growth && same.traffic.rxBytes == 500)
    // Uptime went back: a new boot, whatever the counters say.
    let rebooted = try delta(reading(counters(1000, 10), unknown, seconds: 500), reading(counters(5000, 20), unknown))
    #expect(rebooted.kind == .reset && rebooted.traffic.rxBytes == 5000)
    // The wall clock was set (boot instant moved): the counters decide.
    let set = try delta(
      reading(counters(1000, 10), unknown), reading(counters(1800, 30), unknown, seconds: 160, clockSet: 3600))
    #expect(set.kind == .growth && set.traffic.rxBytes == 800)
    let setAndLower = try delta(
      reading(counters(1000, 10), unknown), reading(counters(200, 30), unknown, seconds: 160, clockSet: 3600))
    #expect(setAndLower.kind == .reset && setAndLower.traffic.rxBytes == 200)
  }

  @Test("a 64-bit baseline then a 32-bit reading of the same instance: the difference modulo 2^32, never a trap")
  func sixtyFourThenThirtyTwo() {
    // netlink saw 10 GB (over 2^33); getifaddrs then reads the same counters truncated to 32 bits.
    let before: UInt64 = 10_000_000_000
    let after = (before + 123_456) & 0xFFFF_FFFF
    let d = CounterDelta.between(
      reading(TrafficCounts(rxBytes: before, txBytes: before, rxPackets: 7_000_000, txPackets: 9_000_000), a),
      reading(
        TrafficCounts(rxBytes: after, txBytes: after, rxPackets: 7_000_100, txPackets: 9_000_200), a,
        width: .bits32, seconds: 105))
    #expect(
      d
        == CounterDelta(
          TrafficCounts(rxBytes: 123_456, txBytes: 123_456, rxPackets: 100, txPackets: 200), kind: .growth))
  }

  @Test("a 32-bit baseline then a 64-bit reading of the same instance: the difference modulo 2^32, no phantom 4 GiB")
  func thirtyTwoThenSixtyFour() {
    // getifaddrs left a truncated baseline; netlink then reads the full 64-bit counters.
    let truth: UInt64 = 10_000_000_000
    let d = CounterDelta.between(
      reading(
        TrafficCounts(rxBytes: truth & 0xFFFF_FFFF, txBytes: truth & 0xFFFF_FFFF, rxPackets: 10, txPackets: 20), a,
        width: .bits32),
      reading(
        TrafficCounts(rxBytes: truth + 5000, txBytes: truth + 7000, rxPackets: 15, txPackets: 27), a, seconds: 105))
    #expect(d == CounterDelta(TrafficCounts(rxBytes: 5000, txBytes: 7000, rxPackets: 5, txPackets: 7), kind: .growth))
  }
}
