import VPNStatKernel
import VPNStatModel
import VPNStatSystem

/// The enforcer's life as a process: the kernel's link notifications, the wall-clock alarm, a
/// periodic tick, the stop signals and the exits of the processes managers were found through,
/// each turned into an `Enforcer.Event`.
package enum EnforcerLoop {
  /// Runs until a stop signal. `alarm` must be the one the enforcer arms.
  package static func run(_ enforcer: inout Enforcer, alarm: WallClockDeadline, checkInterval: Duration = .seconds(5))
    throws
  {
    let signals = try SignalChannel.stopping()
    // Subscribe before looking, so a change between the look and the subscription is not lost.
    let notifications = try LinkNotifications()
    let ticks = try IntervalTimer(interval: checkInterval)
    try enforcer.handle(.started)
    while true {
      let exits = enforcer.exitNotices
      let ready = try waitForReadable(
        [signals.descriptor, notifications.descriptor, alarm.descriptor, ticks.descriptor] + exits, timeout: nil)
      if ready.contains(signals.descriptor), !signals.received().isEmpty {
        try enforcer.handle(.stop)
        return
      }
      if ready.contains(notifications.descriptor) {
        let (changes, overflowed) = notifications.drain()
        for change in changes { try enforcer.handle(.link(change)) }
        if overflowed { try enforcer.handle(.notificationsLost) }
      }
      if ready.contains(alarm.descriptor) {
        switch alarm.consume() {
        case .expired, .clockChanged: try enforcer.handle(.alarm)
        case .none: break
        }
      }
      if ready.contains(ticks.descriptor), ticks.acknowledge() > 0 { try enforcer.handle(.tick) }
      // Last: a manager's exit is news for the next deadline, never for this instant.
      if ready.contains(where: exits.contains) { try enforcer.handle(.managerExited) }
    }
  }
}
