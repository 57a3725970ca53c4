import VPNStatKernel
import VPNStatModel

/// How a stop is confirmed, for the enforcer's disconnects and `vpnstat disconnect` alike: the
/// kernel first (the device down or gone), then the manager's own state. Nothing a manager
/// answered to `stop` counts. The waiting goes through the clock, so a test's manual clock makes
/// it instant.
package struct StopConfirmation {
  let links: any LinkTable
  let clock: any TimeSource

  package init(links: any LinkTable, clock: any TimeSource) {
    self.links = links
    self.clock = clock
  }

  /// Whether the kernel says the device went down (or away) within `timeout`, asking every 5 ms.
  package func deviceDown(_ index: Int32, timeout: Duration) -> Bool {
    let end = clock.now().monotonic + timeout.nanoseconds
    while true {
      guard let link = try? links.link(index: index) else { return true }
      if !link.attributes.isAdministrativelyUp { return true }
      if clock.now().monotonic >= end { return false }
      clock.sleep(for: .milliseconds(5))
    }
  }

  /// Whether the manager says the tunnel stopped within `timeout` (asked every 100 ms); true
  /// when it has no say beyond the kernel's. `index`: the device, when there is one to ask the
  /// kernel about (nil: the manager is asked as if it were gone).
  package func managerStopped(
    _ control: any TunnelControl, _ name: InterfaceName, index: Int32?, timeout: Duration
  ) -> Bool {
    let end = clock.now().monotonic + timeout.nanoseconds
    while true {
      let gone = index.map { (try? links.link(index: $0)) == nil } ?? true
      guard let stopped = control.isStopped(name, deviceGone: gone) else { return true }
      if stopped { return true }
      if clock.now().monotonic >= end { return false }
      clock.sleep(for: .milliseconds(100))
    }
  }
}
