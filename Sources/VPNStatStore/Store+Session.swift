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
    // A file older than schema 4 has no cap columns: it reads as "no cap".
    let capColumns = schema >= 4 ? "data_cap_bytes, data_cap_period, month_start_day" : "NULL, NULL, NULL"
    try connection.query(
      """
      SELECT plan, opened_at, session_ends_at, pause_ends_at, session_length, pause_length, tunnel,
        usage_rx_base, usage_tx_base, \(capColumns) FROM session WHERE id = 1
      """
    ) { row in
      record.plan = Plan(rawValue: row.text(0) ?? "") ?? .free
      if let opened = row.optionalInteger(1), let ends = row.optionalInteger(2), let pause = row.optionalInteger(3),
        let sessionLength = row.optionalInteger(4), let pauseLength = row.optionalInteger(5)
      {
        record.window = SessionWindow(
          openedAt: Timestamp(nanoseconds: opened), sessionEndsAt: Timestamp(nanoseconds: ends),
          pauseEndsAt: Timestamp(nanoseconds: pause),
          lengths: SessionLengths(session: .nanoseconds(sessionLength), pause: .nanoseconds(pauseLength)))
      }
      record.tunnel = row.isNull(6) ? nil : InterfaceName(bytes: row.blob(6))
      // The base's bytes are what a window's usage is measured from (packets are not kept).
      record.usageBase = TrafficCounts(rxBytes: row.unsigned(7), txBytes: row.unsigned(8))
      // A cap whose period another version wrote and this one does not know is no cap.
      if let limit = row.optionalInteger(9), limit > 0, let length = PeriodLength(rawValue: row.text(10) ?? "") {
        let day = Int(clamping: row.optionalInteger(11) ?? 1)
        record.dataCap = DataCap(limitBytes: UInt64(limit), period: UsagePeriod(length, monthStartDay: day))
      }
    }
    return record
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
    return try guarded {
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
  package func usage(since: Int64, of interfaceClass: InterfaceClass?, name: InterfaceName? = nil) throws
    -> TrafficCounts
  {
    try reading {
      var sum = TrafficCounts.zero
      try connection.query(
        """
        SELECT coalesce(sum(rx_bytes), 0), coalesce(sum(tx_bytes), 0), coalesce(sum(rx_packets), 0),
          coalesce(sum(tx_packets), 0)
        FROM buckets
        WHERE granularity = ?1 AND start >= ?2 AND (?3 IS NULL OR class = ?3) AND (?4 IS NULL OR name = ?4)
        """,
        [
          .integer(Int64(TrafficGranularity.day.rawValue)), .integer(since),
          interfaceClass.map { .text($0.rawValue) } ?? .null, name.map { .blob($0.bytes) } ?? .null,
        ]
      ) { row in sum = row.traffic(0) }
      return sum
    }
  }

  // MARK: - Stops

  /// Records `stop`, unless the same stop (the same instant, interface and reason) is recorded
  /// already: a stop kept in an enforcer's spool may be offered again after it was written.
  package func recordStop(_ stop: StopRecord) throws {
    guard !isReadOnly else { throw StoreError.notPermitted(path: location.path, detail: "no write access") }
    try guarded {
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
    try guarded { try insertRefusal(refusal) }
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
          at: Timestamp(nanoseconds: row.integer(0)),
          interface: row.isNull(1) ? nil : InterfaceName(bytes: row.blob(1)),
          by: Refusal.Path(rawValue: row.text(2) ?? "") ?? .gate,
          reason: Refusal.Reason(rawValue: row.text(3) ?? "") ?? .pause,
          until: row.optionalInteger(4).map { Timestamp(nanoseconds: $0) })
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
            at: Timestamp(nanoseconds: row.integer(0)),
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
    return try guarded {
      let now = TrustedClock.now(reading, last: try readTrusted())
      try writeTrusted(TrustedClock.after(reading, trusted: now))
      return now
    }
  }

  private func readTrusted() throws -> TrustedClock? {
    var last: TrustedClock?
    try connection.query("SELECT wall, boottime, boot_id FROM trusted_clock WHERE id = 1") { row in
      last = TrustedClock(
        wall: Timestamp(nanoseconds: row.integer(0)), boottime: row.integer(1), bootID: row.text(2) ?? "")
    }
    return last
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
    try guarded { try writeTrusted(pair) }
  }

  private func writeTrusted(_ pair: TrustedClock) throws {
    try connection.query(
      "INSERT OR REPLACE INTO trusted_clock (id, wall, boottime, boot_id) VALUES (1, ?, ?, ?)",
      [.integer(pair.wall.nanoseconds), .integer(pair.boottime), .text(pair.bootID)])
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
