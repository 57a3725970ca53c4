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
  /// Per name, the sums of its buckets: a booking looks its name up once, then finds its few
  /// buckets (one per granularity, two where a save interval crosses a bucket's end) by a scan.
  private var sums: [InterfaceName: [Sum]] = [:]
  /// The bucket starts of the last time booked: every booking of one sample has the same time,
  /// and a calendar conversion per booking would cost more than the sum.
  private var lastStarts: (seconds: Int64, starts: [(granularity: TrafficGranularity, start: Int64)])?

  public init() {}

  public var isEmpty: Bool { sums.isEmpty }

  /// Forgets every sum, keeping the table's room for the next save interval's.
  public mutating func removeAll() { sums.removeAll(keepingCapacity: true) }

  public mutating func add(_ booked: [BookedTraffic], calendar: any LocalCalendar) {
    for entry in booked { add(entry, calendar: calendar) }
  }

  /// Adds one booking to the buckets that hold its time, each sum changed where it lies.
  public mutating func add(_ entry: BookedTraffic, calendar: any LocalCalendar) {
    guard !entry.delta.traffic.isZero else { return }
    let seconds = entry.wall.seconds
    let starts: [(granularity: TrafficGranularity, start: Int64)]
    if let last = lastStarts, last.seconds == seconds {
      starts = last.starts
    } else {
      starts = TrafficGranularity.allCases.map { ($0, $0.start(of: entry.wall, in: calendar)) }
      lastStarts = (seconds, starts)
    }
    if let index = sums.index(forKey: entry.name) {
      Self.book(entry, in: starts, into: &sums.values[index])
    } else {
      var list: [Sum] = []
      list.reserveCapacity(starts.count)
      Self.book(entry, in: starts, into: &list)
      sums[entry.name] = list
    }
  }

  private static func book(
    _ entry: BookedTraffic, in starts: [(granularity: TrafficGranularity, start: Int64)], into list: inout [Sum]
  ) {
    for (granularity, start) in starts {
      if let i = list.firstIndex(where: { $0.granularity == granularity && $0.start == start }) {
        list[i].interfaceClass = entry.interfaceClass
        list[i].traffic += entry.delta.traffic
      } else {
        list.append(
          Sum(
            granularity: granularity, start: start, interfaceClass: entry.interfaceClass,
            traffic: entry.delta.traffic))
      }
    }
  }

  /// The traffic booked into `granularity`'s buckets starting at `start` (Unix seconds) or later,
  /// of one class or one name (nil: any).
  public func traffic(
    _ granularity: TrafficGranularity, since start: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName?
  ) -> TrafficCounts {
    var total = TrafficCounts.zero
    for (key, list) in sums where name == nil || key == name {
      for sum in list
      where sum.granularity == granularity && sum.start >= start
        && (interfaceClass == nil || sum.interfaceClass == interfaceClass)
      {
        total += sum.traffic
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
    sums.flatMap { name, list in
      list.compactMap { sum in
        guard sum.granularity == granularity, sum.start >= start else { return nil }
        return TrafficBucket(name: name, start: sum.start, interfaceClass: sum.interfaceClass, traffic: sum.traffic)
      }
    }
  }

  /// Forgets what was booked for `name` (another writer booked it).
  public mutating func remove(_ name: InterfaceName) {
    sums[name] = nil
  }

  /// One row per bucket, ordered as the table's key (granularity, start, name) so a checkpoint
  /// touches the pages of the bucket table in order. The names are sorted once, and the rows of
  /// each granularity taken in that order: a sort of every row (four per name) by the whole key
  /// moved each row some ten times, a quarter of a save.
  public var rows: [(granularity: TrafficGranularity, bucket: TrafficBucket)] {
    let lists = sums.sorted { $0.key < $1.key }
    var rows: [(granularity: TrafficGranularity, bucket: TrafficBucket)] = []
    rows.reserveCapacity(lists.reduce(0) { $0 + $1.value.count })
    for granularity in TrafficGranularity.allCases {
      let first = rows.count
      var starts: (lowest: Int64, highest: Int64)?
      for (name, list) in lists {
        for sum in list where sum.granularity == granularity {
          rows.append(
            (
              granularity,
              TrafficBucket(name: name, start: sum.start, interfaceClass: sum.interfaceClass, traffic: sum.traffic)
            ))
          starts = (min(starts?.lowest ?? sum.start, sum.start), max(starts?.highest ?? sum.start, sum.start))
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
  private(set) var saved: [InterfaceName: LedgerEntry]
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
    var events: [LedgerEvent] = []
    var saveNow = false
    // The fields the closure changes are moved out of `self` while the ledger changes, so each
    // table is changed where it lies.
    var unsaved = self.unsaved
    self.unsaved = UnsavedTraffic()
    let saved = self.saved
    ledger.advance(observations) { change in
      if change.isNew { saveNow = true }
      if let event = change.event {
        events.append(event)
        saveNow = true
      }
      if let booked = change.booked {
        unsaved.add(booked, calendar: calendar)
        if !saveNow, Self.outrunsReaders(change.entry, booked, saved: saved) { saveNow = true }
      }
    }
    self.unsaved = unsaved
    if saveNow { saveRequested = true }
    return events
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
  static func outrunsReaders(
    _ entry: LedgerEntry, _ booked: BookedTraffic, saved: [InterfaceName: LedgerEntry]
  ) -> Bool {
    guard let stored = saved[booked.name] else { return true }
    if entry.baseline.instance != stored.baseline.instance { return true }
    // `entry` already holds this booking: its totals are where the next sample's would start.
    let next = entry.totals.traffic - stored.totals.traffic + booked.delta.traffic
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
      saved[name] = entry
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
      for entry in checkpoint.entries { saved[entry.name] = entry }
    }
    unsaved.removeAll()
    saveRequested = false
  }

  /// The entries that changed since saved, by name: their positions are sorted, not the entries
  /// themselves (each some hundred bytes, moved many times by a sort).
  private var changedEntries: [LedgerEntry] {
    let changed = ledger.entries.values.filter { saved[$0.name] != $0 }
    return changed.indices.sorted { changed[$0].name < changed[$1].name }.map { changed[$0] }
  }
}
