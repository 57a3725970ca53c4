import VPNStatModel
import VPNStatSystem

/// The session window, the plan, stop records and the trusted clock, as stored.
extension Store {
  /// The stored session: plan, window, tunnel, usage base.
  package func sessionRecord() throws -> SessionRecord {
    try reading { try readSession() }
  }

  private func readSession() throws -> SessionRecord {
    var record = SessionRecord()
    try querySession { row in
      record.plan = Plan(rawValue: row.text(0) ?? "") ?? .free
      record.window = try decodeWindow(row)
      record.tunnel = row.isNull(6) ? nil : InterfaceName(bytes: row.blob(6))
      // The base's bytes are what a window's usage is measured from (packets are not kept).
      record.usageBase = TrafficCounts(rxBytes: row.unsigned(7), txBytes: row.unsigned(8))
      record.dataCap = try decodeDataCap(row)
    }
    return record
  }

  /// Runs `body` on the session row: the plan, the window's five numbers, the tunnel, the usage
  /// base, the cap's three columns, in this order.
  private func querySession(_ body: (SQLiteRow) throws -> Void) throws {
    // A file older than schema 4 has no cap columns: it reads as "no cap".
    let capColumns = schema >= 4 ? "data_cap_bytes, data_cap_period, month_start_day" : "NULL, NULL, NULL"
    try connection.query(
      """
      SELECT plan, opened_at, session_ends_at, pause_ends_at, session_length, pause_length, tunnel,
        usage_rx_base, usage_tx_base, \(capColumns) FROM session WHERE id = 1
      """, row: body)
  }

  /// The window of the session row (`querySession`), nil when it has none; damage when a value
  /// is not one vpnstat writes (`session reset` replaces them all).
  private func decodeWindow(_ row: SQLiteRow) throws -> SessionWindow? {
    guard !row.isNull(1), !row.isNull(2), !row.isNull(3), !row.isNull(4), !row.isNull(5) else { return nil }
    let opened = try stored(row, 1, .instant, "session.opened_at", repair: .sessionReset)
    let ends = try stored(row, 2, .instant, "session.session_ends_at", repair: .sessionReset)
    let pause = try stored(row, 3, .instant, "session.pause_ends_at", repair: .sessionReset)
    let lengths = SessionLengths(
      session: try stored(row, 4, .length, "session.session_length", repair: .sessionReset),
      pause: try stored(row, 5, .length, "session.pause_length", repair: .sessionReset))
    guard let window = SessionWindow(stored: opened, sessionEndsAt: ends, pauseEndsAt: pause, lengths: lengths) else {
      throw damaged(
        "session.opened_at, session_ends_at and pause_ends_at hold \(opened.nanoseconds), \(ends.nanoseconds) and \(pause.nanoseconds), not in order",
        repair: .sessionReset)
    }
    return window
  }

  /// The data cap of the session row (`querySession`), nil when it has none; damage when a
  /// value is not one vpnstat writes (`plan --data-cap` replaces them).
  private func decodeDataCap(_ row: SQLiteRow) throws -> DataCap? {
    // A cap whose period another version wrote and this one does not know is no cap.
    guard !row.isNull(9), let length = PeriodLength(rawValue: row.text(10) ?? "") else { return nil }
    let limit = try stored(row, 9, .capLimit, "session.data_cap_bytes", repair: .dataCap)
    // A file that has a cap has the day too; none reads as the 1st.
    let day = row.isNull(11) ? 1 : try stored(row, 11, .monthStartDay, "session.month_start_day", repair: .dataCap)
    return DataCap(limitBytes: limit, period: UsagePeriod(length, monthStartDay: day))
  }

  private func writeSession(_ record: SessionRecord) throws {
    let w = record.window
    try connection.query(
      """
      UPDATE session SET plan = ?, opened_at = ?, session_ends_at = ?, pause_ends_at = ?,
        session_length = ?, pause_length = ?, tunnel = ?, usage_rx_base = ?, usage_tx_base = ? WHERE id = 1
      """,
      [
        .text(record.plan.rawValue), .optional(w?.openedAt.nanoseconds), .optional(w?.sessionEndsAt.nanoseconds),
        .optional(w?.pauseEndsAt.nanoseconds), .optional(w?.lengths.session.nanoseconds),
        .optional(w?.lengths.pause.nanoseconds), record.tunnel.map { .blob($0.bytes) } ?? .null,
        .unsigned(record.usageBase.rxBytes), .unsigned(record.usageBase.txBytes),
      ])
    // Writers run at the current schema (they migrate on opening).
    let cap = record.dataCap
    try connection.query(
      "UPDATE session SET data_cap_bytes = ?, data_cap_period = ?, month_start_day = ? WHERE id = 1",
      [
        .optional(cap.map { Int64(clamping: $0.limitBytes) }), cap.map { .text($0.period.length.rawValue) } ?? .null,
        .optional(cap.map { Int64($0.period.monthStartDay) }),
      ])
  }

  /// Reads, changes and writes the session in one write transaction, so an enforcer and a
  /// `plan`/`session reset` run at the same moment cannot lose each other's change.
  package func updateSession<T>(_ change: (inout SessionRecord) throws -> T) throws -> T {
    guard !isReadOnly else {
      throw StoreError.notPermitted(path: location.path, detail: "no write access")
    }
    return try keepingPublished {
      try connection.transaction {
        var record = try readSession()
        let result = try change(&record)
        try writeSession(record)
        return result
      }
    }
  }

  /// The tunnel-class ledger totals now: the base a window's usage is measured from.
  package func tunnelTotals() throws -> TrafficCounts {
    try ledgerTotals(of: .tunnel)
  }

  /// The stored ledger totals of one class or one interface name (nil: any), summed.
  package func ledgerTotals(of interfaceClass: InterfaceClass?, name: InterfaceName? = nil) throws -> TrafficCounts {
    try reading {
      var sum = TrafficCounts.zero
      try connection.query(
        """
        SELECT total_rx_bytes, total_tx_bytes, total_rx_packets, total_tx_packets FROM interfaces
        WHERE (?1 IS NULL OR class = ?1) AND (?2 IS NULL OR name = ?2)
        """, [interfaceClass.map { .text($0.rawValue) } ?? .null, name.map { .blob($0.bytes) } ?? .null]
      ) { row in sum += row.traffic(0) }
      return sum
    }
  }

  /// Traffic booked in the daily buckets from `since` (a local midnight, Unix seconds) on, of
  /// one class or one interface name (nil: any): a period's usage, for data caps and alerts.
  /// Summed here by the counters' rule (`TrafficCounts`: UInt64, wrapping), not by SQL's `sum`,
  /// which reads them as signed and fails on overflow ("integer overflow", exit 69) — a month
  /// has some thirty rows per name.
  package func usage(since: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName? = nil) throws
    -> TrafficCounts
  {
    try reading {
      var sum = TrafficCounts.zero
      // The daily buckets, then the 5-minute ones not folded into them yet (`foldedThrough`):
      // a local midnight is a 5-minute boundary, so those from `since` on are this period's.
      func add(_ granularity: TrafficGranularity, from: Int64) throws {
        try connection.query(
          """
          SELECT rx_bytes, tx_bytes, rx_packets, tx_packets, start FROM buckets
          WHERE granularity = ?1 AND start >= ?2 AND (?3 IS NULL OR class = ?3) AND (?4 IS NULL OR name = ?4)
          """,
          [
            .integer(Int64(granularity.rawValue)), .integer(from),
            interfaceClass.map { .text($0.rawValue) } ?? .null, name.map { .blob($0.bytes) } ?? .null,
          ]
        ) { row in
          _ = try stored(row, 4, .instantSeconds, "buckets.start")
          sum += row.traffic(0)
        }
      }
      try add(.day, from: since)
      if let through = try foldedThrough() { try add(.fiveMinutes, from: max(through, since)) }
      return sum
    }
  }

  // MARK: - Stops

  /// Records `stop`, unless the same stop (the same instant, interface and reason) is recorded
  /// already: a stop kept in an enforcer's spool may be offered again after it was written.
  package func recordStop(_ stop: StopRecord) throws {
    guard !isReadOnly else { throw StoreError.notPermitted(path: location.path, detail: "no write access") }
    try keepingPublished {
      try connection.transaction {
        try connection.query(
          """
          INSERT INTO stops (at, interface, reason, detail) SELECT ?1, ?2, ?3, ?4
          WHERE NOT EXISTS (SELECT 1 FROM stops WHERE at = ?1 AND interface IS ?2 AND reason = ?3)
          """,
          [
            .integer(stop.at.nanoseconds), stop.interface.map { .blob($0.bytes) } ?? .null,
            .text(stop.reason.rawValue), stop.detail.map { .text($0) } ?? .null,
          ])
        // A tunnel undone in the pause was refused (by the enforcer), until the stored pause ends:
        // recorded with the stop, so a stop the spool kept is a refusal when it is written too.
        if connection.changes > 0, let refusal = stop.refusal(pauseEndsAt: try readSession().window?.pauseEndsAt) {
          try insertRefusal(refusal)
        }
        // Keep the last thousand; a tunnel flapping for months must not grow the file forever.
        try connection.query("DELETE FROM stops WHERE id <= (SELECT max(id) FROM stops) - 1000")
      }
    }
  }

  // MARK: - Refusals

  /// Records a connection refused or undone because connecting was not allowed.
  package func recordRefusal(_ refusal: Refusal) throws {
    guard !isReadOnly else { throw StoreError.notPermitted(path: location.path, detail: "no write access") }
    try keepingPublished { try insertRefusal(refusal) }
  }

  private func insertRefusal(_ refusal: Refusal) throws {
    try connection.query(
      "INSERT INTO refusals (at, interface, by, reason, until) VALUES (?, ?, ?, ?, ?)",
      [
        .integer(refusal.at.nanoseconds), refusal.interface.map { .blob($0.bytes) } ?? .null,
        .text(refusal.by.rawValue), .text(refusal.reason.rawValue), .optional(refusal.until?.nanoseconds),
      ])
    // The last thousand, as for stops.
    try connection.query("DELETE FROM refusals WHERE id <= (SELECT max(id) FROM refusals) - 1000")
  }

  /// The last refusal recorded; nil when none (or the file predates refusals: schema 5).
  package func lastRefusal() throws -> Refusal? {
    guard schema >= 5 else { return nil }
    return try reading {
      var result: Refusal?
      try connection.query("SELECT at, interface, by, reason, until FROM refusals ORDER BY id DESC LIMIT 1") { row in
        // A path or reason another version wrote and this one does not know is shown as the gate's pause.
        result = Refusal(
          at: try stored(row, 0, .instant, "refusals.at"),
          interface: row.isNull(1) ? nil : InterfaceName(bytes: row.blob(1)),
          by: Refusal.Path(rawValue: row.text(2) ?? "") ?? .gate,
          reason: Refusal.Reason(rawValue: row.text(3) ?? "") ?? .pause,
          until: row.isNull(4) ? nil : try stored(row, 4, .instant, "refusals.until"))
      }
      return result
    }
  }

  /// The most recent stops, newest first.
  package func stops(limit: Int = 1) throws -> [StopRecord] {
    try reading {
      var result: [StopRecord] = []
      try connection.query(
        "SELECT at, interface, reason, detail FROM stops ORDER BY id DESC LIMIT ?", [.integer(Int64(limit))]
      ) { row in
        result.append(
          StopRecord(
            at: try stored(row, 0, .instant, "stops.at"),
            interface: row.isNull(1) ? nil : InterfaceName(bytes: row.blob(1)),
            reason: StopReason(rawValue: row.text(2) ?? "") ?? .user, detail: row.text(3)))
      }
      return result
    }
  }

  // MARK: - Trusted clock

  /// The trusted "now" for `reading` (never behind the last trusted time of this boot). A writer
  /// stores the pair back unless told not to.
  package func trustedNow(_ reading: ClockReading, writing: Bool? = nil) throws -> Timestamp {
    guard writing ?? !isReadOnly else { return try self.reading { TrustedClock.now(reading, last: try readTrusted()) } }
    return try keepingPublished {
      let now = TrustedClock.now(reading, last: try readTrusted())
      try writeTrusted(TrustedClock.after(reading, trusted: now))
      return now
    }
  }

  /// The last trusted pair; damage when a value is not one vpnstat writes (a wall time of 2262
  /// made every command trap, `session reset` and `plan` too: they replace it, `clearDamaged`).
  private func readTrusted() throws -> TrustedClock? {
    var last: TrustedClock?
    try connection.query("SELECT wall, boottime, boot_id FROM trusted_clock WHERE id = 1") { row in
      last = TrustedClock(
        wall: try stored(row, 0, .instant, "trusted_clock.wall", repair: .sessionReset),
        boottime: try stored(row, 1, .boottime, "trusted_clock.boottime", repair: .sessionReset),
        bootID: row.text(2) ?? "")
    }
    return last
  }

  /// The parts of the session a writer replaces whatever they hold (`clearDamaged`).
  package struct ReplacedParts: OptionSet, Sendable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }
    /// The window (`session reset`, `plan premium`).
    package static let window = ReplacedParts(rawValue: 1)
    /// The data cap (`plan --data-cap`).
    package static let dataCap = ReplacedParts(rawValue: 2)
  }

  /// Clears, in one write transaction, what holds a value no vpnstat writes among what the
  /// caller is about to write anew: the trusted clock (every writer stores a pair after its
  /// "now"; cleared, "now" is the wall clock's, which only a writer of the file — root — can
  /// choose by running this), and `parts` of the session. What `session reset` and `plan` run
  /// first, so that a damaged value there is repaired, not a 65 the file could never leave.
  /// Then reads the whole session: damage elsewhere in it throws, and the transaction is rolled
  /// back — nothing is written, the clock's pair neither, before a command that cannot finish.
  /// Returns what was cleared, for the command to say.
  package func clearDamaged(_ parts: ReplacedParts) throws -> [ClearedDamage] {
    guard !isReadOnly else { throw StoreError.notPermitted(path: location.path, detail: "no write access") }
    return try keepingPublished {
      try connection.transaction {
        var cleared: [ClearedDamage] = []
        do {
          _ = try readTrusted()
        } catch StoreError.damagedValue(_, let detail, _) {
          try connection.query("DELETE FROM trusted_clock")
          cleared.append(ClearedDamage(part: .trustedClock, path: location.path, detail: detail))
        }
        var clearing: [String] = []
        try querySession { row in
          if parts.contains(.window) {
            do {
              _ = try decodeWindow(row)
            } catch StoreError.damagedValue(_, let detail, _) {
              cleared.append(ClearedDamage(part: .window, path: location.path, detail: detail))
              clearing.append(
                "opened_at = NULL, session_ends_at = NULL, pause_ends_at = NULL, session_length = NULL, pause_length = NULL, tunnel = NULL"
              )
            }
          }
          if parts.contains(.dataCap) {
            do {
              _ = try decodeDataCap(row)
            } catch StoreError.damagedValue(_, let detail, _) {
              cleared.append(ClearedDamage(part: .dataCap, path: location.path, detail: detail))
              clearing.append("data_cap_bytes = NULL, data_cap_period = NULL, month_start_day = NULL")
            }
          }
        }
        if !clearing.isEmpty {
          try connection.query("UPDATE session SET \(clearing.joined(separator: ", ")) WHERE id = 1")
        }
        _ = try readSession()
        return cleared
      }
    }
  }

  /// What a session report reads of the database (`SessionView.report`), in one read
  /// transaction (the caller's, when it has one).
  package func storedSession() throws -> StoredSession {
    try reading {
      try connection.transaction(immediate: false) {
        StoredSession(
          record: try readSession(), trusted: try readTrusted(), lastStop: try stops(limit: 1).first,
          lastRefusal: try lastRefusal())
      }
    }
  }

  /// Stores `pair` as the last trusted time (an enforcer keeps its own in memory and writes it
  /// back when the database lets it).
  package func storeTrusted(_ pair: TrustedClock) throws {
    try keepingPublished { try writeTrusted(pair) }
  }

  private func writeTrusted(_ pair: TrustedClock) throws {
    try connection.query(
      "INSERT OR REPLACE INTO trusted_clock (id, wall, boottime, boot_id) VALUES (1, ?, ?, ?)",
      [.integer(pair.wall.nanoseconds), .integer(pair.boottime), .text(pair.bootID)])
  }
}

/// A part of the file that held a value no vpnstat writes, cleared by a writer about to write
/// it anew (`Store.clearDamaged`).
package struct ClearedDamage: Sendable {
  package enum Part: Sendable, Equatable {
    case trustedClock
    case window
    case dataCap
  }

  package var part: Part
  /// The database.
  package var path: String
  /// What was wrong, as `StoreError.damagedValue` said it.
  package var detail: String

  /// What the command says of it: what was wrong, and what replaces it.
  package var description: String {
    switch part {
    case .trustedClock:
      "\(path): the trusted clock's last reading was damaged (\(detail)); this command's reading replaces it"
    case .window: "\(path): the session window was damaged (\(detail)); it is cleared"
    case .dataCap: "\(path): the data cap was damaged (\(detail)); this command's replaces it"
    }
  }
}

/// The session as stored, with what a report shows beside it: the plan and window, the last
/// trusted clock reading (a report's "now" is never behind it), the last stop and refusal. Read
/// from the database (`Store.storedSession`) or from what the recorder published of it
/// (`PublishedState`).
package struct StoredSession: Hashable, Sendable {
  package var record: SessionRecord
  package var trusted: TrustedClock?
  package var lastStop: StopRecord?
  package var lastRefusal: Refusal?

  package init(record: SessionRecord, trusted: TrustedClock?, lastStop: StopRecord?, lastRefusal: Refusal?) {
    self.record = record
    self.trusted = trusted
    self.lastStop = lastStop
    self.lastRefusal = lastRefusal
  }

  /// The trusted "now" for `reading` (`TrustedClock.now`): what `Store.trustedNow` says without writing.
  package func trustedNow(_ reading: ClockReading) -> Timestamp { TrustedClock.now(reading, last: trusted) }
}
