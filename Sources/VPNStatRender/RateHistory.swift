import VPNStatModel

/// Recent rates per interface name, for sparklines. Keyed by name, so a recreated tunnel keeps
/// its line; bounded, so a long watch uses constant memory.
public struct RateHistory: Sendable {
  public let capacity: Int
  private(set) var rates: [InterfaceName: [Double]] = [:]

  public init(capacity: Int = 120) { self.capacity = capacity }

  /// Appends each interface's combined rate (rx + tx, bytes per second); forgets names absent
  /// from `snapshot` for longer than the history is long.
  public mutating func record(_ snapshot: StatusSnapshot) {
    var seen = Set<InterfaceName>()
    for report in snapshot.interfaces {
      guard let rate = report.rate else { continue }
      seen.insert(report.name)
      var line = rates[report.name] ?? []
      line.append(rate.rxBytesPerSecond + rate.txBytesPerSecond)
      if line.count > capacity { line.removeFirst(line.count - capacity) }
      rates[report.name] = line
    }
    for name in rates.keys where !seen.contains(name) {
      // A vanished interface's line decays with zeros, then goes; one that returns resumes it.
      var line = rates[name]!
      line.append(0)
      if line.count > capacity { line.removeFirst(line.count - capacity) }
      rates[name] = line.allSatisfy { $0 == 0 } ? nil : line
    }
  }

  public func line(for name: InterfaceName) -> [Double] { rates[name] ?? [] }

  /// Rates below this many bytes per second draw as zero: they show as `≈ 0 B/s` beside the
  /// line, and a lone bar over nothing would be a full block.
  public static let zeroBelow = 1.0

  /// The last `width` rates of `name` as a sparkline (▁▂▃▄▅▆▇█, blank before the first rate),
  /// scaled to their own peak, right-aligned. Zero is the bottom line, so a quiet interface is
  /// flat, never a row of full blocks.
  public func sparkline(for name: InterfaceName, width: Int) -> String {
    guard width > 0 else { return "" }
    let values = Array(line(for: name).suffix(width)).map { $0 < Self.zeroBelow ? 0 : $0 }
    let peak = values.max() ?? 0
    let blocks: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
    var out = String(repeating: " ", count: width - values.count)
    for value in values {
      if peak <= 0 {
        out.append(blocks[0])
      } else {
        out.append(blocks[min(7, Int((value / peak * 7).rounded()))])
      }
    }
    return out
  }
}
