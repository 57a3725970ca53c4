import VPNStatModel

/// An up in the pause, answered before it comes. While the session held says the pause runs,
/// any followed device that comes up goes down, so the loop cuts it on the notification's first
/// bytes (`LinkNotifications.next(seeing:)`) — before the batch is parsed, the sample advanced or
/// the event handled, which took some 13,000 instructions over two hundred functions, cold after
/// the pause's sleep (50–100 µs here against the C reactor's 6). The handling that follows decides
/// again, by the same rule, and finishes the stop (the kernel's word, the manager, the record)
/// without a second request.
///
/// Prepared after each event from what that event left — also in the window, for the pause to
/// come: the deadline's own down is news too late for it — it holds while nothing was written to
/// the database since (the freshness check comes first, as on the normal path) and only within
/// the pause, on CLOCK_BOOTTIME, which neither a suspend nor a set wall clock moves back.
struct TakedownReflex: Equatable {
  /// The followed devices, by ifindex.
  var indices: [Int32]
  /// CLOCK_BOOTTIME nanoseconds: from when the pause runs, and from when it may be over.
  var from: Int64
  var until: Int64

  /// Whether it holds at CLOCK_BOOTTIME `boottime`.
  func holds(at boottime: Int64) -> Bool { from <= boottime && boottime < until }

  /// The reflex for the session `record` at `reading` (trusted time `now`) when `rules` say an up
  /// in the pause, now or after this window's deadline, is the pause's to undo; nil otherwise
  /// (the up is then decided when it comes).
  static func prepared(
    _ rules: WindowGuard, _ record: SessionRecord?, capReached: Bool, devices: some Collection<Int32>,
    reading: ClockReading, now: Timestamp
  ) -> TakedownReflex? {
    // The pause's first instant: at the deadline itself the stop is the limit's, not the pause's.
    let start = record?.window.map { max(now, $0.sessionEndsAt + .nanoseconds(1)) } ?? now
    guard !devices.isEmpty, case .disconnect(.pause) = rules.tunnelUp(record, capReached: capReached, at: start),
      let pause = rules.pause(record, at: start)
    else { return nil }
    return TakedownReflex(
      indices: Array(devices), from: reading.boottime + (start - now).nanoseconds,
      until: reading.boottime + (pause.pauseEndsAt - now).nanoseconds)
  }
}
