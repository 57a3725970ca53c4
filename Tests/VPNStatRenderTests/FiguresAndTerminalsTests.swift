import Testing

@testable import VPNStatModel
@testable import VPNStatRender

/// How figures read (IEC or SI, bytes or bits) and what a terminal gets: ASCII where the locale
/// is not UTF-8, a flat sparkline for a quiet interface, help that names only the columns shown.
struct FiguresAndTerminalsTests {
  @Test("sizes and rates in IEC or SI prefixes, in bytes or bits; bits are SI unless IEC is asked for")
  func units() {
    #expect(Units.size(1_000_000) == "977 KiB")
    #expect(Units.size(1_000_000, units: .si) == "1.00 MB")
    #expect(Units.size(1_000_000, units: .si, bits: true) == "8.00 Mbit")
    #expect(Units.size(1_048_576, units: .iec, bits: true) == "8.00 Mibit")
    #expect(Units.size(999, units: .si) == "999 B")
    #expect(Units.size(1023) == "1023 B")
    #expect(Units.size(UInt64.max, units: .si) == "18.4 EB")
    #expect(Units.rate(125_000, bits: true) == "1.00 Mbit/s")
    #expect(Units.rate(125_000, units: .iec, bits: true) == "977 Kibit/s")
    #expect(Units.rate(1536, bits: false) == "1.50 KiB/s")
    #expect(Units.rate(1500, units: .si, bits: false) == "1.50 kB/s")

    var options = DisplayOptions()
    #expect(options.estimate(2_000_000) == "≈ 1.91 MiB")
    #expect(options.rate(2_000_000) == "≈ 1.91 MiB/s")
    options.units = .si
    #expect(options.estimate(2_000_000) == "≈ 2.00 MB")
    #expect(options.rate(2_000_000) == "≈ 2.00 MB/s")
    options.units = nil
    options.bits = true
    #expect(options.estimate(2_000_000) == "≈ 16.0 Mbit")
    #expect(options.rate(2_000_000) == "≈ 16.0 Mbit/s")
    // --bytes: exact byte counts whatever the units.
    options.rawBytes = true
    #expect(options.estimate(2_000_000) == "≈ 2000000")
  }

  @Test("ASCII for a terminal that shows nothing else: symbols keep their width, other characters become \\xHH")
  func ascii() {
    #expect(TerminalText.ascii("≈ 1.2 MiB · active – …") == "~ 1.2 MiB - active - ...")
    #expect(TerminalText.ascii("▁▂▃▄▅▆▇█") == "_.-=+*%#")
    #expect(TerminalText.ascii("Wi\u{2011}Fi") == "Wi-Fi")
    #expect(TerminalText.ascii("天") == "\\xe5\\xa4\\xa9")
    #expect(TerminalText.ascii("plain ASCII\tstays") == "plain ASCII\tstays")
    // A name's ASCII form is its escaped form: what `-i` takes back.
    let name = InterfaceName(bytes: Array("wgé\\".utf8))
    let shown = DisplayOptions(ascii: true).name(name)
    #expect(shown == "wg\\xc3\\xa9\\\\")
    #expect(InterfaceName(parsingEscaped: shown) == name)
    #expect(DisplayOptions(ascii: false).name(name) == "wgé\\\\")
  }

  @Test("the live view in ASCII: every line ASCII and no wider than the terminal, cut names marked with >")
  func asciiScreen() {
    let snapshot = WatchScreenTests.snapshot(classes: [.tunnel, .wifi, .other], state: .active)
    for size in WatchScreenTests.sizes {
      let lines = WatchScreen.render(
        snapshot, history: RateHistory(), state: WatchViewState(showHelp: true), size: size,
        options: DisplayOptions(ascii: true))
      for line in lines {
        #expect(line.unicodeScalars.allSatisfy { $0.isASCII }, "\(size): \(line)")
        #expect(line.utf8.count <= size.columns, "\(size): \(line)")
      }
      #expect(lines.contains { $0.contains("~ ") }, "no ~ for ≈ at \(size)")
    }
    let wide = WatchScreen.render(
      snapshot, history: RateHistory(), state: WatchViewState(), size: TerminalSize(columns: 200, rows: 60),
      options: DisplayOptions(ascii: true))
    #expect(wide.contains { $0.contains("\\xe5\\xa4\\xa9") }, "天 not escaped:\n\(wide.joined(separator: "\n"))")
    let narrow = WatchScreen.render(
      snapshot, history: RateHistory(), state: WatchViewState(), size: TerminalSize(columns: 40, rows: 30),
      options: DisplayOptions(ascii: true))
    #expect(narrow.contains { $0.contains(">") }, "no cut marked:\n\(narrow.joined(separator: "\n"))")
    let plain = WatchScreen.plainLines(snapshot, options: DisplayOptions(ascii: true))
    #expect(plain.allSatisfy { $0.unicodeScalars.allSatisfy { $0.isASCII } }, "\(plain)")
    #expect(plain.contains { $0.contains("rx=~") })
  }

  static func report(rate: Double?, ledger: Bool) -> InterfaceReport {
    InterfaceReport(
      name: InterfaceName("tun0"), index: 4, interfaceClass: .tunnel, classBy: .kind, state: .up,
      counters: InterfaceCounters(.zero), width: .bits64,
      rate: rate.map { TrafficRate(rxBytesPerSecond: $0, txBytesPerSecond: 0) },
      ledger: ledger ? LedgerTotals(.zero, resets: 0, firstSeenAt: Timestamp(seconds: 0)) : nil)
  }

  static func snapshot(rate: Double?, ledger: Bool) -> StatusSnapshot {
    StatusSnapshot(
      generatedAt: Timestamp(seconds: 0), source: .netlink, interfaces: [report(rate: rate, ledger: ledger)])
  }

  @Test("a sparkline of zeros, or of rates shown as ≈ 0 B/s, is flat; real traffic still scales to its peak")
  func flatSparkline() {
    var quiet = RateHistory()
    for rate: Double in [0, 0.3, 0, 0.9, 0] { quiet.record(Self.snapshot(rate: rate, ledger: false)) }
    #expect(quiet.sparkline(for: InterfaceName("tun0"), width: 5) == "▁▁▁▁▁")
    #expect(quiet.sparkline(for: InterfaceName("tun0"), width: 7) == "  ▁▁▁▁▁")
    let screen = WatchScreen.render(
      Self.snapshot(rate: 0.4, ledger: false), history: quiet, state: WatchViewState(),
      size: TerminalSize(columns: 100, rows: 20), options: DisplayOptions())
    let row = screen.first { $0.hasPrefix("  tun0") } ?? ""
    #expect(row.contains("≈ 0 B/s") && row.contains("▁▁▁"), "\(row)")
    #expect(!row.contains("█"), "a full block beside ≈ 0 B/s: \(row)")

    var busy = RateHistory()
    for rate: Double in [0, 700, 350] { busy.record(Self.snapshot(rate: rate, ledger: false)) }
    #expect(busy.sparkline(for: InterfaceName("tun0"), width: 3) == "▁█▅")
  }

  @Test("a line per name, bounded: a vanished interface decays with zeros and goes, one that returns starts again")
  func historyLines() {
    func snapshot(_ rates: [String: Double?]) -> StatusSnapshot {
      StatusSnapshot(
        generatedAt: Timestamp(seconds: 0), source: .netlink,
        interfaces: rates.sorted { $0.key < $1.key }.enumerated().map { i, entry in
          InterfaceReport(
            name: InterfaceName(entry.key), index: Int32(i + 2), interfaceClass: .tunnel, classBy: .kind,
            state: .up, counters: InterfaceCounters(.zero), width: .bits64,
            rate: entry.value.map { TrafficRate(rxBytesPerSecond: $0, txBytesPerSecond: 1) })
        })
    }
    let tun0 = InterfaceName("tun0")
    let wg0 = InterfaceName("wg0")
    var history = RateHistory(capacity: 3)
    for rate: Double in [10, 20, 30, 40] { history.record(snapshot(["tun0": rate, "wg0": 5])) }
    #expect(history.line(for: tun0) == [21, 31, 41])
    // tun0 gone (and a report without a rate counts as gone): zeros until only zeros are left.
    history.record(snapshot(["wg0": 5, "tun0": nil]))
    #expect(history.line(for: tun0) == [31, 41, 0])
    history.record(snapshot(["wg0": 5]))
    #expect(history.line(for: tun0) == [41, 0, 0])
    history.record(snapshot(["wg0": 5]))
    #expect(history.rates[tun0] == nil)
    #expect(history.line(for: wg0) == [6, 6, 6])
    history.record(snapshot(["tun0": 99, "wg0": 5]))
    #expect(history.line(for: tun0) == [100])
  }

  @Test("the help overlay explains the TOTAL columns only when they are shown")
  func helpOverlay() {
    func screen(ledger: Bool) -> String {
      WatchScreen.render(
        Self.snapshot(rate: 10, ledger: ledger), history: RateHistory(), state: WatchViewState(showHelp: true),
        size: TerminalSize(columns: 120, rows: 40), options: DisplayOptions()
      ).joined(separator: "\n")
    }
    let withoutDatabase = screen(ledger: false)
    #expect(!withoutDatabase.contains("TOTAL"), "\(withoutDatabase)")
    #expect(withoutDatabase.contains("RX, TX are the kernel's counters"))
    let withDatabase = screen(ledger: true)
    #expect(withDatabase.contains("TOTAL RX, TOTAL TX are the ledger's totals"), "\(withDatabase)")
  }

  @Test("bits in the live view: --bits starts it in bits and b toggles sizes and rates alike")
  func watchBits() {
    var options = DisplayOptions()
    options.bits = true
    let bits = WatchScreen.render(
      Self.snapshot(rate: 125_000, ledger: false), history: RateHistory(), state: WatchViewState(bits: true),
      size: TerminalSize(columns: 120, rows: 20), options: options
    ).joined(separator: "\n")
    #expect(bits.contains("≈ 1.00 Mbit/s") && bits.contains("≈ 0 bit"), "\(bits)")
    #expect(bits.contains("b bits"))
    let bytes = WatchScreen.render(
      Self.snapshot(rate: 125_000, ledger: false), history: RateHistory(), state: WatchViewState(bits: false),
      size: TerminalSize(columns: 120, rows: 20), options: DisplayOptions(units: .si)
    ).joined(separator: "\n")
    #expect(bytes.contains("≈ 125 kB/s"), "\(bytes)")
  }
}
