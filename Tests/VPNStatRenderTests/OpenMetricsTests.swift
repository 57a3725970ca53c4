import Testing

@testable import VPNStatModel
@testable import VPNStatRender

/// The one-pass OpenMetrics renderer writes exactly what the previous one did, byte for byte,
/// in both formats, whatever the names, numbers, times and session hold.
struct OpenMetricsTests {
  /// A small deterministic generator, so every run checks the same varied inputs.
  struct Generator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return state >> 11
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func counter() -> UInt64 {
      switch below(5) {
      case 0: return 0
      case 1: return UInt64.max - UInt64(below(3))
      case 2: return UInt64(below(10))
      default: return next() &* 7
      }
    }
  }

  static let hostile: [[UInt8]] =
    EscapingTests.hostile + RenderingTests.hostile + [
      Array("wg0".utf8), Array("eth0".utf8), Array("a b".utf8), Array("x\"".utf8), Array("\\".utf8), [0x7F], [0x20],
      Array("~!@#$%^&*()_+".utf8), [0xE2, 0x80, 0xAE], Array("é".utf8), Array("𝔘".utf8),
    ]

  func entry(_ name: [UInt8], _ generator: inout Generator) -> LedgerEntry {
    let first = Timestamp(
      nanoseconds: [0, 5_000_000, 50_000_000, 999_999_999, -1_500_000_000, 1_800_000_000_123_456_789][
        generator.below(6)] + Int64(generator.below(1_000_000)) * 1_000_000_000)
    return LedgerEntry(
      name: InterfaceName(bytes: name), interfaceClass: InterfaceClass.allCases[generator.below(6)],
      baseline: LedgerBaseline(
        instance: InterfaceInstance(index: 3, bootID: "b"), counters: .zero, width: .bits64, wall: first,
        boottime: 0),
      totals: LedgerTotals(
        TrafficCounts(
          rxBytes: generator.counter(), txBytes: generator.counter(), rxPackets: generator.counter(),
          txPackets: generator.counter()), resets: generator.counter(), wraps: generator.counter(),
        discarded: generator.counter(), firstSeenAt: first))
  }

  func sessions() -> [SessionReport?] {
    let now = Timestamp(seconds: 1_800_000_000)
    let window = SessionWindow.open(
      at: now - .seconds(100), lengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)))
    var reports: [SessionReport?] = [nil]
    for (state, offset) in [
      (SessionState.active, 0), (.paused, 1000), (.expired, 1000), (.none, 0), (.unlimited, 0),
    ] {
      var record = SessionRecord(window: window, tunnel: InterfaceName("wg0"))
      record.usageBase = TrafficCounts(rxBytes: 10, txBytes: 20)
      if state == .unlimited { record.plan = .premium }
      if state == .none { record.window = nil }
      reports.append(
        SessionReport.make(
          record, now: now + .seconds(Int64(offset)), tunnelUp: state == .expired,
          nextLengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)),
          tunnelTotals: TrafficCounts(rxBytes: 5_000, txBytes: 7_000), lastStop: nil))
    }
    // Data caps: under, exactly at and over, per day, week and month, with and without a window.
    for (limit, length, state) in [
      (UInt64(1_000_000), PeriodLength.day, SessionState.active), (12_000, .week, .paused),
      (UInt64.max, .month, .none), (0, .month, .active),
    ] {
      var record = SessionRecord(window: state == .none ? nil : window, tunnel: InterfaceName("wg0"))
      let cap = DataCap(limitBytes: limit, period: UsagePeriod(length))
      record.dataCap = cap
      reports.append(
        SessionReport.make(
          record, now: now + .seconds(state == .paused ? 1000 : 0), tunnelUp: true,
          nextLengths: SessionLengths(session: .seconds(900), pause: .seconds(2700)),
          tunnelTotals: TrafficCounts(rxBytes: 5_000, txBytes: 7_000), lastStop: nil,
          dataCap: cap.status(
            used: TrafficCounts(rxBytes: 5_000, txBytes: 7_000), at: now, in: FixedOffsetCalendar.utc)))
    }
    return reports
  }

  func expectSame(
    _ ledger: Ledger, _ session: SessionReport?, _ health: StoreHealth?, _ time: Timestamp,
    sourceLocation: SourceLocation = #_sourceLocation
  ) {
    for format in OpenMetrics.Format.allCases {
      let now = OpenMetrics.render(ledger: ledger, session: session, health: health, at: time, format: format)
      let before = Array(
        PreviousOpenMetrics.render(ledger: ledger, session: session, health: health, at: time, format: format).utf8)
      #expect(
        now == before, "\(format): \(String(decoding: now, as: UTF8.self).prefix(300))", sourceLocation: sourceLocation)
    }
  }

  @Test("hostile names, every class, extreme counters and times: the same bytes as before, in both formats")
  func hostileNames() {
    var generator = Generator(state: 14)
    let ledger = Ledger(
      entries: Dictionary(
        Self.hostile.map { (InterfaceName(bytes: $0), entry($0, &generator)) }, uniquingKeysWith: { first, _ in first })
    )
    for session in sessions() {
      expectSame(ledger, session, StoreHealth(), Timestamp(seconds: 1_800_000_000))
      expectSame(ledger, session, nil, Timestamp(nanoseconds: 1_800_000_000_007_000_000))
    }
  }

  @Test("random ledgers of random byte names, from none to a thousand interfaces: the same bytes as before")
  func randomLedgers() {
    var generator = Generator(state: 2026)
    for size in [0, 1, 2, 7, 64, 1000] {
      var entries: [InterfaceName: LedgerEntry] = [:]
      while entries.count < size {
        let name = (0..<(1 + generator.below(15))).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        entries[InterfaceName(bytes: name)] = entry(name, &generator)
      }
      var health = StoreHealth()
      health.notificationOverflows = generator.counter()
      let time = Timestamp(
        nanoseconds: Int64(generator.below(2_000_000_000)) * 1_000_000_000 + Int64(generator.below(1000)) * 1_000_000)
      expectSame(Ledger(entries: entries), sessions()[generator.below(10)], size % 2 == 0 ? health : nil, time)
    }
  }

  @Test("written in pieces as export writes it: the same bytes as rendered whole, in pieces of about 64 KiB")
  func pieces() {
    var generator = Generator(state: 77)
    var entries: [InterfaceName: LedgerEntry] = [:]
    while entries.count < 1000 {
      let name = Array("ifb\(generator.below(100_000))".utf8)
      entries[InterfaceName(bytes: name)] = entry(name, &generator)
    }
    let ledger = Ledger(entries: entries)
    for format in OpenMetrics.Format.allCases {
      for session in [nil] + sessions().suffix(2) {
        let whole = OpenMetrics.render(
          ledger: ledger, session: session, health: StoreHealth(), at: Timestamp(seconds: 1), format: format)
        var pieces: [[UInt8]] = []
        OpenMetrics.write(
          ledger: ledger, session: session, health: StoreHealth(), at: Timestamp(seconds: 1), format: format
        ) { pieces.append(Array($0)) }
        #expect(pieces.joined().elementsEqual(whole), "\(format)")
        #expect(pieces.count > 4 && pieces.allSatisfy { !$0.isEmpty && $0.count < MetricsText.piece + 4096 })
      }
    }
    var small: [[UInt8]] = []
    OpenMetrics.write(ledger: Ledger(), session: nil, at: Timestamp(seconds: 1)) { small.append(Array($0)) }
    #expect(
      small.count == 1
        && small.joined().elementsEqual(OpenMetrics.render(ledger: Ledger(), session: nil, at: Timestamp(seconds: 1))))
  }

  @Test("a label is the name's own bytes only when they need no escape; otherwise the injective escaped form")
  func labelFastPath() {
    for bytes in Self.hostile {
      var out = OutputBytes(capacity: 16)
      OpenMetrics.appendLabel(InterfaceName(bytes: bytes), to: &out)
      #expect(out.array == Array(OpenMetrics.label(InterfaceName(bytes: bytes)).utf8), "\(bytes)")
    }
  }

  @Test("a creation time at either end of the Timestamp range (a damaged row) is written, not a crash")
  func extremeCreationTimes() {
    var generator = Generator(state: 1)
    var entries: [InterfaceName: LedgerEntry] = [:]
    for (name, nanoseconds) in [("old", Int64.min), ("new", Int64.max)] {
      var entry = entry(Array(name.utf8), &generator)
      entry.totals.firstSeenAt = Timestamp(nanoseconds: nanoseconds)
      entries[entry.name] = entry
    }
    let text = String(
      decoding: OpenMetrics.render(ledger: Ledger(entries: entries), session: nil, at: Timestamp(seconds: 0)),
      as: UTF8.self)
    #expect(text.contains("vpnstat_interface_receive_bytes_created{interface=\"old\",class="))
    #expect(text.contains(" -9223372037.145\n"), "\(text.prefix(400))")
    #expect(text.contains(" 9223372036.854\n"))
  }
}
