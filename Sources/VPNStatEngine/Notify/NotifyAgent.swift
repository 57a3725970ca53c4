import VPNStatDesktop
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// `vpnstat notify`, the per-user agent of a desktop session: a state machine that takes what
/// the database says, one look at a time, decides with `SessionNotices` what to tell the person,
/// and shows it through `DesktopNotifications` — each notice in the place of the last of its
/// slot, so they replace each other instead of piling up. Its loop is `NotifyLoop`.
package struct NotifyAgent {
  let notifications: any DesktopNotifications
  let settings: NoticeSettings
  let options: DisplayOptions
  /// What the last look saw (nil before the first).
  private(set) var previous: NoticeObservation?
  /// The notification shown last in each slot: the one the next of that slot replaces.
  private(set) var shown: [Notice.Slot: DesktopNotification.ID] = [:]

  package init(notifications: any DesktopNotifications, settings: NoticeSettings, options: DisplayOptions) {
    self.notifications = notifications
    self.settings = settings
    self.options = options
  }

  /// Takes one look (`observation`, read at `now`), shows what is due, and returns when to look
  /// again even if the database does not change (nil: only when it does).
  package mutating func observe(_ observation: NoticeObservation, now: Timestamp) throws(NotificationFailure)
    -> Timestamp?
  {
    let decision = SessionNotices.decide(previous: previous, current: observation, now: now, settings: settings)
    previous = observation
    for notice in decision.notices {
      var notification = NoticeText.notification(notice, at: now, options: options)
      notification.replaces = shown[notice.slot]
      shown[notice.slot] = try notifications.notify(notification)
    }
    return decision.wakeAt
  }

  /// What the database at `location` says at `reading`, as every reader reads it (read-only,
  /// never created): the session, the last stop and refusal, the data cap against the traffic
  /// the writers booked. A database that does not exist yet says nothing has happened.
  package static func look(_ location: StoreLocation, reading: ClockReading, calendar: any LocalCalendar) throws
    -> NoticeObservation
  {
    guard let store = try Store.open(location, intent: .read, busyTimeoutMilliseconds: 1000, calendar: calendar)
    else { return NoticeObservation(at: reading.wall) }
    let stored = try store.storedSession()
    // What an enforcer could not write yet counts as written (the spool beside the database).
    let session = SpooledSession(record: stored.record, lastStop: stored.lastStop, lastRefusal: stored.lastRefusal)
      .applying(EnforcerSpool.waiting(for: location).records)
    let record = session.record
    let now = stored.trustedNow(reading)
    return NoticeObservation(
      at: now, plan: record.plan, window: record.window, tunnel: record.tunnel, lastStop: session.lastStop,
      lastRefusal: session.lastRefusal,
      dataCap: try record.dataCap.map { try PeriodUsage.status(of: $0, store, at: now) })
  }
}

/// The loop of `vpnstat notify`: it looks when the database or its `-wal` changes (inotify) and
/// when the one alarm armed for the next deadline fires (a wall-clock timer, which a change of
/// the clock wakes too while a deadline is ahead); in between it sleeps in one wait. No polling:
/// idle, it costs nothing.
package enum NotifyLoop {
  /// How long after the last change of a burst it looks once more. A writer's commit ends with
  /// the WAL index in the `-shm`, written through a mapping, which inotify does not see: a look
  /// woken by the commit's last write to the `-wal` may run before the index says the commit is
  /// there, and nothing else would wake it.
  package static let settle = Duration.milliseconds(150)

  /// Runs until a stop signal. A database that cannot be read is said once (through `warn`) and
  /// looked at again when it changes; a notification server that fails ends the loop (thrown).
  package static func run(
    _ agent: inout NotifyAgent, location: StoreLocation, clock: any TimeSource, calendar: any LocalCalendar,
    changes: FileChanges, alarm: WallClockDeadline, signals: SignalChannel, warn: (String) -> Void
  ) throws {
    var look = true
    var settling = false
    var problem: String?
    while true {
      if look {
        var wake: Timestamp?
        do {
          let observation = try NotifyAgent.look(location, reading: clock.now(), calendar: calendar)
          problem = nil
          wake = try agent.observe(observation, now: observation.at)
        } catch let failure as NotificationFailure {
          throw failure
        } catch {
          if "\(error)" != problem { warn("\(error); waiting for the database to change") }
          problem = "\(error)"
        }
        // With nothing due by time, a change of the clock changes nothing either.
        if let wake { try alarm.arm(at: wake) } else { try alarm.disarm() }
      }
      let ready = try waitForReadable(
        [signals.descriptor, changes.descriptor, alarm.descriptor], timeout: settling ? settle : nil)
      look = false
      if ready.isEmpty {
        // The burst of changes is over: the one look more that sees its last commit.
        settling = false
        look = true
      }
      if ready.contains(signals.descriptor), signals.received().contains(where: SignalChannel.isStop) { return }
      if ready.contains(alarm.descriptor), alarm.consume() != .none { look = true }
      if ready.contains(changes.descriptor), changes.consume() {
        look = true
        settling = true
      }
    }
  }
}
