import VPNStatModel
import VPNStatStore

/// The session as the enforcer last knew it: the record read from the database (or changed here
/// and not yet written) and the last trusted clock pair. Every decision is made from it, so none
/// waits for the database; it is refreshed whenever the database answers.
struct SessionMemory {
  /// The session window and plan; nil until read once.
  private(set) var record: SessionRecord?
  /// The last trusted clock pair: the stored one or a later one of ours.
  private(set) var trusted: TrustedClock?

  /// "Now" that never runs behind the last trusted time of this boot, from memory and, when it
  /// was readable, the stored pair.
  mutating func now(_ reading: ClockReading) -> Timestamp {
    let now = TrustedClock.now(reading, last: trusted)
    trusted = TrustedClock.after(reading, trusted: now)
    return now
  }

  /// Reads the session and the trusted clock from `store`; on failure throws and keeps what
  /// memory holds. `pending`: a window opened here (or found in the spool) and not yet written
  /// counts as written — taken where the stored record would take it (`SessionRecord.adopting`),
  /// exactly as its write will.
  mutating func refresh(from store: Store, clock: any TimeSource, pending: PendingWrites.Window?) throws {
    let stored = try store.sessionRecord()
    let reading = clock.now()
    let storedNow = try store.trustedNow(reading, writing: false)
    record = pending.flatMap { stored.adopting($0.window, tunnel: $0.tunnel, usageBase: $0.usageBase) } ?? stored
    let now = max(TrustedClock.now(reading, last: trusted), storedNow)
    trusted = TrustedClock.after(reading, trusted: now)
  }

  /// Takes `record` as the session: a window opened here, or the record the database kept.
  mutating func adopt(_ record: SessionRecord) {
    self.record = record
  }
}
