import VPNStatModel

/// Recent rates per interface name, for sparklines. Keyed by name, so a recreated tunnel keeps
/// its line; bounded, so a long watch uses constant memory.
package struct RateHistory: Sendable {
  package let capacity: Int
  private(set) var rates: [InterfaceName: [Double]] = [:]

  package init(capacity: Int = 120) { self.capacity = capacity }

  /// Appends each interface's combined rate (rx + tx, bytes per second); forgets names absent
  /// from `snapshot` for longer than the history is long.
  package mutating func record(_ snapshot: StatusSnapshot) {
    // Each line is appended to where it lies in the table (a line taken out and put back would
    // be copied, for every interface at every refresh), and the reports are read in place.
    var recorded = 0
    for index in snapshot.interfaces.indices {
      guard let rate = snapshot.interfaces[index].rate else { continue }
      Self.push(
        rate.rxBytesPerSecond + rate.txBytesPerSecond, to: &rates[snapshot.interfaces[index].name, default: []],
        capacity: capacity)
      recorded += 1
    }
    // Only when some line was not just appended to does it take a set of the names seen.
    guard rates.count > recorded else { return }
    var seen = Set<InterfaceName>(minimumCapacity: recorded)
    for report in snapshot.interfaces where report.rate != nil { seen.insert(report.name) }
    for name in Array(rates.keys) where !seen.contains(name) {
      // A vanished interface's line decays with zeros, then goes; one that returns resumes it.
      Self.push(0, to: &rates[name, default: []], capacity: capacity)
      if rates[name]?.allSatisfy({ $0 == 0 }) == true { rates[name] = nil }
    }
  }

  /// Static: an instance method would hold a copy of `self`, and with it a second reference to
  /// the table, while the line is changed in place, and so copy the whole table every time.
  private static func push(_ value: Double, to line: inout [Double], capacity: Int) {
    line.append(value)
    if line.count > capacity { line.removeFirst(line.count - capacity) }
  }

  package func line(for name: InterfaceName) -> [Double] { rates[name] ?? [] }

  /// Rates below this many bytes per second draw as zero: they show as `≈ 0 B/s` beside the
  /// line, and a lone bar over nothing would be a full block.
  package static let zeroBelow = 1.0

  /// The last `width` rates of `name` as a sparkline (▁▂▃▄▅▆▇█, blank before the first rate),
  /// scaled to their own peak, right-aligned. Zero is the bottom line, so a quiet interface is
  /// flat, never a row of full blocks.
  package func sparkline(for name: InterfaceName, width: Int) -> String {
    guard width > 0 else { return "" }
    let values = Array(line(for: name).suffix(width)).map { $0 < Self.zeroBelow ? 0 : $0 }
    let peak = values.max() ?? 0
    // Made as UTF-8 bytes: appended as Characters, a screenful of sparklines was a fifth of a
    // refresh. The blocks are U+2581 … U+2588, E2 96 81 … E2 96 88.
    var utf8: [UInt8] = []
    utf8.reserveCapacity(width - values.count + 3 * values.count)
    utf8.append(contentsOf: repeatElement(UInt8(ascii: " "), count: width - values.count))
    for value in values {
      let level = peak <= 0 ? 0 : min(7, Int((value / peak * 7).rounded()))
      utf8.append(0xE2)
      utf8.append(0x96)
      utf8.append(0x81 + UInt8(level))
    }
    return String(decoding: utf8, as: UTF8.self)
  }
}
