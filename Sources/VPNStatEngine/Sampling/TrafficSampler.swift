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

  /// What each link of the netlink reader's table is to a writer's ledger: its name's entry, its
  /// class and plausible rate, worked out once (`steadyBook(for:)`) and read at every sample of
  /// the recorder's steady state (`advanceSteadily`), where a whole sample works them out anew
  /// for every interface every second (an observation made and destroyed for each, its name
  /// looked up in the catalog and the ledger). Valid while the table is (its generation) and the
  /// ledger's entries keep their positions (the keeper makes it anew after a save).
  package struct SteadyBook {
    /// The reader's `tableGeneration` it was made for.
    let generation: Int
    /// By position in the reader's table.
    let links: [Link]

    struct Link {
      /// The position of the name's entry in the ledger's table; `skipped` for a link not
      /// recorded (`record -i`), `unknown` for one a whole sample must see first (a name the
      /// ledger lacks, an instance the catalog has not classified).
      var entry: Int
      var interfaceClass: InterfaceClass
      var plausibleBytesPerSecond: Double
    }
    static let skipped = -1
    static let unknown = -2
  }

  /// The book of the netlink reader's table for `ledger`; nil when another reader is in use.
  package mutating func steadyBook(for ledger: Ledger) -> SteadyBook? {
    let recorded = recordedFilter
    let cap = capBytesPerSecond
    let catalog = self.catalog
    return reader.withNetlink { netlink in
      var links: [SteadyBook.Link] = []
      netlink.forEachKnownLink { index, name in
        var link = SteadyBook.Link(entry: SteadyBook.unknown, interfaceClass: .other, plausibleBytesPerSecond: cap)
        defer { links.append(link) }
        if let recorded, !recorded.includes(name: copy name) {
          link.entry = SteadyBook.skipped
          return
        }
        guard let classified = catalog.classified(index: index, name: copy name) else { return }
        if let recorded, !recorded.includes(copy name, classified.interfaceClass) {
          link.entry = SteadyBook.skipped
          return
        }
        guard let position = ledger.entries.position(of: copy name) else { return }
        link = SteadyBook.Link(
          entry: position, interfaceClass: classified.interfaceClass,
          plausibleBytesPerSecond: Self.plausible(speedMbps: classified.facts.speedMbps, cap: cap))
      }
      return SteadyBook(generation: netlink.tableGeneration, links: links)
    }
  }

  /// One sample of the recorder's steady state: a counter dump read straight into `memory`'s
  /// entries through `book`, with the rules and bookings of a whole sample and nothing made per
  /// interface but its reading in a list kept from one sample to the next. Nil, with nothing
  /// advanced, when the dump could not be read through the book (the table changed since it was
  /// made, a link it does not know, another reader in use): the caller then takes a whole sample.
  package mutating func advanceSteadily(
    _ memory: inout CheckpointedLedger, book: SteadyBook, calendar: any LocalCalendar
  ) throws -> (taken: ClockReading, events: [LedgerEvent])? {
    // Stamped before the dump: a sample's time never lies after its counters.
    let taken = clock.now()
    var readings = steadyReadings
    steadyReadings = []
    defer { steadyReadings = readings }
    readings.removeAll(keepingCapacity: true)
    let complete = try book.links.withUnsafeBufferPointer { links in
      try reader.withNetlink { netlink -> Bool in
        guard netlink.tableGeneration == book.generation else { return false }
        return try netlink.dumpCounters { position, index, traffic in
          guard position < links.count else { return false }
          guard links[position].entry >= 0 else { return links[position].entry == SteadyBook.skipped }
          readings.append(
            Ledger.SteadyReading(
              entry: Int32(truncatingIfNeeded: links[position].entry), index: index, width: .bits64,
              interfaceClass: links[position].interfaceClass, traffic: traffic,
              plausibleBytesPerSecond: links[position].plausibleBytesPerSecond))
          return true
        }
      } ?? false
    }
    guard complete else { return nil }
    let events = memory.advance(
      steady: readings, wall: taken.wall, boottime: taken.boottime, bootID: taken.bootID, calendar: calendar)
    return (taken, events)
  }

  /// The steady state's readings of the last dump: the list is kept, so its room for every link
  /// is made once.
  private var steadyReadings: [Ledger.SteadyReading] = []

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
