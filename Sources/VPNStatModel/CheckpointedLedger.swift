/// What one checkpoint writes: the ledger entries that changed since the last one, and the
/// traffic they booked, one row per bucket (not one per sample).
public struct LedgerCheckpoint: Sendable {
  public var entries: [LedgerEntry] = []
  public var buckets: [(granularity: TrafficGranularity, bucket: TrafficBucket)] = []

  public init(entries: [LedgerEntry] = [], buckets: [(granularity: TrafficGranularity, bucket: TrafficBucket)] = []) {
    self.entries = entries
    self.buckets = buckets
  }

  /// What one advance changed and booked, as rows.
  public init(_ advance: LedgerAdvance, calendar: any LocalCalendar) {
    var traffic = UnsavedTraffic()
    traffic.add(advance.booked, calendar: calendar)
    self.init(entries: advance.changed, buckets: traffic.rows)
  }

  public var isEmpty: Bool { entries.isEmpty && buckets.isEmpty }
}

/// Traffic booked in memory and not yet written, added up per bucket: every sample of a minute
/// lands in the same 5-minute, hour, day and month rows, so a checkpoint writes each of those
/// rows once however many samples it covers.
public struct UnsavedTraffic: Sendable {
  /// One bucket's sum for one name.
  struct Sum {
    var granularity: TrafficGranularity
    var start: Int64
    var interfaceClass: InterfaceClass
    var traffic: TrafficCounts
  }
  /// One name's bookings. Those of its latest period are one sum, which stands for that
  /// period's bucket of every granularity at once: a booking is then one addition, not a search
  /// through four buckets. Those of earlier periods are settled per bucket (one per granularity,
  /// two where a save interval crosses a bucket's end).
  struct Booked: NameKeyed {
    var name: InterfaceName
    var period: Int
    var interfaceClass: InterfaceClass
    var traffic: TrafficCounts
    var settled: [Sum] = []
    /// Everything booked, whatever the bucket.
    var total: TrafficCounts
  }
  /// Per name, its bookings: a booking looks its name up once, in a table a sample's bookings
  /// walk in the order they came the sample before.
  private var names = NameTable<Booked>()
  /// The bucket starts of each period booked into, one per granularity (by raw value): a
  /// period is the buckets an instant falls in, shared by every booking of one sample.
  private var periods: [[Int64]] = []
  /// The period of the last time booked: every booking of one sample has the same time, and a
  /// calendar conversion per booking would cost more than the sum.
  private var lastPeriod: (seconds: Int64, period: Int)?

  public init() {}

  public var isEmpty: Bool { names.isEmpty }

  /// Forgets every sum, keeping the table's room for the next save interval's.
  public mutating func removeAll() {
    names.removeAll(keepingCapacity: true)
    periods.removeAll(keepingCapacity: true)
    lastPeriod = nil
  }

  public mutating func add(_ booked: [BookedTraffic], calendar: any LocalCalendar) {
    for entry in booked { add(entry, calendar: calendar) }
  }

  /// Adds one booking to the buckets that hold its time.
  public mutating func add(_ entry: BookedTraffic, calendar: any LocalCalendar) {
    add(entry.delta.traffic, of: entry.name, as: entry.interfaceClass, at: entry.wall, calendar: calendar)
  }

  /// Adds `traffic` of `name` at `wall` to the buckets that hold that time, its sums changed
  /// where they lie. Returns all `name` has booked here, this included (since the sums were
  /// last emptied, or the name removed).
  @discardableResult
  public mutating func add(
    _ traffic: TrafficCounts, of name: InterfaceName, as interfaceClass: InterfaceClass, at wall: Timestamp,
    calendar: any LocalCalendar
  ) -> TrafficCounts {
    guard !traffic.isZero else { return names[name]?.total ?? .zero }
    let period = self.period(of: wall, calendar: calendar)
    return add(traffic, of: name, as: interfaceClass, inPeriod: period, hint: -1).total
  }

  /// `add(_:of:as:at:calendar:)` in a period already worked out (`period(of:calendar:)`), for a
  /// name that may lie at `hint` in the table (where the last booking of it found it; -1: not
  /// known): the recorder's steady state books a thousand names at one instant every second, and
  /// a look at one place beats hashing each name. Returns the total and where the name lies.
  package mutating func add(
    _ traffic: TrafficCounts, of name: borrowing InterfaceName, as interfaceClass: InterfaceClass,
    inPeriod period: Int, hint: Int
  ) -> (total: TrafficCounts, position: Int) {
    let index: Int
    if hint >= 0, hint < names.count, names.values[hint].name == name {
      index = hint
    } else if let found = names.position(of: copy name) {
      index = found
    } else {
      names.insert(
        Booked(name: copy name, period: period, interfaceClass: interfaceClass, traffic: traffic, total: traffic))
      return (traffic, names.count - 1)
    }
    // Changed where it lies, through one access: a read of the table's value would copy it.
    return (names.values[index].add(traffic, as: interfaceClass, in: period, periods: periods), index)
  }

  /// The period holding `wall`, added to `periods` when new: what `add` takes, the same for every
  /// booking of one sample.
  package mutating func period(of wall: Timestamp, calendar: any LocalCalendar) -> Int {
    let seconds = wall.seconds
    if let last = lastPeriod, last.seconds == seconds { return last.period }
    // Indexed by granularity (its raw value), as `forEachSum` reads them. Made on the stack, and
    // an array only for a period not seen before: an array made for each sample went through the
    // standard library's shared allocation every second.
    let count = TrafficGranularity.allCases.count
    let period = withUnsafeTemporaryAllocation(of: Int64.self, capacity: count) { starts -> Int in
      starts.initialize(repeating: 0)
      for granularity in TrafficGranularity.allCases {
        starts[granularity.rawValue] = granularity.start(of: wall, in: calendar)
      }
      if let known = periods.firstIndex(where: { $0.elementsEqual(starts) }) { return known }
      periods.append(Array(starts))
      return periods.count - 1
    }
    lastPeriod = (seconds, period)
    return period
  }

  /// Calls `body` with each of `booked`'s sums in `granularity`, the latest period's folded into
  /// the settled ones: the buckets in the order they were first booked into, each with the class
  /// last booked there. Nothing is made for it: a name's settled sums are usually none.
  private func forEachSum(
    of booked: Booked, in granularity: TrafficGranularity,
    _ body: (_ start: Int64, _ interfaceClass: InterfaceClass, _ traffic: TrafficCounts) -> Void
  ) {
    let latestStart = periods[booked.period][granularity.rawValue]
    var folded = false
    for sum in booked.settled where sum.granularity == granularity {
      if sum.start == latestStart {
        folded = true
        body(sum.start, booked.interfaceClass, sum.traffic + booked.traffic)
      } else {
        body(sum.start, sum.interfaceClass, sum.traffic)
      }
    }
    if !folded { body(latestStart, booked.interfaceClass, booked.traffic) }
  }

  /// The traffic booked into `granularity`'s buckets starting at `start` (Unix seconds) or later,
  /// of one class or one name (nil: any).
  public func traffic(
    _ granularity: TrafficGranularity, since start: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName?
  ) -> TrafficCounts {
    var total = TrafficCounts.zero
    for (key, booked) in names where name == nil || key == name {
      forEachSum(of: booked, in: granularity) { sumStart, sumClass, traffic in
        if sumStart >= start && (interfaceClass == nil || sumClass == interfaceClass) { total += traffic }
      }
    }
    return total
  }

  /// What a reader's ledger holds past the stored one, where the next save would book it: per
  /// name, how far `ledger`'s totals grew past `stored`'s (each counter at least zero: a save
  /// newer than the reader's sample is not taken back), in the buckets of every granularity that
  /// hold the name's latest reading — its current bucket, as a writer booking the same reading
  /// would. The class is the reader's, as its totals have it.
  public init(reading ledger: Ledger, past stored: Ledger, calendar: any LocalCalendar) {
    self.init()
    var booked: [BookedTraffic] = []
    for (name, entry) in ledger.entries {
      let grown = entry.totals.traffic - (stored.entries[name]?.totals.traffic ?? entry.totals.traffic)
      guard !grown.isZero else { continue }
      booked.append(
        BookedTraffic(
          name: name, interfaceClass: entry.interfaceClass, wall: entry.baseline.wall,
          delta: CounterDelta(grown, kind: .growth)))
    }
    add(booked, calendar: calendar)
  }

  /// The unsaved buckets of `granularity` starting at `start` (Unix seconds) or later: what to
  /// add to the stored ones of that granularity for the traffic as it stands now.
  public func buckets(_ granularity: TrafficGranularity, since start: Int64) -> [TrafficBucket] {
    var buckets: [TrafficBucket] = []
    for (name, booked) in names {
      forEachSum(of: booked, in: granularity) { sumStart, interfaceClass, traffic in
        if sumStart >= start {
          buckets.append(TrafficBucket(name: name, start: sumStart, interfaceClass: interfaceClass, traffic: traffic))
        }
      }
    }
    return buckets
  }

  /// Forgets what was booked for `name` (another writer booked it).
  public mutating func remove(_ name: InterfaceName) {
    names.remove(name)
  }

  /// One row per bucket, ordered as the table's key (granularity, start, name) so a checkpoint
  /// touches the pages of the bucket table in order. The names are sorted once, and the rows of
  /// each granularity taken in that order: a sort of every row (four per name) by the whole key
  /// moved each row some ten times, a quarter of a save.
  public var rows: [(granularity: TrafficGranularity, bucket: TrafficBucket)] {
    // The names' positions sorted, by the names alone (a comparison that read a name with its
    // sums copied both).
    let lists = names.values
    let keys = lists.map(\.name)
    let order = keys.indices.sorted { keys[$0] < keys[$1] }
    var rows: [(granularity: TrafficGranularity, bucket: TrafficBucket)] = []
    rows.reserveCapacity(lists.reduce(TrafficGranularity.allCases.count * lists.count) { $0 + $1.settled.count })
    for granularity in TrafficGranularity.allCases {
      let first = rows.count
      var starts: (lowest: Int64, highest: Int64)?
      for i in order {
        forEachSum(of: lists[i], in: granularity) { start, interfaceClass, traffic in
          rows.append(
            (
              granularity,
              TrafficBucket(name: lists[i].name, start: start, interfaceClass: interfaceClass, traffic: traffic)
            ))
          starts = (min(starts?.lowest ?? start, start), max(starts?.highest ?? start, start))
        }
      }
      // A save interval that crossed a bucket's end: more than one start, ordered by start too.
      if let starts, starts.lowest != starts.highest {
        rows[first...].sort { a, b in
          a.bucket.start != b.bucket.start ? a.bucket.start < b.bucket.start : a.bucket.name < b.bucket.name
        }
      }
    }
    return rows
  }
}

extension UnsavedTraffic.Booked {
  /// Adds a booking in `period` (an index into `periods`); returns the name's new total.
  mutating func add(
    _ booked: TrafficCounts, as bookedClass: InterfaceClass, in bookedPeriod: Int, periods: [[Int64]]
  ) -> TrafficCounts {
    if period != bookedPeriod {
      // A new period: the latest one's sum is settled bucket by bucket (every five minutes).
      settleLatest(starts: periods[period])
      period = bookedPeriod
      traffic = .zero
    }
    interfaceClass = bookedClass
    traffic += booked
    total += booked
    return total
  }

  /// Adds the latest period's sum, whose bucket starts are `starts`, to the settled sum of each
  /// of its buckets (a bucket first booked into now goes last).
  mutating func settleLatest(starts: [Int64]) {
    for granularity in TrafficGranularity.allCases {
      let start = starts[granularity.rawValue]
      if let i = settled.firstIndex(where: { $0.granularity == granularity && $0.start == start }) {
        settled[i].interfaceClass = interfaceClass
        settled[i].traffic += traffic
      } else {
        settled.append(
          UnsavedTraffic.Sum(granularity: granularity, start: start, interfaceClass: interfaceClass, traffic: traffic))
      }
    }
  }
}

/// The ledger of a process that writes it (the recorder; an enforcer for its tunnel), between
/// checkpoints. The kernel's counters are the durable log and the database a checkpoint of it:
/// while an instance exists its counters keep all its traffic, so the ledger is advanced in
/// memory with every sample and written only every save interval — and at once for what the
/// kernel does not keep (a deleted instance's final counters, a name's starting point) or what
/// others read from the database (a session window's change).
///
/// `absorb(_:)` reconciles memory with the ledger as stored, inside the save's transaction: an
/// entry another writer changed since this one last saved it is taken as stored, and what this
/// one booked for it meanwhile is dropped (the other booked that span), so two writers of one
/// name never count its bytes twice.
public struct CheckpointedLedger: Sendable {
  /// The ledger in memory: the stored one advanced with every observation since.
  public private(set) var ledger: Ledger
  /// Each entry as the database last had it (read or written by this writer).
  private(set) var saved: LedgerTable
  private var unsaved = UnsavedTraffic()
  /// Set when something must be saved at once.
  public private(set) var saveRequested = false

  /// Starts from the ledger as stored.
  public init(stored: Ledger) {
    ledger = stored
    saved = stored.entries
  }

  /// True when memory holds something the database does not.
  public var hasUnsaved: Bool {
    saveRequested || !unsaved.isEmpty || ledger.entries.values.contains { saved[$0.name] != $0 }
  }

  /// Advances the ledger in memory, in place. A save is asked for at once for a name seen for the
  /// first time, for what the ledger had to bridge or refuse, and when memory holds what a reader
  /// could not work out from the stored ledger and the kernel's counters (`outrunsReaders`).
  /// Returns what the ledger bridged or refused.
  @discardableResult
  public mutating func advance(_ observations: [LedgerObservation], calendar: any LocalCalendar) -> [LedgerEvent] {
    // The fields the closure changes are moved out of `self` while the ledger changes, so each
    // table is changed where it lies.
    var notes = AdvanceNotes(unsaved: self.unsaved)
    self.unsaved = UnsavedTraffic()
    ledger.advance(observations) { entry, change in
      notes.take(
        entry, change, plausibleBytesPerSecond: observations[change.position].plausibleBytesPerSecond,
        calendar: calendar)
    }
    return finish(notes)
  }

  /// `advance(_:calendar:)` for names the ledger knows: the readings of one counter dump taken at
  /// `wall` and `boottime` in the boot `bootID`, each naming its entry by position in
  /// `ledger.entries.values` (`Ledger.step(entryAt:_:bootID:reporting:)`). The recorder's steady
  /// state, which reads the dump straight into the entries and makes no observations: one loop,
  /// the ledger's rule and the booking inlined in it. The same rules, the same saves asked for.
  package mutating func advance(
    steady readings: [Ledger.SteadyReading], wall: Timestamp, boottime: Int64, bootID: String,
    calendar: any LocalCalendar
  ) -> [LedgerEvent] {
    var notes = AdvanceNotes(unsaved: self.unsaved)
    self.unsaved = UnsavedTraffic()
    // Where each entry's name lies in the unsaved table, by the entry's position: moved out with
    // it, as the ledger's step runs while they change.
    var hints = unsavedHints
    unsavedHints = []
    if hints.count < ledger.entries.count {
      hints.append(contentsOf: repeatElement(-1, count: ledger.entries.count - hints.count))
    }
    // Every reading of one dump has one time: its period is worked out at the first booking.
    var period = -1
    // The hints through one pointer for the whole dump: `&hints[position]` checked the array's
    // uniqueness at every link (a call, some 30 instructions of 650).
    hints.withUnsafeMutableBufferPointer { hints in
      withUnsafePointer(to: bootID) { bootID in
        readings.withUnsafeBufferPointer { readings in
          for at in readings.indices {
            let position = Int(readings[at].entry)
            let plausible = readings[at].plausibleBytesPerSecond
            let reading = Ledger.Reading(
              index: readings[at].index, counters: readings[at].traffic, width: readings[at].width, wall: wall,
              boottime: boottime, interfaceClass: readings[at].interfaceClass, plausibleBytesPerSecond: plausible)
            ledger.step(entryAt: position, reading, bootID: bootID) { entry, change in
              if period < 0, change.booked != nil { period = notes.unsaved.period(of: wall, calendar: calendar) }
              notes.take(entry, change, plausibleBytesPerSecond: plausible, period: period, hint: &hints[position])
            }
          }
        }
      }
    }
    unsavedHints = hints
    return finish(notes)
  }

  /// For each entry of the ledger, by position, where its name lay in the unsaved table at its
  /// last booking by the steady state (-1: not known); checked at each use, so a table emptied
  /// or changed since costs a look-up, never a wrong sum.
  private var unsavedHints: [Int32] = []

  /// What an advance gathers as the ledger reports its changes: events, bookings, whether a save
  /// is due at once.
  private struct AdvanceNotes {
    var unsaved: UnsavedTraffic
    var events: [LedgerEvent] = []
    var saveNow = false

    /// One change, with the entry as it left it (its name, class, wall time and ifindex are the
    /// reading's).
    @inline(__always)
    mutating func take(
      _ entry: borrowing LedgerEntry, _ change: Ledger.Change, plausibleBytesPerSecond: Double,
      calendar: any LocalCalendar
    ) {
      let period = change.booked == nil ? 0 : unsaved.period(of: entry.baseline.wall, calendar: calendar)
      var hint: Int32 = -1
      take(entry, change, plausibleBytesPerSecond: plausibleBytesPerSecond, period: period, hint: &hint)
    }

    /// `take` in a period already worked out, the name looked for at `hint` first (and `hint`
    /// set to where it lies).
    @inline(__always)
    mutating func take(
      _ entry: borrowing LedgerEntry, _ change: Ledger.Change, plausibleBytesPerSecond: Double, period: Int,
      hint: inout Int32
    ) {
      if change.isNew { saveNow = true }
      // The stored baseline is of another instance: a reader would take the kernel's counters
      // as growth from it. (Asked once: the request stands until a save is made.)
      if change.movedInstance { saveNow = true }
      if change.bridged != nil,
        let event = change.event(
          name: entry.name, index: entry.baseline.instance.index, plausibleBytesPerSecond: plausibleBytesPerSecond)
      {
        events.append(event)
        saveNow = true
      }
      if let booked = change.booked {
        let (unsavedTotal, position) = unsaved.add(
          booked.traffic, of: entry.name, as: entry.interfaceClass, inPeriod: period, hint: Int(hint))
        hint = Int32(truncatingIfNeeded: position)
        if !saveNow, CheckpointedLedger.outrunsReaders(unsaved: unsavedTotal, booked: booked.traffic) {
          saveNow = true
        }
      }
    }
  }

  /// Puts back what an advance moved out, asks for the save it found due; its events.
  private mutating func finish(_ notes: consuming AdvanceNotes) -> [LedgerEvent] {
    if notes.saveNow { saveRequested = true }
    unsaved = notes.unsaved
    return notes.events
  }

  /// How far a counter may grow past its stored baseline before it is saved: half of a 32-bit
  /// counter's range.
  public static let readerMargin: UInt64 = 1 << 31

  /// Whether a reader could soon miss traffic this writer booked. A reader takes the stored
  /// baseline and adds what the kernel's counters grew since, and it may read 32 bits (or the
  /// baseline be 32-bit: the narrower decides): it can then tell growth only modulo 2³². So a
  /// counter is saved before it could pass the stored one by 2³²: as soon as, at the pace of the
  /// last sample, it would be half that far by the next one — which leaves the next sample a
  /// whole 2³¹ of room to run faster. (A name first seen, a reset, a wrap and a discarded sample
  /// are saved at once anyway: `advance` asks for those.)
  ///
  /// What no reader can know: a 32-bit counter that grows by 2³² or more between two of the
  /// writer's own samples reads the same as one that grew 2³² less; the writer books the least
  /// the readings allow, and readers agree with it. Only a faster sample or a 64-bit reader sees
  /// more.
  static func outrunsReaders(unsaved: TrafficCounts, booked: TrafficCounts) -> Bool {
    // What the name booked since its entry was saved is how far its totals grew past the
    // stored ones: every change of the totals between saves is a booking, and an entry taken
    // in from the database drops what was booked for it (`absorb`). It holds this booking
    // already: it is where the next sample's would start.
    let next = unsaved + booked
    let margin = Self.readerMargin
    return next.rxBytes >= margin || next.txBytes >= margin || next.rxPackets >= margin || next.txPackets >= margin
  }

  /// Asks for a save at the next opportunity (a deleted instance, a window change, a stop).
  public mutating func requestSave() { saveRequested = true }

  /// Takes in the ledger as stored: entries this writer has not changed since it saved them
  /// are taken as stored; one another writer changed meanwhile replaces this writer's.
  public mutating func absorb(_ stored: Ledger) {
    for (name, entry) in stored.entries {
      if let mine = saved[name], mine == entry, ledger.entries[name] != nil { continue }
      if ledger.entries[name] != nil { unsaved.remove(name) }
      ledger.replace(entry)
      saved.update(entry)
    }
  }

  /// What memory booked per bucket since the last checkpoint: the buckets as stored lack it.
  public var unsavedTraffic: UnsavedTraffic { unsaved }

  /// What a checkpoint would write now.
  public var checkpoint: LedgerCheckpoint {
    LedgerCheckpoint(entries: changedEntries, buckets: unsaved.rows)
  }

  /// The checkpoint was committed: memory and database agree. `stored`, when the writer has it,
  /// is the ledger the database holds now (the store keeps the one it wrote): its table is kept
  /// as the saved entries themselves, so writer and store hold one table, not two equal ones.
  public mutating func saved(_ checkpoint: LedgerCheckpoint, stored: Ledger? = nil) {
    if let stored {
      saved = stored.entries
    } else {
      for entry in checkpoint.entries { saved.update(entry) }
    }
    unsaved.removeAll()
    saveRequested = false
  }

  /// The entries that changed since saved, by name (`Ledger.nameOrder`).
  private var changedEntries: [LedgerEntry] {
    let changed = ledger.entries.values.filter { saved[$0.name] != $0 }
    return Ledger.nameOrder(changed).map { changed[$0] }
  }
}
