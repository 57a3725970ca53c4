/// Which instance of an interface name a sample came from. A tunnel recreated on reconnect, or the
/// same name after a reboot, is a new instance whose counters started at zero.
public struct InterfaceInstance: Hashable, Sendable {
  public var index: Int32
  /// The kernel's boot id, or "" when it could not be read (see `BootIdentity`).
  public var bootID: String
  public init(index: Int32, bootID: String) {
    self.index = index
    self.bootID = bootID
  }
}

/// Telling boots apart. The kernel's boot id says it exactly; where it cannot be read (a sandbox
/// that hides /proc/sys), the clocks decide: CLOCK_BOOTTIME only runs forward within a boot, and
/// the boot instant (wall − boottime) stays put unless the wall clock is set.
public enum BootIdentity {
  /// How far the boot instant may drift within one boot (NTP slewing, the reads' own spacing)
  /// before it stops being evidence of the same boot.
  static let driftTolerance: Int64 = 2_000_000_000

  /// True or false when the evidence decides; nil when only the counters can (an unreadable boot
  /// id, uptime gone forward, the wall clock apparently set).
  public static func same(_ old: LedgerBaseline, _ new: LedgerBaseline) -> Bool? {
    same(
      old: (old.instance.bootID, old.wall, old.boottime), new: (new.instance.bootID, new.wall, new.boottime))
  }

  /// `same(_:_:)` on the fields it reads: the ledger's step passes them from where they lie, as
  /// the whole baselines would be copied (with their boot ids) to be passed; a report decides it
  /// once for two samples' readings.
  @inline(__always)
  package static func same(
    old: (bootID: String, wall: Timestamp, boottime: Int64), new: (bootID: String, wall: Timestamp, boottime: Int64)
  ) -> Bool? {
    // Compared where they lie: an optional copy of each id cost a retain and a release per
    // interface per sample, more than the comparison.
    if isKnown(old.bootID) && isKnown(new.bootID) {
      return old.bootID == new.bootID
    }
    if new.boottime < old.boottime { return false }
    let oldBoot = old.wall.nanoseconds &- old.boottime
    let newBoot = new.wall.nanoseconds &- new.boottime
    if (oldBoot &- newBoot).magnitude <= UInt64(driftTolerance) { return true }
    return nil
  }

  /// The id when it is one (older databases stored "unknown" for an unreadable one).
  static func known(_ id: String) -> String? { isKnown(id) ? id : nil }

  /// Whether `id` is a boot id.
  static func isKnown(_ id: String) -> Bool {
    // The length first: a boot id is 36 bytes, and comparing text with "unknown" at every
    // interface of every sample was some 4 % of a recorder's sample.
    !(id.utf8.count == 0 || (id.utf8.count == 7 && id == "unknown"))
  }
}

/// The traffic between two samples of one interface name, and how it was derived.
public struct CounterDelta: Hashable, Sendable {
  public enum Kind: String, Hashable, Sendable {
    /// Same instance, every counter grew (or stayed).
    case growth
    /// A new instance (ifindex or boot changed): the new counters are all new traffic.
    case reset
    /// Same instance, a 32-bit counter dropped: it wrapped at 2³² (exact arithmetic).
    case wrap
  }

  public var traffic: TrafficCounts
  public var kind: Kind

  public init(_ traffic: TrafficCounts, kind: Kind) {
    self.traffic = traffic
    self.kind = kind
  }

  /// The rules of ARCHITECTURE.md ("The ledger"): the only place they are written. Nil when `new`
  /// is not news: the same instance with 64-bit counters below `old`. On Linux one instance's
  /// counters only go forward, so such a reading was taken before `old` (another sampler, a
  /// notification read late) and must neither be booked nor move the baseline back.
  public static func between(_ old: LedgerBaseline, _ new: LedgerBaseline) -> CounterDelta? {
    between(
      old: (old.instance.index, old.counters, old.width), new: (new.instance.index, new.counters, new.width),
      sameBoot: BootIdentity.same(old, new))
  }

  /// The rules on the fields they read (plain values: the ledger's step passes them from where
  /// they lie, with nothing to copy), inlined there; a report's rates take them from two samples.
  @inline(__always)
  package static func between(
    old: (index: Int32, counters: TrafficCounts, width: CounterWidth),
    new: (index: Int32, counters: TrafficCounts, width: CounterWidth), sameBoot: Bool?
  ) -> CounterDelta? {
    let a = old.counters
    let b = new.counters
    let fresh = CounterDelta(b, kind: .reset)
    guard old.index == new.index else { return fresh }
    // Two readers may disagree on width (a netlink recorder, `status --source getifaddrs`): the
    // narrower one decides, since the wider value holds the same low bits.
    let width: CounterWidth = old.width == .bits32 || new.width == .bits32 ? .bits32 : .bits64
    let below: Bool
    switch width {
    case .bits64: below = b.anyBelow(a)
    case .bits32: below = b.masked32.anyBelow(a.masked32)
    }
    switch sameBoot {
    case false?: return fresh
    // Undecided, and the counters went back: a new boot (counting it anew books the least).
    case nil where below: return fresh
    default: break
    }
    if width == .bits64 {
      if below { return nil }
      return CounterDelta(b - a, kind: .growth)
    }
    return CounterDelta(b.wrappedDelta(since: a), kind: below ? .wrap : .growth)
  }
}
