import VPNStatModel
import VPNStatSystem

/// What a one-shot report (`status`, `export`) reads of the database — the ledger, the session
/// and the health — as the recorder published it after a save (`DB.published` beside the file,
/// or a link there to the unit's runtime directory on tmpfs: `Store.publishingDirectory`),
/// with the database's `StoreStamp` of that moment. A reader that finds the stamp still the
/// database's own has what SQLite would give it, without opening SQLite: the open, the schema's
/// parse and a dozen statements' compiles were half of `status --db`'s cost at a thousand
/// interfaces. Any commit since, by any writer, changes the stamp, and the reader reads the
/// database as before; so does one that finds the file damaged, of another format, written by
/// another user than the database's owner or writable by others, or a session with a data cap
/// (its usage is in the buckets). The gate and the enforcer never read it: they decide.
///
/// Little-endian: magic, format, the head's length, the head (the stamp, the health, the
/// session), then the ledger's snapshot (`LedgerSnapshot`) to the end of the file.
package struct PublishedState {
  /// The database it was published for.
  package var location: StoreLocation
  package var ledger: Ledger
  package var session: StoredSession
  package var health: StoreHealth
  /// With a data cap: the tunnel class's usage in the cap's period as the database held it.
  package var capUsage: CapUsage?

  /// A capped session's usage as published: the stored daily (and unfolded 5-minute) buckets of
  /// the tunnel class from the period's `start` (Unix seconds, the period of the session's trusted
  /// time when it was published). A reader whose "now" falls in another period reads the database.
  package struct CapUsage: Equatable, Sendable {
    package var start: Int64
    package var stored: TrafficCounts
  }

  static let magic: UInt32 = 0x3270_7376  // "vsp2" (the stamp of a rollback-journal file)
  static let suffix = "published"
  /// Larger is damage: a snapshot of 100,000 interfaces is some 20 MB.
  static let largest = 256 << 20

  /// The state published for the database at `location`, when it is current and may be believed
  /// (see the type); nil otherwise. A boot id equal to `sharingBootID` is that String itself
  /// (as `Store.loadLedger` promises).
  package static func load(_ location: StoreLocation, sharingBootID: String?) -> PublishedState? {
    guard let real = FileSystem.realPath(location.path), let database = FileStatus.of(real),
      let file = Opened(database: real, owner: database.owner)
    else { return nil }
    defer { file.fd.close() }
    var head = ByteReader(file.head)
    guard let stamp = head.bytes(StoreStamp.length), let health = head.health(),
      let (session, capUsage) = head.storedSession(), head.atEnd
    else { return nil }
    guard
      let ledger = LedgerSnapshot.decode(
        count: file.ledgerLength, reading: { file.read($0, at: file.ledgerStart + $1) }, sharingBootID: sharingBootID)
    else { return nil }
    // Last, after everything believed was read: equal, no commit came after the one published.
    guard let live = StoreStamp.read(database: real), !live.isWriting, live.bytes.elementsEqual(stamp) else {
      return nil
    }
    return PublishedState(location: location, ledger: ledger, session: session, health: health, capUsage: capUsage)
  }

  /// The published file of the database at `real`, open, when it may be believed: a regular file
  /// (a link followed, to the recorder's runtime directory: what it leads to is believed on the
  /// same terms, and its stamp names the database it was published for) of the database's
  /// owner, which no one else could have written, whose lengths add up. Its head read.
  struct Opened {
    let fd: FileDescriptor
    let head: [UInt8]
    let ledgerStart: Int
    let ledgerLength: Int

    init?(database real: String, owner: UInt32) {
      guard let fd = try? FileDescriptor.openRegularFollowing(real + "." + PublishedState.suffix) else { return nil }
      guard let (head, ledgerLength) = Self.head(of: fd, owner: owner) else {
        fd.close()
        return nil
      }
      self.fd = fd
      self.head = head
      ledgerStart = 12 + head.count
      self.ledgerLength = ledgerLength
    }

    private static func head(of fd: FileDescriptor, owner: UInt32) -> (head: [UInt8], ledgerLength: Int)? {
      // The file's owner is the database's, and no one else could have written it.
      guard let file = try? fd.status(), file.isRegular, !file.othersMayWrite, file.owner == owner,
        file.size >= 12, file.size <= PublishedState.largest
      else { return nil }
      var start = [UInt8](repeating: 0, count: 12)
      guard start.withUnsafeMutableBytes({ read($0, at: 0, from: fd) }) else { return nil }
      var opening = ByteReader(start)
      guard opening.u32() == PublishedState.magic, let headLength = opening.u32().map(Int.init),
        let ledgerLength = opening.u32().map(Int.init),
        headLength <= file.size - 12, ledgerLength == file.size - 12 - headLength
      else { return nil }
      var head = [UInt8](repeating: 0, count: headLength)
      guard head.withUnsafeMutableBytes({ read($0, at: 12, from: fd) }) else { return nil }
      return (head, ledgerLength)
    }

    /// Fills `buffer` from `offset`; false at the end of the file or an error.
    func read(_ buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Bool {
      Self.read(buffer, at: offset, from: fd)
    }

    private static func read(_ buffer: UnsafeMutableRawBufferPointer, at offset: Int, from fd: FileDescriptor) -> Bool {
      var done = 0
      while done < buffer.count {
        guard
          let count = try? fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + done),
          count > 0
        else { return false }
        done += count
      }
      return true
    }
  }

  /// The file's bytes for `stamp` and what was read at it.
  static func encode(
    stamp: StoreStamp, session: StoredSession, health: StoreHealth, capUsage: CapUsage? = nil, ledger: Ledger
  ) -> [UInt8] {
    encode(stamp: stamp, session: session, health: health, capUsage: capUsage, snapshot: LedgerSnapshot.encode(ledger))
  }

  /// The file's bytes for `stamp`, with a ledger's snapshot as `LedgerSnapshot` encoded it.
  static func encode(
    stamp: StoreStamp, session: StoredSession, health: StoreHealth, capUsage: CapUsage?, snapshot: [UInt8]
  ) -> [UInt8] {
    var head = ByteWriter()
    head.bytes.append(contentsOf: stamp.bytes)
    head.health(health)
    head.storedSession(session, capUsage: capUsage)
    var out = ByteWriter()
    out.bytes.reserveCapacity(12 + head.bytes.count + snapshot.count)
    out.u32(magic)
    out.u32(UInt32(head.bytes.count))
    out.u32(UInt32(snapshot.count))
    out.bytes.append(contentsOf: head.bytes)
    out.bytes.append(contentsOf: snapshot)
    return out.bytes
  }
}

extension Store {
  /// Publishes for one-shot readers (`PublishedState`) what this writer's last save stored,
  /// when nothing was committed since by anyone: the session, the health and the stamp are read
  /// under the writer's lock, which no other writer commits under. Returns whether it
  /// published; a file it could not write throws, and readers read the database.
  ///
  /// `lasting`: beside the database, on its disk, whatever `publishingDirectory` says, for a
  /// writer that stops: a reboot empties the runtime directory (so does a unit's stop, unless it
  /// preserves it), and a link there would send every reader until the next boot's recorder
  /// saves to SQLite. The file stays true until a commit changes the stamp.
  @discardableResult
  package func publishForReaders(lasting: Bool = false) throws -> Bool {
    guard !isReadOnly, let real = FileSystem.realPath(location.path) else { return false }
    let read: (Ledger, StoredSession, StoreHealth, PublishedState.CapUsage?, StoreStamp)? = try guarded {
      try connection.transaction(immediate: false) {
        // No other connection's commit since the save, and only a save writes the rows on this
        // one: the saved ledger is the rows, whether the save stored the snapshot or left it stale.
        guard let saved = cachedLedger, try connection.scalar("PRAGMA data_version") == saved.dataVersion,
          let stamp = StoreStamp.read(database: real), !stamp.isWriting
        else { return nil }
        let session = try storedSession()
        return (saved.ledger, session, try health(), try capUsage(of: session), stamp)
      }
    }
    guard let (ledger, session, health, capUsage, stamp) = read, session.record.dataCap == nil || capUsage != nil,
      let database = FileStatus.of(real)
    else { return false }
    let place = PublicationPlace(database: real, status: database)
    let bytes = PublishedState.encode(
      stamp: stamp, session: session, health: health, capUsage: capUsage, ledger: ledger)
    let trusted = publishingDirectory.flatMap { $0.hasPrefix("/") && DirectoryTrust.problem($0) == nil ? $0 : nil }
    // On tmpfs, written every save without reaching the disk (138 KB a minute at a thousand
    // interfaces); named for the file the database is, so two databases never share one.
    let target = "\(place.base)-\(database.device)-\(database.inode).\(PublishedState.suffix)"
    guard let elsewhere = trusted, !lasting else {
      // The rename replaces a link to the runtime directory, whose copy is then no one's.
      try AtomicFile.write(bytes, named: place.name, in: place.directory, mode: place.mode)
      if let trusted { try? FileSystem.remove(trusted + "/" + target) }
      return true
    }
    try AtomicFile.write(bytes, named: target, in: elsewhere, mode: place.mode)
    try AtomicFile.link(named: place.name, in: place.directory, to: elsewhere + "/" + target)
    return true
  }

  /// A write that leaves the ledger as it is (the session, a stop, a refusal, the trusted clock,
  /// the health), made so that one-shot readers stay on what was published rather than reading
  /// SQLite until the recorder's next save (or, with no recorder running, until one runs): when
  /// the published file was the database's state before the write, it is written again after
  /// it with the new stamp, session, health and cap usage and the same ledger, byte for byte.
  /// Both stamps are read under the writers' lock, as `publishForReaders` reads its own; not when
  /// this process is not the database's owner (readers would not believe its file, and root must
  /// not replace a user's). Inside another operation, part of that one, which decides.
  func keepingPublished<T>(_ body: () throws -> T) throws -> T {
    guard depth == 0, !isReadOnly else { return try guarded(body) }
    return try guarded {
      let ledger = currentlyPublishedLedger()
      let result = try body()
      if let ledger { try? republish(ledger) }
      return result
    }
  }

  /// The ledger's bytes as published for this database, when the file is the database's state
  /// now and this process owns the database.
  private func currentlyPublishedLedger() -> [UInt8]? {
    let owner = CurrentProcess.effectiveUserID
    guard let database = FileStatus.of(realPath), database.owner == owner,
      let file = PublishedState.Opened(database: realPath, owner: owner)
    else { return nil }
    defer { file.fd.close() }
    guard let stamp = StoreStamp.read(stampFiles), !stamp.isWriting, file.head.starts(with: stamp.bytes) else {
      return nil
    }
    var snapshot = [UInt8](repeating: 0, count: file.ledgerLength)
    guard snapshot.withUnsafeMutableBytes({ file.read($0, at: file.ledgerStart) }) else { return nil }
    return snapshot
  }

  /// Publishes `snapshot` (a ledger's, as published) with the session, the health and the stamp
  /// after this operation's write.
  private func republish(_ snapshot: [UInt8]) throws {
    let read: (StoredSession, StoreHealth, PublishedState.CapUsage?, StoreStamp)? = try connection.transaction(
      immediate: false
    ) {
      guard let stamp = StoreStamp.read(stampFiles), !stamp.isWriting else { return nil }
      let session = try storedSession()
      return (session, try health(), try capUsage(of: session), stamp)
    }
    guard let (session, health, capUsage, stamp) = read, session.record.dataCap == nil || capUsage != nil,
      let database = FileStatus.of(realPath)
    else { return }
    let place = PublicationPlace(database: realPath, status: database)
    let bytes = PublishedState.encode(
      stamp: stamp, session: session, health: health, capUsage: capUsage, snapshot: snapshot)
    // Where the file it replaces is: the recorder's runtime directory, through the link beside
    // the database, when no one else may write there; else, or when this process may not write
    // there (an enforcer's unit sees /run read-only), beside the database, in the link's place
    // until the recorder's next save links it again.
    if let (directory, name) = place.linkedDirectory, DirectoryTrust.problem(directory) == nil,
      (try? AtomicFile.write(bytes, named: name, in: directory, mode: place.mode)) != nil
    {
      return
    }
    try AtomicFile.write(bytes, named: place.name, in: place.directory, mode: place.mode)
  }
}

extension Store {
  /// A capped session's usage as it is published (`PublishedState.CapUsage`), read in the
  /// caller's transaction: nil without a cap, or without a trusted time to take the period of.
  func capUsage(of session: StoredSession) throws -> PublishedState.CapUsage? {
    guard let cap = session.record.dataCap, let at = session.trusted?.wall else { return nil }
    let start = cap.period.start(of: at, in: calendar)
    return PublishedState.CapUsage(start: start, stored: try usage(since: start, of: .tunnel))
  }
}

/// Where a database's published file goes: its name beside the database, and the mode it is
/// written with (readable by whom the database is, never more).
struct PublicationPlace {
  let directory: String
  /// The database file's own name.
  let base: String
  let mode: UInt32
  var name: String { base + "." + PublishedState.suffix }

  init(database real: String, status: FileStatus) {
    directory = StoreLocation(path: real).directory
    base = String(real.split(separator: "/").last ?? "")
    mode = status.permissions & 0o644
  }

  /// The directory and name a link in the published file's place leads to, when it is one to an
  /// absolute path (the recorder's link to its runtime directory).
  var linkedDirectory: (String, String)? {
    guard let bytes = try? SmallFile.symbolicLink(SystemPath(directory + "/" + name), limit: 4096),
      bytes.first == UInt8(ascii: "/"), let slash = bytes.lastIndex(of: UInt8(ascii: "/")), slash > 0,
      slash < bytes.count - 1
    else { return nil }
    return (String(decoding: bytes[..<slash], as: UTF8.self), String(decoding: bytes[(slash + 1)...], as: UTF8.self))
  }
}

/// Little-endian values appended to bytes.
struct ByteWriter {
  var bytes: [UInt8] = []

  mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
  mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
  mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }
  mutating func traffic(_ value: TrafficCounts) {
    for count in [value.rxBytes, value.txBytes, value.rxPackets, value.txPackets] { u64(count) }
  }
  mutating func flag(_ value: Bool) { bytes.append(value ? 1 : 0) }
  mutating func data<C: Collection<UInt8>>(_ value: C) {
    u32(UInt32(value.count))
    bytes.append(contentsOf: value)
  }
  mutating func text(_ value: String) { data(value.utf8) }
  mutating func optionalText(_ value: String?) {
    flag(value != nil)
    if let value { text(value) }
  }
  mutating func optionalName(_ value: InterfaceName?) {
    flag(value != nil)
    value?.withBytes { data($0) }
  }
  mutating func optionalTime(_ value: Timestamp?) {
    flag(value != nil)
    if let value { i64(value.nanoseconds) }
  }

  mutating func health(_ health: StoreHealth) {
    u64(health.notificationOverflows)
    optionalTime(health.lastNotificationOverflow)
  }

  mutating func storedSession(_ session: StoredSession, capUsage: PublishedState.CapUsage?) {
    let record = session.record
    text(record.plan.rawValue)
    flag(record.window != nil)
    if let window = record.window {
      for time in [window.openedAt, window.sessionEndsAt, window.pauseEndsAt] { i64(time.nanoseconds) }
      i64(window.lengths.session.nanoseconds)
      i64(window.lengths.pause.nanoseconds)
    }
    optionalName(record.tunnel)
    u64(record.usageBase.rxBytes)
    u64(record.usageBase.txBytes)
    // A cap goes with its usage as stored (`PublishedState.CapUsage`), or is not published.
    flag(record.dataCap != nil)
    if let cap = record.dataCap, let capUsage {
      u64(cap.limitBytes)
      text(cap.period.length.rawValue)
      i64(Int64(cap.period.monthStartDay))
      i64(capUsage.start)
      traffic(capUsage.stored)
    }
    flag(session.trusted != nil)
    if let trusted = session.trusted {
      i64(trusted.wall.nanoseconds)
      i64(trusted.boottime)
      text(trusted.bootID)
    }
    flag(session.lastStop != nil)
    if let stop = session.lastStop {
      i64(stop.at.nanoseconds)
      optionalName(stop.interface)
      text(stop.reason.rawValue)
      optionalText(stop.detail)
    }
    flag(session.lastRefusal != nil)
    if let refusal = session.lastRefusal {
      i64(refusal.at.nanoseconds)
      optionalName(refusal.interface)
      text(refusal.by.rawValue)
      text(refusal.reason.rawValue)
      optionalTime(refusal.until)
    }
  }
}

/// Bounds-checked little-endian reads: nil for anything not whole or not known.
struct ByteReader {
  let bytes: [UInt8]
  var offset = 0

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  var atEnd: Bool { offset == bytes.count }

  mutating func bytes(_ count: Int) -> ArraySlice<UInt8>? {
    guard count >= 0, count <= bytes.count - offset else { return nil }
    defer { offset += count }
    return bytes[offset..<offset + count]
  }
  mutating func u32() -> UInt32? {
    bytes(4).map { $0.reversed().reduce(0) { $0 << 8 | UInt32($1) } }
  }
  mutating func u64() -> UInt64? {
    bytes(8).map { $0.reversed().reduce(0) { $0 << 8 | UInt64($1) } }
  }
  mutating func i64() -> Int64? { u64().map { Int64(bitPattern: $0) } }
  mutating func traffic() -> TrafficCounts? {
    guard let rx = u64(), let tx = u64(), let rxPackets = u64(), let txPackets = u64() else { return nil }
    return TrafficCounts(rxBytes: rx, txBytes: tx, rxPackets: rxPackets, txPackets: txPackets)
  }
  mutating func flag() -> Bool? {
    guard let byte = bytes(1)?.first, byte <= 1 else { return nil }
    return byte == 1
  }
  mutating func data() -> ArraySlice<UInt8>? {
    guard let count = u32() else { return nil }
    return bytes(Int(count))
  }
  mutating func text() -> String? { data().map { String(decoding: $0, as: UTF8.self) } }
  /// A value that may be absent: .some(nil) when the flag says so, nil when damaged.
  mutating func optional<T>(_ read: (inout ByteReader) -> T?) -> T?? {
    guard let present = flag() else { return nil }
    guard present else { return .some(nil) }
    return read(&self).map { .some($0) }
  }
  /// A stored instant: nil (damage) outside `Timestamp.storable`, as in the database.
  mutating func time() -> Timestamp? { i64().flatMap(Timestamp.init(stored:)) }
  mutating func name() -> InterfaceName? { data().map { InterfaceName(bytes: Array($0)) } }

  mutating func health() -> StoreHealth? {
    guard let overflows = u64(), let last = optional({ $0.time() }) else { return nil }
    return StoreHealth(notificationOverflows: overflows, lastNotificationOverflow: last)
  }

  mutating func storedSession() -> (StoredSession, PublishedState.CapUsage?)? {
    var record = SessionRecord()
    guard let plan = text().flatMap(Plan.init(rawValue:)), let hasWindow = flag() else { return nil }
    record.plan = plan
    if hasWindow {
      // The model's rules for stored values, as the database's rows are read.
      guard let opened = time(), let ends = time(), let pause = time(), let session = i64(), let pauseLength = i64(),
        let lengths = SessionLengths(storedSession: session, pause: pauseLength),
        let window = SessionWindow(stored: opened, sessionEndsAt: ends, pauseEndsAt: pause, lengths: lengths)
      else { return nil }
      record.window = window
    }
    guard let tunnel = optional({ $0.name() }), let rx = u64(), let tx = u64(),
      let capped = optional({ reader -> (DataCap, PublishedState.CapUsage)? in
        // The model's rules for a stored cap, as the database's row is read.
        guard let limit = reader.i64().flatMap(DataCap.limit(stored:)),
          let length = reader.text().flatMap(PeriodLength.init(rawValue:)),
          let period = reader.i64().flatMap({ UsagePeriod(length, storedMonthStartDay: $0) }),
          let start = reader.i64(), let stored = reader.traffic()
        else { return nil }
        return (DataCap(limitBytes: limit, period: period), PublishedState.CapUsage(start: start, stored: stored))
      }),
      let trusted = optional({ reader -> TrustedClock? in
        guard let wall = reader.time(), let boottime = reader.i64().flatMap(ClockReading.boottime(stored:)),
          let bootID = reader.text()
        else { return nil }
        return TrustedClock(wall: wall, boottime: boottime, bootID: bootID)
      }),
      let lastStop = optional({ reader -> StopRecord? in
        guard let at = reader.time(), let interface = reader.optional({ $0.name() }),
          let reason = reader.text().flatMap(StopReason.init(rawValue:)), let detail = reader.optional({ $0.text() })
        else { return nil }
        return StopRecord(at: at, interface: interface, reason: reason, detail: detail)
      }),
      let lastRefusal = optional({ reader -> Refusal? in
        guard let at = reader.time(), let interface = reader.optional({ $0.name() }),
          let by = reader.text().flatMap(Refusal.Path.init(rawValue:)),
          let reason = reader.text().flatMap(Refusal.Reason.init(rawValue:)), let until = reader.optional({ $0.time() })
        else { return nil }
        return Refusal(at: at, interface: interface, by: by, reason: reason, until: until)
      })
    else { return nil }
    record.tunnel = tunnel
    record.usageBase = TrafficCounts(rxBytes: rx, txBytes: tx)
    record.dataCap = capped?.0
    return (StoredSession(record: record, trusted: trusted, lastStop: lastStop, lastRefusal: lastRefusal), capped?.1)
  }
}
