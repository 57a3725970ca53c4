/// The last sample the ledger advanced an interface name from.
public struct LedgerBaseline: Hashable, Sendable {
  public var instance: InterfaceInstance
  public var counters: InterfaceCounters
  public var width: CounterWidth
  public var wall: Timestamp
  /// CLOCK_BOOTTIME of the sample, nanoseconds; with the boot id it times the interval.
  public var boottime: Int64

  public init(
    instance: InterfaceInstance, counters: InterfaceCounters, width: CounterWidth, wall: Timestamp,
    boottime: Int64
  ) {
    self.instance = instance
    self.counters = counters
    self.width = width
    self.wall = wall
    self.boottime = boottime
  }
}

/// The ledger's record of one interface name: where it last stood and the totals that only grow.
public struct LedgerEntry: Hashable, Sendable {
  public var name: InterfaceName
  public var interfaceClass: InterfaceClass
  public var baseline: LedgerBaseline
  public var totals: LedgerTotals

  public init(name: InterfaceName, interfaceClass: InterfaceClass, baseline: LedgerBaseline, totals: LedgerTotals) {
    self.name = name
    self.interfaceClass = interfaceClass
    self.baseline = baseline
    self.totals = totals
  }
}

/// One reading of one interface instance to advance the ledger with: from a sample, or from a
/// link notification (a `RTM_DELLINK` carries the dying instance's final counters).
public struct LedgerObservation: Hashable, Sendable {
  public var name: InterfaceName
  public var interfaceClass: InterfaceClass
  public var baseline: LedgerBaseline
  /// The fastest plausible traffic, bytes per second: the link speed where the kernel knows a
  /// real one, else the configured cap.
  public var plausibleBytesPerSecond: Double
  /// True for a link notification. Netlink notifications carry no time of their own and may be
  /// read after a newer poll of the same instance, so one can never move that instance back.
  public var isNotification: Bool

  public init(
    name: InterfaceName, interfaceClass: InterfaceClass, baseline: LedgerBaseline,
    plausibleBytesPerSecond: Double, isNotification: Bool = false
  ) {
    self.name = name
    self.interfaceClass = interfaceClass
    self.baseline = baseline
    self.plausibleBytesPerSecond = plausibleBytesPerSecond
    self.isNotification = isNotification
  }
}

/// Something the ledger had to bridge or refuse, reported with the totals (and by `record` on
/// stderr, one line each).
public struct LedgerEvent: Hashable, Sendable {
  public enum Kind: String, Hashable, Sendable {
    case reset, wrap, discarded
  }
  public var name: InterfaceName
  public var kind: Kind
  public var delta: CounterDelta
  public var detail: String
}

/// Traffic the ledger booked for one name at one time: what the traffic buckets add up.
public struct BookedTraffic: Hashable, Sendable {
  public var name: InterfaceName
  public var interfaceClass: InterfaceClass
  public var wall: Timestamp
  public var delta: CounterDelta
}

/// The result of one advance: the entries it changed, the traffic it booked, what it bridged.
public struct LedgerAdvance: Sendable {
  public var changed: [LedgerEntry] = []
  public var booked: [BookedTraffic] = []
  public var events: [LedgerEvent] = []
}

/// Cumulative, bridged traffic per interface name: the rules of DESIGN.md ("The ledger") applied
/// to a stream of observations. Pure: the Store loads and saves it, the clock and kernel feed it.
public struct Ledger: Sendable {
  public private(set) var entries: [InterfaceName: LedgerEntry]

  public init(entries: [InterfaceName: LedgerEntry] = [:]) { self.entries = entries }

  /// A ledger whose totals are just the kernel's counters of the observed instances: what can be
  /// reported when there is no database to keep a real one in.
  public init(kernelCountersOf observations: [LedgerObservation]) {
    var entries: [InterfaceName: LedgerEntry] = [:]
    for observation in observations {
      let counters = observation.baseline.counters
      entries[observation.name] = LedgerEntry(
        name: observation.name, interfaceClass: observation.interfaceClass, baseline: observation.baseline,
        totals: LedgerTotals(
          rxBytes: counters.rxBytes, txBytes: counters.txBytes, rxPackets: counters.rxPackets,
          txPackets: counters.txPackets, firstSeenAt: observation.baseline.wall))
    }
    self.entries = entries
  }

  /// The default cap on plausible traffic where no link speed is known: 100 Gbit/s.
  public static let defaultCapBytesPerSecond = 100e9 / 8

  /// Applies observations in order. A name seen for the first time starts at its current
  /// counters (totals count the traffic vpnstat saw happen); a known name adds the delta the
  /// rules give, unless it is faster than plausible, in which case it is discarded and counted.
  public mutating func advance(_ observations: [LedgerObservation]) -> LedgerAdvance {
    var result = LedgerAdvance()
    for observation in observations {
      let new = observation.baseline
      guard var entry = entries[observation.name] else {
        let entry = LedgerEntry(
          name: observation.name, interfaceClass: observation.interfaceClass, baseline: new,
          totals: LedgerTotals(firstSeenAt: new.wall))
        entries[observation.name] = entry
        result.changed.append(entry)
        continue
      }
      let old = entry.baseline
      if old.instance == new.instance {
        // Out of order: a poll stamped before the baseline, or a notification queued behind a
        // newer poll (its counters lower than what was already booked) adds nothing.
        if new.boottime < old.boottime { continue }
        if observation.isNotification && new.counters.anyBelow(old.counters) { continue }
      }
      // A 32-bit reading on either side can only be compared modulo 2^32.
      let delta = CounterDelta.between(
        old.counters, old.instance, new.counters, new.instance, width: old.width == .bits32 ? .bits32 : new.width)
      entry.interfaceClass = observation.interfaceClass
      entry.baseline = new
      let unchanged =
        delta.kind == .growth && delta.rxBytes == 0 && delta.txBytes == 0
        && delta.rxPackets == 0 && delta.txPackets == 0
      if unchanged {
        // Nothing to book; keep the stored baseline as it was, so idle interfaces cost no write.
        continue
      }
      let seconds = Self.window(from: old, to: new)
      let allowed = observation.plausibleBytesPerSecond * (seconds + 1)
      if Double(delta.rxBytes) > allowed || Double(delta.txBytes) > allowed {
        entry.totals.discarded += 1
        result.events.append(
          LedgerEvent(
            name: observation.name, kind: .discarded, delta: delta,
            detail:
              "\(delta.kind == .growth ? "delta" : delta.kind.rawValue) of rx \(delta.rxBytes) / tx \(delta.txBytes) bytes in \(Self.format(seconds)) s exceeds the plausible \(Units.rate(observation.plausibleBytesPerSecond, bits: true))"
          ))
      } else {
        entry.totals.rxBytes &+= delta.rxBytes
        entry.totals.txBytes &+= delta.txBytes
        entry.totals.rxPackets &+= delta.rxPackets
        entry.totals.txPackets &+= delta.txPackets
        switch delta.kind {
        case .growth: break
        case .reset:
          entry.totals.resets += 1
          let why: String
          if old.instance.bootID != new.instance.bootID {
            why = "rebooted"
          } else if old.instance.index != new.instance.index {
            why = "recreated, ifindex \(old.instance.index) → \(new.instance.index)"
          } else {
            why = "counters cleared"
          }
          result.events.append(
            LedgerEvent(
              name: observation.name, kind: .reset, delta: delta,
              detail: "reset (\(why)): counted rx \(delta.rxBytes) / tx \(delta.txBytes) bytes from the new start"))
        case .wrap:
          entry.totals.wraps += 1
          result.events.append(
            LedgerEvent(
              name: observation.name, kind: .wrap, delta: delta,
              detail: "32-bit counter wrapped: counted rx \(delta.rxBytes) / tx \(delta.txBytes) bytes across 2^32"))
        }
        if delta.rxBytes | delta.txBytes | delta.rxPackets | delta.txPackets != 0 {
          result.booked.append(
            BookedTraffic(
              name: observation.name, interfaceClass: observation.interfaceClass, wall: new.wall, delta: delta))
        }
      }
      entries[observation.name] = entry
      result.changed.append(entry)
    }
    return result
  }

  /// Seconds between two baselines: CLOCK_BOOTTIME within one boot; after a reboot, the new
  /// instance counted since the new boot.
  static func window(from old: LedgerBaseline, to new: LedgerBaseline) -> Double {
    if old.instance.bootID == new.instance.bootID && new.boottime >= old.boottime {
      return Double(new.boottime - old.boottime) / 1e9
    }
    return Double(max(new.boottime, 0)) / 1e9
  }

  private static func format(_ seconds: Double) -> String {
    let tenths = (seconds * 10).rounded() / 10
    return "\(tenths)"
  }
}

extension InterfaceCounters {
  /// True when any of the four traffic counters is lower than in `other`.
  func anyBelow(_ other: InterfaceCounters) -> Bool {
    rxBytes < other.rxBytes || txBytes < other.txBytes || rxPackets < other.rxPackets
      || txPackets < other.txPackets
  }
}
