import VPNStatKernel
import VPNStatModel
import VPNStatSystem

/// The enforcer's life as a process: the kernel's link notifications, the wall-clock alarm, a
/// periodic tick, the stop signals and the exits of the processes managers were found through,
/// each turned into an `Enforcer.Event`.
package enum EnforcerLoop {
  /// Runs until a stop signal. `alarm` must be the one the enforcer arms. The supervisor hears
  /// "ready" once the tunnel's state is taken (a window opened, the tunnel held down, or it is
  /// waited for), "alive" from this loop, and where the window stands after every event.
  package static func run(
    _ enforcer: inout Enforcer, alarm: WallClockDeadline, checkInterval: Duration = .seconds(5),
    supervisor: any ServiceSupervisor = Unsupervised()
  ) throws {
    let signals = try SignalChannel.stopping()
    // Subscribe before looking, so a change between the look and the subscription is not lost.
    let notifications = try LinkNotifications()
    let ticks = try IntervalTimer(interval: checkInterval)
    try enforcer.handle(.started)
    var said = enforcer.statusLine()
    supervisor.ready(status: said)
    var beat = WatchdogBeat(supervisor)
    while true {
      beat.turn(supervisor, monotonic: enforcer.clock.now().monotonic)
      let exits = enforcer.exitNotices
      let ready = try waitForReadable(
        [signals.descriptor, notifications.descriptor, alarm.descriptor, ticks.descriptor] + exits,
        timeout: beat.timeout(monotonic: enforcer.clock.now().monotonic))
      if ready.contains(signals.descriptor), !signals.received().isEmpty {
        supervisor.stopping()
        try enforcer.handle(.stop)
        return
      }
      defer {
        let line = enforcer.statusLine()
        if line != said {
          supervisor.status(line)
          said = line
        }
      }
      if ready.contains(notifications.descriptor) {
        // Batch by batch: an up is undone before the next receive (link first); in the pause,
        // on the notification's first bytes (`TakedownReflex`).
        while let (changes, overflowed) = notifications.next(seeing: { enforcer.reflexively(index: $0, flags: $1) }) {
          for change in changes { try enforcer.handle(.link(change)) }
          enforcer.settleReflexCuts()
          if overflowed {
            try enforcer.handle(.notificationsLost)
            break
          }
        }
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
