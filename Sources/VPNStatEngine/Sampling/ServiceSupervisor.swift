import VPNStatModel

/// The service manager that started this process (systemd), told how the work goes: that the
/// process holds what it was started for (readiness), that its loop still turns (the watchdog),
/// and where things stand in a line (`systemctl status` shows it). A process no one supervises
/// tells `Unsupervised`, which hears nothing.
package protocol ServiceSupervisor {
  /// How often the supervisor must hear `alive()` before it deems the process hung (nil: it
  /// does not watch). The loop that does the work says it, at twice that rate.
  var watchdogInterval: Duration? { get }
  /// The work is set up: startup is over, dependent units may start.
  func ready(status: String)
  /// Where things stand now, in a line.
  func status(_ text: String)
  /// The loop turned: from the loop itself, never from a timer that would outlive a hung loop.
  func alive()
  /// The process is stopping.
  func stopping()
}

/// No supervisor: a process started from a terminal, a script or a test.
package struct Unsupervised: ServiceSupervisor {
  package init() {}
  package var watchdogInterval: Duration? { nil }
  package func ready(status: String) {}
  package func status(_ text: String) {}
  package func alive() {}
  package func stopping() {}
}

/// When the loop must next say `alive()`, kept by the loop that does the work.
package struct WatchdogBeat {
  /// Half the supervisor's interval, as sd_watchdog_enabled(3) advises: a late wake-up still
  /// lands within it.
  package let period: Duration?
  private var due: Int64?

  package init(_ supervisor: any ServiceSupervisor) {
    period = supervisor.watchdogInterval.map { $0 / 2 }
  }

  /// How long the loop may wait for its next event before it must turn (nil: forever).
  package func timeout(monotonic now: Int64) -> Duration? {
    guard let period else { return nil }
    guard let due else { return .zero }
    return Duration(nanoseconds: min(max(0, due - now), period.nanoseconds))
  }

  /// Called on every turn of the loop: says `alive()` when due.
  package mutating func turn(_ supervisor: any ServiceSupervisor, monotonic now: Int64) {
    guard let period, now >= (due ?? now) else { return }
    supervisor.alive()
    due = now + period.nanoseconds
  }
}
