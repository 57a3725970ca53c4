/// Bytes and packets in both directions: the one shape every count vpnstat keeps has — a
/// reading of an interface's counters, the delta between two, a ledger total, a traffic bucket,
/// a history row, a class's sum, a window's usage, a flow.
public struct TrafficCounts: Hashable, Sendable {
  public var rxBytes: UInt64 = 0
  public var txBytes: UInt64 = 0
  public var rxPackets: UInt64 = 0
  public var txPackets: UInt64 = 0

  public init(rxBytes: UInt64 = 0, txBytes: UInt64 = 0, rxPackets: UInt64 = 0, txPackets: UInt64 = 0) {
    self.rxBytes = rxBytes
    self.txBytes = txBytes
    self.rxPackets = rxPackets
    self.txPackets = txPackets
  }

  public static let zero = TrafficCounts()

  // Sums wrap at 2^64 like the counters they add up rather than trap: what is summed is
  // whatever the kernel said.
  public var bytes: UInt64 { rxBytes &+ txBytes }
  public var packets: UInt64 { rxPackets &+ txPackets }
  public var isZero: Bool { rxBytes | txBytes | rxPackets | txPackets == 0 }

  public static func + (a: TrafficCounts, b: TrafficCounts) -> TrafficCounts {
    TrafficCounts(
      rxBytes: a.rxBytes &+ b.rxBytes, txBytes: a.txBytes &+ b.txBytes,
      rxPackets: a.rxPackets &+ b.rxPackets, txPackets: a.txPackets &+ b.txPackets)
  }
  public static func += (a: inout TrafficCounts, b: TrafficCounts) { a = a + b }

  /// `a − b` per field, never below zero (a total that moved between groups, or a base taken
  /// before a reset, is not negative traffic).
  public static func - (a: TrafficCounts, b: TrafficCounts) -> TrafficCounts {
    func sub(_ x: UInt64, _ y: UInt64) -> UInt64 { x >= y ? x - y : 0 }
    return TrafficCounts(
      rxBytes: sub(a.rxBytes, b.rxBytes), txBytes: sub(a.txBytes, b.txBytes),
      rxPackets: sub(a.rxPackets, b.rxPackets), txPackets: sub(a.txPackets, b.txPackets))
  }

  /// The same traffic seen from the other end.
  public var swapped: TrafficCounts {
    TrafficCounts(rxBytes: txBytes, txBytes: rxBytes, rxPackets: txPackets, txPackets: rxPackets)
  }

  /// True when any of the four counts is lower than in `other`.
  public func anyBelow(_ other: TrafficCounts) -> Bool {
    rxBytes < other.rxBytes || txBytes < other.txBytes || rxPackets < other.rxPackets || txPackets < other.txPackets
  }

  /// The counts as a 32-bit reader sees them.
  public var masked32: TrafficCounts {
    TrafficCounts(
      rxBytes: rxBytes & 0xFFFF_FFFF, txBytes: txBytes & 0xFFFF_FFFF, rxPackets: rxPackets & 0xFFFF_FFFF,
      txPackets: txPackets & 0xFFFF_FFFF)
  }

  /// `self − old` modulo 2³², each count on its own (bytes wrap long before packets do).
  public func wrappedDelta(since old: TrafficCounts) -> TrafficCounts {
    func wrapped(_ old: UInt64, _ new: UInt64) -> UInt64 {
      let o = old & 0xFFFF_FFFF
      let n = new & 0xFFFF_FFFF
      return n >= o ? n - o : n + (1 << 32) - o
    }
    return TrafficCounts(
      rxBytes: wrapped(old.rxBytes, rxBytes), txBytes: wrapped(old.txBytes, txBytes),
      rxPackets: wrapped(old.rxPackets, rxPackets), txPackets: wrapped(old.txPackets, txPackets))
  }
}
