import Foundation
import Testing

@testable import VPNStatCapture
@testable import VPNStatCommandLine
@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatStore
@testable import VPNStatSystem

/// Names, JSON and tables: what leaves vpnstat is exact and safe whatever the names hold.
struct RenderingTests {
  static let hostile: [[UInt8]] = [
    Array("e\u{1B}[2Jv".utf8), Array("\u{1B}]0;pwned\u{07}".utf8), [0x62, 0xFF, 0xFE, 0x61],
    Array("\u{202E}lanigiro".utf8), Array("q\"\\'n".utf8), Array("\u{9B}31m".utf8),
    Array("a\\x41".utf8), Array("天気wg0".utf8), [0xC3], Array("tab\tnl\ncr\r".utf8),
  ]

  func snapshot(names: [[UInt8]]) -> StatusSnapshot {
    let reports = names.enumerated().map { (i, bytes) in
      InterfaceReport(
        name: InterfaceName(bytes: bytes), index: Int32(i + 2), interfaceClass: .tunnel,
        classBy: .kind, state: .up,
        counters: InterfaceCounters(
          TrafficCounts(rxBytes: UInt64(i) * 1_000_003, txBytes: 5, rxPackets: 1, txPackets: 2)),
        width: .bits64)
    }
    return StatusSnapshot(generatedAt: Timestamp(seconds: 1_800_000_000), source: .netlink, interfaces: reports)
  }

  @Test("every name survives JSON exactly, by its documented encoding")
  func jsonRoundTrip() throws {
    let bytes = StatusJSON.render(snapshot(names: Self.hostile))
    let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    let entries = try #require(object["interfaces"] as? [[String: Any]])
    #expect(entries.count == Self.hostile.count)
    for (entry, original) in zip(entries, Self.hostile) {
      let text = try #require(entry["name"] as? String)
      switch entry["name_encoding"] as? String {
      case "utf8": #expect(Array(text.utf8) == original)
      case "escaped": #expect(InterfaceName(parsingEscaped: text).bytes == original)
      default: Issue.record("bad name_encoding")
      }
    }
    #expect(object["schema_version"] as? Int == 1)
    #expect(object["estimate"] as? Bool == true)
  }

  @Test("the escaped form is lossless for every byte")
  func escapedIsLossless() {
    for byte in UInt8.min...UInt8.max where byte != 0 && byte != 0x2F {
      let name = InterfaceName(bytes: [0x61, byte, 0x5C, byte])
      #expect(InterfaceName(parsingEscaped: name.escaped) == name)
      #expect(name.escaped.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F })
    }
  }

  @Test("tables never carry a raw control byte, BiDi control or C1 code, whatever the names")
  func tableIsSafe() {
    let text = StatusTable.render(snapshot(names: Self.hostile), options: DisplayOptions(color: false))
    for scalar in text.unicodeScalars {
      #expect(!(scalar.value < 0x20 && scalar != "\n"), "control \(scalar.value)")
      #expect(!(0x7F...0x9F).contains(scalar.value), "C1 \(scalar.value)")
      #expect(!(0x202A...0x202E).contains(scalar.value) && !(0x2066...0x2069).contains(scalar.value))
    }
    #expect(text.contains("e\\x1b[2Jv"))
    #expect(text.contains("天気wg0"))
    #expect(text.contains("≈"))
  }

  @Test("colour only adds SGR sequences, and none when off")
  func colour() {
    let snap = snapshot(names: [Array("wg0".utf8)])
    let plain = StatusTable.render(snap, options: DisplayOptions(color: false))
    let coloured = StatusTable.render(snap, options: DisplayOptions(color: true))
    #expect(!plain.contains("\u{1B}"))
    #expect(coloured.contains("\u{1B}[1m"))
    let stripped = coloured.replacing(/\x1B\[[0-9;]*m/, with: "")
    #expect(stripped == plain)
  }

  @Test("IEC units with three significant figures, rates in bytes or bits")
  func units() {
    #expect(Units.bytes(0) == "0 B")
    #expect(Units.bytes(1023) == "1023 B")
    #expect(Units.bytes(1536) == "1.50 KiB")
    #expect(Units.bytes(10 * 1024 * 1024 + 300_000) == "10.3 MiB")
    #expect(Units.bytes(5_000_000_000) == "4.66 GiB")
    #expect(Units.rate(1_250_000, bits: true) == "10.0 Mbit/s")
    #expect(Units.rate(512, bits: false) == "512 B/s")
    #expect(Units.duration(seconds: 31 * 60 + 12) == "31 min 12 s")
    #expect(Units.clock(seconds: 899) == "14:59")
  }

  @Test("RFC 3339 timestamps format and parse back")
  func timestamps() {
    let t = Timestamp(nanoseconds: 1_796_000_000_123_000_000)
    #expect(t.rfc3339 == "2026-11-30T00:53:20Z")
    #expect(t.rfc3339(fractionDigits: 3) == "2026-11-30T00:53:20.123Z")
    #expect(Timestamp(rfc3339: "2026-11-30T00:53:20.123Z") == t)
    #expect(Timestamp(rfc3339: "2026-11-30T01:53:20.123+01:00") == t)
    #expect(Timestamp(seconds: 0).rfc3339 == "1970-01-01T00:00:00Z")
    #expect(Timestamp(seconds: -1).rfc3339 == "1969-12-31T23:59:59Z")
    #expect(Timestamp(rfc3339: "2026-13-01T00:00:00Z") == nil)
    #expect(Timestamp(rfc3339: "yesterday") == nil)
  }

  @Test("terminal width: wide characters count twice, truncation marks the cut")
  func width() {
    #expect(TerminalText.width("abc") == 3)
    #expect(TerminalText.width("天気") == 4)
    #expect(TerminalText.truncate("abcdefgh", to: 5) == "abcd…")
    #expect(TerminalText.width(TerminalText.truncate("天気天気天気", to: 5)) <= 5)
  }
}

/// The ledger's delta rules and the reader's fallback, without a kernel.
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

  @Test("netlink refused falls back to sysfs and says so")
  func fallback() throws {
    let tree = try SysfsFixture()
    try tree.add("wg0", index: 2, type: 65534)
    var reader = CounterReader(.netlink, root: tree.root, openNetlink: { throw Errno.permissionDenied })
    let sample = try reader.sample(at: ManualTimeSource())
    #expect(sample.source == .sysfs)
    #expect(sample.fallbackReason?.contains("netlink") == true)
    #expect(sample.interfaces.map(\.name) == [InterfaceName("wg0")])
  }
}
