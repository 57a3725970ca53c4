import VPNStatKernel
import VPNStatModel

/// A reader with its interface catalog and selection: turns samples and link notifications into
/// ledger observations and report snapshots. Every command that samples goes through one.
package struct TrafficSampler {
  package var reader: CounterReader
  package var catalog: InterfaceCatalog
  /// Which interfaces go into the ledger (`record -i`); reports filter separately.
  package var recorded: InterfaceSelection
  /// The plausible maximum where no link speed is known, bytes per second.
  package var capBytesPerSecond: Double
  package let clock: any TimeSource

  package init(
    reader: CounterReader, catalog: InterfaceCatalog, recorded: InterfaceSelection = InterfaceSelection(),
    capBytesPerSecond: Double = Ledger.defaultCapBytesPerSecond, clock: any TimeSource
  ) {
    self.reader = reader
    self.catalog = catalog
    self.recorded = recorded
    self.capBytesPerSecond = capBytesPerSecond
    self.clock = clock
  }

  package mutating func sample() throws -> CounterSample {
    let sample = try reader.sample(at: clock)
    catalog.forgetAbsent(from: sample)
    return sample
  }

  /// Observations of the recorded interfaces in `sample`.
  package mutating func observations(_ sample: CounterSample) -> [LedgerObservation] {
    var result: [LedgerObservation] = []
    result.reserveCapacity(sample.interfaces.count)
    catalog.reserve(sample.interfaces.count)
    Self.observations(
      of: sample.interfaces, in: sample.interfaces.indices, bootID: sample.taken.bootID, wall: sample.taken.wall,
      boottime: sample.taken.boottime, recorded: recordedFilter, cap: capBytesPerSecond, catalog: &catalog,
      into: &result)
    return result
  }

  /// The selection observations are filtered by; nil when every interface is recorded.
  private var recordedFilter: InterfaceSelection? {
    recorded.names.isEmpty && recorded.classes.isEmpty ? nil : recorded
  }

  /// How many observations `forEachObservationChunk` hands over at a time: some 8 KB of them.
  static let chunkLength = 64

  /// The observations of `sample`'s recorded interfaces, handed to `body` in order, a chunk at a
  /// time, in one reused array: a ledger advanced from a thousand interfaces every second (the
  /// recorder) or at every report (a reader) then allocates nothing that grows with them, and
  /// each chunk is still in the cache when the ledger reads it (the whole array was 120 KB of
  /// fresh pages at 1,000 interfaces).
  package mutating func forEachObservationChunk(
    of sample: CounterSample, _ body: ([LedgerObservation]) throws -> Void
  ) rethrows {
    let interfaces = sample.interfaces
    var chunk: [LedgerObservation] = []
    chunk.reserveCapacity(Swift.min(Self.chunkLength, interfaces.count))
    catalog.reserve(interfaces.count)
    let recorded = recordedFilter
    var start = interfaces.startIndex
    while start < interfaces.endIndex {
      let end = Swift.min(start + Self.chunkLength, interfaces.endIndex)
      chunk.removeAll(keepingCapacity: true)
      Self.observations(
        of: interfaces, in: start..<end, bootID: sample.taken.bootID, wall: sample.taken.wall,
        boottime: sample.taken.boottime, recorded: recorded, cap: capBytesPerSecond, catalog: &catalog, into: &chunk)
      if !chunk.isEmpty { try body(chunk) }
      start = end
    }
  }

  /// The loop of `observations(_:)` over `range`, given the reading's fields and the selection
  /// (nil: every interface) as plain arguments: read from the sample or from `self` in the loop,
  /// the whole reading, or sampler, was copied at every interface. Each interface is read field
  /// by field where it lies: a copy of one (passed whole) would count its name's and kind's
  /// references.
  /// Not inlined: inlined, the boot id was again taken from a copy of the reading.
  @inline(never)
  private static func observations(
    of interfaces: [InterfaceSample], in range: Range<Int>, bootID: String, wall: Timestamp, boottime: Int64,
    recorded: InterfaceSelection?, cap: Double, catalog: inout InterfaceCatalog, into result: inout [LedgerObservation]
  ) {
    for at in range {
      if let recorded, !recorded.includes(name: interfaces[at].name) { continue }
      let described = catalog.verdict(of: interfaces, at: at)
      if let recorded, !recorded.includes(interfaces[at].name, described.interfaceClass) { continue }
      result.append(
        LedgerObservation(
          name: interfaces[at].name, interfaceClass: described.interfaceClass,
          baseline: LedgerBaseline(
            instance: InterfaceInstance(index: interfaces[at].index, bootID: bootID),
            counters: interfaces[at].counters.traffic, width: interfaces[at].width, wall: wall, boottime: boottime),
          plausibleBytesPerSecond: plausible(speedMbps: described.speedMbps, cap: cap)))
    }
  }

  /// The observation a link notification makes, stamped now (notifications carry no time).
  package mutating func observation(_ change: LinkNotifications.Change) -> LedgerObservation? {
    guard let counters = change.record.counters, recorded.includes(name: change.record.name) else { return nil }
    let now = clock.now()
    let entry = InterfaceSample(
      name: change.record.name, index: change.record.index, counters: counters, width: .bits64,
      link: change.record.attributes)
    let described = catalog.verdict(for: entry)
    guard recorded.includes(entry.name, described.interfaceClass) else { return nil }
    return LedgerObservation(
      name: entry.name, interfaceClass: described.interfaceClass,
      baseline: LedgerBaseline(entry, taken: now),
      plausibleBytesPerSecond: Self.plausible(speedMbps: described.speedMbps, cap: capBytesPerSecond))
  }

  /// Keeps the netlink reader's link table current from a notification.
  package mutating func apply(_ change: LinkNotifications.Change) {
    reader.apply(change.record, deleted: change.deleted)
  }

  private static func plausible(speedMbps: UInt64?, cap: Double) -> Double {
    // A link speed is a real bound only for a physical NIC (tun reports a fake 10 Mbit/s); with
    // a margin, since a sample's time and its counters are not read at the same instant.
    if let speed = speedMbps { return Double(speed) * 1e6 / 8 * 1.25 }
    return cap
  }
}
