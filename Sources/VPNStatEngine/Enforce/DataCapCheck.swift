import VPNStatModel
import VPNStatRender

/// The data cap as the enforcer checks it, after each sample and on every up: the cap against
/// its period's traffic, from the daily buckets and what the ledger this enforcer keeps booked
/// since its last checkpoint (its buckets are saved only every save interval); when the database
/// does not answer, from the usage last read, while its period lasts.
struct DataCapCheck {
  /// The calendar the cap's periods are in.
  let calendar: any LocalCalendar
  /// The cap against its period's traffic as last read; kept when the database does not answer.
  private(set) var status: DataCapStatus?

  init(calendar: any LocalCalendar) {
    self.calendar = calendar
  }

  /// Whether `cap` (the session's; nil: none) is reached at `now`.
  mutating func reached(
    _ cap: DataCap?, keeper: LedgerKeeper?, at now: Timestamp, outage: inout DatabaseOutage
  ) -> Bool {
    guard let cap else {
      status = nil
      return false
    }
    do {
      if let keeper { status = try PeriodUsage.status(of: cap, keeper, at: now) }
    } catch {
      outage.failed(error)
    }
    guard let known = status, now < known.periodEnd else { return false }
    status = cap.status(used: known.used, at: now, in: calendar)
    return status?.reached == true
  }

  /// "data cap reached: ≈ 80.0 MB of 80.0 MB this day (100 %)": why the enforcer disconnected, in
  /// the units the cap was given in (as every other output says it).
  var reachedText: String {
    guard let status else { return "data cap reached" }
    return "data cap reached: " + DataCapText.usage(status, options: DisplayOptions(calendar: calendar))
  }
}
