/// Which instance of an interface name a sample came from. A tunnel recreated on reconnect, or the
/// same name after a reboot, is a new instance whose counters started at zero.
public struct InterfaceInstance: Hashable, Sendable {
  public var index: Int32
  public var bootID: String
  public init(index: Int32, bootID: String) {
    self.index = index
    self.bootID = bootID
  }
}

/// The traffic between two samples of one interface name, and how it was derived.
public struct CounterDelta: Hashable, Sendable {
  public enum Kind: String, Hashable, Sendable {
    /// Same instance, every counter grew (or stayed).
    case growth
    /// A new instance (ifindex or boot id changed), or a 64-bit counter that dropped (the driver
    /// cleared its statistics): the new counters are all new traffic.
    case reset
    /// Same instance, a 32-bit counter dropped: it wrapped at 2³² (exact arithmetic).
    case wrap
  }

  public var rxBytes: UInt64
  public var txBytes: UInt64
  public var rxPackets: UInt64
  public var txPackets: UInt64
  public var kind: Kind

  public init(rxBytes: UInt64, txBytes: UInt64, rxPackets: UInt64, txPackets: UInt64, kind: Kind) {
    self.rxBytes = rxBytes
    self.txBytes = txBytes
    self.rxPackets = rxPackets
    self.txPackets = txPackets
    self.kind = kind
  }

  /// The rules of DESIGN.md ("The ledger"): the only place they are written.
  public static func between(
    _ old: InterfaceCounters, _ oldInstance: InterfaceInstance, _ new: InterfaceCounters,
    _ newInstance: InterfaceInstance, width: CounterWidth
  ) -> CounterDelta {
    let fresh = CounterDelta(
      rxBytes: new.rxBytes, txBytes: new.txBytes, rxPackets: new.rxPackets,
      txPackets: new.txPackets, kind: .reset)
    if oldInstance != newInstance { return fresh }
    switch width {
    case .bits64:
      let dropped =
        new.rxBytes < old.rxBytes || new.txBytes < old.txBytes || new.rxPackets < old.rxPackets
        || new.txPackets < old.txPackets
      if dropped { return fresh }
      return CounterDelta(
        rxBytes: new.rxBytes - old.rxBytes, txBytes: new.txBytes - old.txBytes,
        rxPackets: new.rxPackets - old.rxPackets, txPackets: new.txPackets - old.txPackets,
        kind: .growth)
    case .bits32:
      // Modulo 2^32, each counter on its own (bytes wrap long before packets do). Both sides are
      // masked: one may be a 64-bit reading of the same instance (netlink and getifaddrs sharing
      // one database), in either order.
      var wrappedAny = false
      func wrapped(_ old: UInt64, _ new: UInt64) -> UInt64 {
        let o = old & 0xFFFF_FFFF
        let n = new & 0xFFFF_FFFF
        if n < o { wrappedAny = true }
        return n >= o ? n - o : n + (1 << 32) - o
      }
      var delta = CounterDelta(
        rxBytes: wrapped(old.rxBytes, new.rxBytes), txBytes: wrapped(old.txBytes, new.txBytes),
        rxPackets: wrapped(old.rxPackets, new.rxPackets),
        txPackets: wrapped(old.txPackets, new.txPackets), kind: .growth)
      if wrappedAny { delta.kind = .wrap }
      return delta
    }
  }
}
