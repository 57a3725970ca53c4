/// The last sample the ledger advanced an interface name from.
public struct LedgerBaseline: Hashable, Sendable {
  public var instance: InterfaceInstance
  public var counters: TrafficCounts
  public var width: CounterWidth
  public var wall: Timestamp
  /// CLOCK_BOOTTIME of the sample, nanoseconds; with the boot id it times the interval.
  public var boottime: Int64

  public init(
    instance: InterfaceInstance, counters: TrafficCounts, width: CounterWidth, wall: Timestamp,
    boottime: Int64
  ) {
    self.instance = instance
    self.counters = counters
    self.width = width
    self.wall = wall
    self.boottime = boottime
  }
}

extension LedgerBaseline {
  /// One interface of a sample taken at `taken`.
  public init(_ sample: InterfaceSample, taken: ClockReading) {
    self.init(
      instance: InterfaceInstance(index: sample.index, bootID: taken.bootID), counters: sample.counters.traffic,
      width: sample.width, wall: taken.wall, boottime: taken.boottime)
  }
}

/// The ledger's record of one interface name: where it last stood and the totals that only grow.
public struct LedgerEntry: Hashable, Sendable, NameKeyed {
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
/// link notification (a `RTM_DELLINK` carries the dying instance's final counters). Netlink
/// notifications carry no time of their own and may be read after a newer poll of the same
/// instance; `CounterDelta` keeps such a reading from moving the instance back.
public struct LedgerObservation: Hashable, Sendable {
  public var name: InterfaceName
  public var interfaceClass: InterfaceClass
  public var baseline: LedgerBaseline
  /// The fastest plausible traffic, bytes per second: the link speed where the kernel knows a
  /// real one, else the configured cap.
  public var plausibleBytesPerSecond: Double

  public init(
    name: InterfaceName, interfaceClass: InterfaceClass, baseline: LedgerBaseline,
    plausibleBytesPerSecond: Double
  ) {
    self.name = name
    self.interfaceClass = interfaceClass
    self.baseline = baseline
    self.plausibleBytesPerSecond = plausibleBytesPerSecond
  }
}

/// Something the ledger had to bridge or refuse, reported with the totals (and by `record` on
/// stderr, one line each: `LedgerEventText`).
public struct LedgerEvent: Hashable, Sendable {
  public enum Kind: String, Hashable, Sendable {
    case reset, wrap, discarded
  }
  public var name: InterfaceName
  public var kind: Kind
  public var delta: CounterDelta
  /// For a reset: the ifindexes before and after (equal after a reboot).
  public var indexes: (old: Int32, new: Int32)
  /// For a discarded sample: the seconds it covered and the plausible rate it exceeded.
  public var seconds: Double
  public var plausibleBytesPerSecond: Double

  public static func == (a: LedgerEvent, b: LedgerEvent) -> Bool {
    a.name == b.name && a.kind == b.kind && a.delta == b.delta && a.indexes == b.indexes && a.seconds == b.seconds
      && a.plausibleBytesPerSecond == b.plausibleBytesPerSecond
  }
  public func hash(into hasher: inout Hasher) {
    hasher.combine(name)
    hasher.combine(kind)
    hasher.combine(delta)
  }
}

/// The ledger's view of one interface name: cumulative totals bridged across resets and wraps
/// since vpnstat first saw the name, and what it had to bridge.
public struct LedgerTotals: Hashable, Sendable {
  public var traffic: TrafficCounts
  public var resets: UInt64
  public var wraps: UInt64
  public var discarded: UInt64
  public var firstSeenAt: Timestamp

  public init(
    _ traffic: TrafficCounts = .zero, resets: UInt64 = 0, wraps: UInt64 = 0, discarded: UInt64 = 0,
    firstSeenAt: Timestamp
  ) {
    self.traffic = traffic
    self.resets = resets
    self.wraps = wraps
    self.discarded = discarded
    self.firstSeenAt = firstSeenAt
  }

  /// Both sums together (a class's totals from its members').
  public static func + (a: LedgerTotals, b: LedgerTotals) -> LedgerTotals {
    LedgerTotals(
      a.traffic + b.traffic, resets: a.resets &+ b.resets, wraps: a.wraps &+ b.wraps,
      discarded: a.discarded &+ b.discarded, firstSeenAt: min(a.firstSeenAt, b.firstSeenAt))
  }
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

/// Cumulative, bridged traffic per interface name: the rules of ARCHITECTURE.md ("The ledger") applied
/// to a stream of observations. Pure: the Store loads and saves it, the clock and kernel feed it.
public struct Ledger: Sendable {
  public private(set) var entries: LedgerTable

  public init(entries: LedgerTable = LedgerTable()) { self.entries = entries }

  public init(entries: [InterfaceName: LedgerEntry]) { self.entries = LedgerTable(entries) }

  /// A ledger whose totals are just the kernel's counters of the observed instances: what can be
  /// reported when there is no database to keep a real one in.
  public init(kernelCountersOf observations: [LedgerObservation]) {
    var entries = LedgerTable(minimumCapacity: observations.count)
    for observation in observations {
      entries.update(
        LedgerEntry(
          name: observation.name, interfaceClass: observation.interfaceClass, baseline: observation.baseline,
          totals: LedgerTotals(observation.baseline.counters, firstSeenAt: observation.baseline.wall)))
    }
    self.entries = entries
  }

  /// The positions of `entries` in name order (bytes compared): what a save encodes and an export
  /// prints (`InterfaceName.order`).
  package static func nameOrder(_ entries: [LedgerEntry]) -> [Int] {
    entries.withUnsafeBufferPointer { entries in
      InterfaceName.order(count: entries.count, rank: { _ in 0 }, name: { entries[$0].name })
    }
  }

  /// Puts `entry` in place of what the ledger held for its name (as another writer stored it).
  public mutating func replace(_ entry: LedgerEntry) { entries.update(entry) }

  /// The summed totals of every name of `interfaceClass` (the tunnel class: a window's usage).
  public func totals(of interfaceClass: InterfaceClass) -> TrafficCounts {
    var sum = TrafficCounts.zero
    for entry in entries.values where entry.interfaceClass == interfaceClass { sum += entry.totals.traffic }
    return sum
  }

  /// The default cap on plausible traffic where no link speed is known: 100 Gbit/s.
  public static let defaultCapBytesPerSecond = 100e9 / 8

  /// Applies observations in order. A name seen for the first time starts at its current
  /// counters (totals count the traffic vpnstat saw happen); a known name adds the delta the
  /// rules give, unless it is faster than plausible, in which case it is discarded and counted.
  public mutating func advance(_ observations: [LedgerObservation]) -> LedgerAdvance {
    var result = LedgerAdvance()
    advance(observations) { entry, change in
      result.changed.append(copy entry)
      if let booked = change.booking(of: observations[change.position]) { result.booked.append(booked) }
      if let event = change.event(of: observations[change.position]) { result.events.append(event) }
    }
    return result
  }

  /// What one name's observation changed, as `advance` makes the change. Plain numbers: the
  /// entry is handed beside it where it lies and the observation is named by its position, so
  /// reporting a thousand interfaces a second copies no name and counts no reference.
  public struct Change: Sendable {
    /// Which observation made it: its position in the array advanced.
    public var position: Int
    /// True when the name was seen for the first time.
    public var isNew: Bool
    /// True when the entry moved to another instance (ifindex or boot id) than its baseline's.
    public var movedInstance: Bool
    /// The traffic added to the totals, if any (nil for a name seen first, a discarded sample,
    /// or a reset to counters of zero).
    public var booked: CounterDelta?
    /// What had to be bridged or refused, if anything.
    public var bridged: LedgerEvent.Kind?
    /// The rules' delta, and the window and earlier ifindex it was taken over: what an event
    /// reports.
    var delta: CounterDelta
    var seconds: Double
    var previousIndex: Int32

    /// The traffic booked, as the buckets take it.
    public func booking(of observation: LedgerObservation) -> BookedTraffic? {
      booked.map {
        BookedTraffic(
          name: observation.name, interfaceClass: observation.interfaceClass, wall: observation.baseline.wall,
          delta: $0)
      }
    }

    /// What had to be bridged or refused, as `record` logs it.
    public func event(of observation: LedgerObservation) -> LedgerEvent? {
      event(
        name: observation.name, index: observation.baseline.instance.index,
        plausibleBytesPerSecond: observation.plausibleBytesPerSecond)
    }

    /// `event(of:)` from the fields it reads: the entry as the change left it has the name and
    /// the new ifindex, the reading its plausible rate.
    package func event(name: InterfaceName, index: Int32, plausibleBytesPerSecond: Double) -> LedgerEvent? {
      bridged.map {
        LedgerEvent(
          name: name, kind: $0, delta: delta, indexes: (previousIndex, index), seconds: seconds,
          plausibleBytesPerSecond: plausibleBytesPerSecond)
      }
    }
  }

  /// One link of a counter dump in the recorder's steady state: where its name's entry lies in
  /// the ledger's table, and the reading's own fields (its time and boot are the dump's).
  package struct SteadyReading {
    package var entry: Int32
    package var index: Int32
    package var width: CounterWidth
    package var interfaceClass: InterfaceClass
    package var traffic: TrafficCounts
    package var plausibleBytesPerSecond: Double

    package init(
      entry: Int32, index: Int32, width: CounterWidth, interfaceClass: InterfaceClass, traffic: TrafficCounts,
      plausibleBytesPerSecond: Double
    ) {
      self.entry = entry
      self.index = index
      self.width = width
      self.interfaceClass = interfaceClass
      self.traffic = traffic
      self.plausibleBytesPerSecond = plausibleBytesPerSecond
    }
  }

  /// One reading of a known name's instance as a step of the ledger takes it: plain fields, read
  /// from an observation or straight from a counter dump (the recorder's steady state, which makes
  /// no observations). The boot id is passed beside it by address: a copy counts its reference.
  package struct Reading {
    package var index: Int32
    package var counters: TrafficCounts
    package var width: CounterWidth
    package var wall: Timestamp
    package var boottime: Int64
    package var interfaceClass: InterfaceClass
    package var plausibleBytesPerSecond: Double

    package init(
      index: Int32, counters: TrafficCounts, width: CounterWidth, wall: Timestamp, boottime: Int64,
      interfaceClass: InterfaceClass, plausibleBytesPerSecond: Double
    ) {
      self.index = index
      self.counters = counters
      self.width = width
      self.wall = wall
      self.boottime = boottime
      self.interfaceClass = interfaceClass
      self.plausibleBytesPerSecond = plausibleBytesPerSecond
    }
  }

  /// `advance(_:)` without collecting: each entry is changed where it lies in the table (no copy
  /// of the table, and no array that grows with the interfaces), and each change is handed to
  /// `report` as it is made, with the entry as it now stands — what a writer advancing every
  /// second keeps.
  public mutating func advance(
    _ observations: [LedgerObservation], reporting report: (_ entry: borrowing LedgerEntry, _ change: Change) -> Void
  ) {
    // Read where they lie: a copy of each observation would count its name's and boot id's
    // references up and down again.
    observations.withUnsafeBufferPointer { observations in
      for position in observations.indices {
        guard let index = entries.position(of: observations[position].name) else {
          let entry = Self.firstEntry(observations[position])
          entries.insert(entry)
          report(
            entry,
            Change(
              position: position, isNew: true, movedInstance: false, booked: nil, bridged: nil,
              delta: CounterDelta(.zero, kind: .growth), seconds: 0, previousIndex: entry.baseline.instance.index))
          continue
        }
        let observation = observations.baseAddress! + position
        let reading = Reading(
          index: observation.pointee.baseline.instance.index, counters: observation.pointee.baseline.counters,
          width: observation.pointee.baseline.width, wall: observation.pointee.baseline.wall,
          boottime: observation.pointee.baseline.boottime, interfaceClass: observation.pointee.interfaceClass,
          plausibleBytesPerSecond: observation.pointee.plausibleBytesPerSecond)
        // The boot id through its own address: read through the observation's, it came with a
        // copy of the whole baseline.
        Self.step(
          &entries.values[index], reading, bootID: observation.pointer(to: \.baseline.instance.bootID)!,
          at: position, reporting: report)
      }
    }
  }

  /// One step of the name whose entry is at `position` in `entries.values` (a position the table
  /// gave out: entries are only ever added, so it stays the name's), by `reading` of an instance
  /// booted as `bootID` says; `report` is called as `advance(_:reporting:)` calls it, with
  /// `position` for the change's. The recorder's steady state: a counter dump read straight into
  /// the entries it already knows.
  @inline(__always)
  package mutating func step(
    entryAt position: Int, _ reading: Reading, bootID: UnsafePointer<String>,
    reporting report: (_ entry: borrowing LedgerEntry, _ change: Change) -> Void
  ) {
    Self.step(&entries.values[position], reading, bootID: bootID, at: position, reporting: report)
  }

  /// The entry of a name seen for the first time: it starts at the observed counters.
  private static func firstEntry(_ observation: borrowing LedgerObservation) -> LedgerEntry {
    let new = observation.baseline
    return LedgerEntry(
      name: observation.name, interfaceClass: observation.interfaceClass, baseline: new,
      totals: LedgerTotals(firstSeenAt: new.wall))
  }

  /// One known name's step; the entry stays as it was, and nothing is reported, for old news or
  /// an idle interface. The rules are given the fields they read: a baseline or an observation
  /// passed whole is copied, boot id and name with it, at every interface of every sample.
  @inline(__always)
  private static func step(
    _ entry: inout LedgerEntry, _ new: Reading, bootID newBoot: UnsafePointer<String>, at position: Int,
    reporting report: (borrowing LedgerEntry, Change) -> Void
  ) {
    let old = (
      index: entry.baseline.instance.index, counters: entry.baseline.counters, width: entry.baseline.width,
      wall: entry.baseline.wall, boottime: entry.baseline.boottime
    )
    // The same String as the baseline's (what every sample after the first hands over): one
    // look at it decides, where comparing it with itself went through String's equality twice.
    let sameID = Self.sameString(entry.baseline.instance.bootID, newBoot.pointee)
    let sameBoot =
      sameID && BootIdentity.isKnown(newBoot.pointee)
      ? true
      : BootIdentity.same(
        old: (entry.baseline.instance.bootID, old.wall, old.boottime), new: (newBoot.pointee, new.wall, new.boottime))
    // A reading stamped before the baseline of the same instance is old news; one whose
    // counters are below it too (CounterDelta says nil). Neither moves the baseline back.
    if old.index == new.index, sameBoot != false,
      new.boottime < old.boottime
    {
      return
    }
    guard
      let delta = CounterDelta.between(
        old: (old.index, old.counters, old.width), new: (new.index, new.counters, new.width), sameBoot: sameBoot)
    else { return }
    if delta.kind == .growth && delta.traffic.isZero {
      // Nothing to book; keep the stored baseline as it was, so idle interfaces cost no write.
      return
    }
    let seconds = window(from: old.boottime, to: new.boottime, sameBoot: sameBoot)
    let moved = old.index != new.index || (!sameID && entry.baseline.instance.bootID != newBoot.pointee)
    entry.interfaceClass = new.interfaceClass
    // Field by field (a copy of the reading's would go through an outlined copy of each). The
    // boot id is taken when it is another String, even an equal one: the next sample's
    // comparisons then find the same String, not equal bytes. The same String is not taken
    // again: a baseline made anew took its reference and gave the old one back, two atomic
    // operations per interface per sample.
    entry.baseline.instance.index = new.index
    if !sameID {
      entry.baseline.instance.bootID = newBoot.pointee
    }
    entry.baseline.counters = new.counters
    entry.baseline.width = new.width
    entry.baseline.wall = new.wall
    entry.baseline.boottime = new.boottime
    let allowed = new.plausibleBytesPerSecond * (seconds + 1)
    var change = Change(
      position: position, isNew: false, movedInstance: moved, booked: nil, bridged: nil, delta: delta, seconds: seconds,
      previousIndex: old.index)
    if Double(delta.traffic.rxBytes) > allowed || Double(delta.traffic.txBytes) > allowed {
      entry.totals.discarded += 1
      change.bridged = .discarded
    } else {
      entry.totals.traffic += delta.traffic
      switch delta.kind {
      case .growth: break
      case .reset:
        entry.totals.resets += 1
        change.bridged = .reset
      case .wrap:
        entry.totals.wraps += 1
        change.bridged = .wrap
      }
      if !delta.traffic.isZero { change.booked = delta }
    }
    report(entry, change)
  }

  /// Whether `a` and `b` are one String: the same two words (the same storage, or the same
  /// short string held in them). Equal Strings kept apart are not.
  @inline(__always)
  private static func sameString(_ a: borrowing String, _ b: borrowing String) -> Bool {
    guard MemoryLayout<String>.size == 16 else { return false }
    return withUnsafeBytes(of: a) { a in
      withUnsafeBytes(of: b) { b in
        a.load(as: UInt64.self) == b.load(as: UInt64.self)
          && a.load(fromByteOffset: 8, as: UInt64.self) == b.load(fromByteOffset: 8, as: UInt64.self)
      }
    }
  }

  /// Seconds between the CLOCK_BOOTTIME readings of two baselines within one boot; after a
  /// reboot, the new instance counted since the new boot.
  static func window(from old: Int64, to new: Int64, sameBoot: Bool?) -> Double {
    if sameBoot != false && new >= old {
      return Double(new - old) / 1e9
    }
    return Double(max(new, 0)) / 1e9
  }
}
