import VPNStatKernel
import VPNStatModel
import VPNStatStore

/// `vpnstat disconnect`: stops one tunnel through its manager — the same `stop` the enforcer
/// uses, confirmed the same way (`StopConfirmation`: the kernel, then the manager's own state).
/// Unlike the enforcer it never falls back to link-down: a person asked this manager, and a
/// link taken down behind its back is the half-down state the managers exist to avoid (wg-quick's
/// rules left steering traffic outside the tunnel). What it did is a report; recording the stop
/// is the caller's, after it.
package struct TunnelDisconnect {
  let target: TunnelTarget
  let name: String
  let links: any LinkTable
  let clock: any TimeSource
  /// How long the kernel and the manager may take to confirm, once the manager returned.
  let timeout: Duration

  package init(
    _ target: TunnelTarget, name: String, links: any LinkTable, clock: any TimeSource, timeout: Duration
  ) {
    self.target = target
    self.name = name
    self.links = links
    self.clock = clock
    self.timeout = timeout
  }

  package func run() -> TunnelControlReport {
    let control = target.control
    let device = target.device ?? control.device()
    let tunnel = device ?? InterfaceName(parsingEscaped: name)
    var report = TunnelControlReport(
      command: .disconnect(recorded: false), name: name, manager: target.manager, device: device, timeout: timeout,
      outcome: .notConnected)
    let link = device.flatMap { try? links.link(named: $0) }
    let up = link?.attributes.isAdministrativelyUp ?? false
    if !up, control.isStopped(tunnel, deviceGone: link == nil) != false {
      report.detail = notConnected(device: device, exists: link != nil)
      return report
    }
    let start = clock.now()
    report.startedAt = start.wall
    if case .failed(let why) = control.stop(tunnel, reason: .user) {
      report.outcome = ManagerRefusal.isPermission(why) ? .notPermitted : .refused
      report.detail = why
      report.elapsed = .nanoseconds(clock.now().monotonic - start.monotonic)
      return report
    }
    report.acceptedAt = clock.now().wall
    let confirmation = StopConfirmation(links: links, clock: clock)
    let end = clock.now().monotonic + timeout.nanoseconds
    let remaining = { Duration.nanoseconds(max(0, end - clock.now().monotonic)) }
    let down = link.map { confirmation.deviceDown($0.index, timeout: remaining()) } ?? true
    let stopped = down && confirmation.managerStopped(control, tunnel, index: link?.index, timeout: remaining())
    let finished = clock.now()
    report.elapsed = .nanoseconds(finished.monotonic - start.monotonic)
    if down && stopped {
      report.outcome = .disconnected
      report.confirmedAt = finished.wall
      report.detail = "stopped through \(control.label)"
    } else {
      report.outcome = .stillUp
      report.detail =
        down
        ? "\(control.label): its manager does not say it stopped"
        : "\(control.label): \(tunnel.terminalText) is still up"
    }
    return report
  }

  private func notConnected(device: InterfaceName?, exists: Bool) -> String {
    guard let device else { return "\(target.control.label) says it is not running" }
    return exists ? "\(device.terminalText) is down" : "\(device.terminalText) does not exist"
  }
}

extension TunnelDisconnect {
  /// After a confirmed stop the database hears of it, with reason `user`: disconnected first, so
  /// a database that is locked or not writable never holds the stop back, and its failure does
  /// not undo it. Sets the report's `recorded`; returns why the stop was not recorded, if it was
  /// not (nil also when there was no stop to record).
  package static func recordStop(
    _ report: inout TunnelControlReport, at location: StoreLocation, calendar: any LocalCalendar,
    clock: any TimeSource
  ) -> (any Error)? {
    guard report.outcome == .disconnected else { return nil }
    do {
      guard let store = try Store.open(location, intent: .write, busyTimeoutMilliseconds: 2000, calendar: calendar)
      else { throw StoreError.unavailable(path: location.path, detail: "not created") }
      let now = try store.trustedNow(clock.now())
      try store.recordStop(
        StopRecord(
          at: now, interface: report.device, reason: .user,
          detail: "vpnstat disconnect: " + (report.detail ?? "stopped")
        ))
      report.command = .disconnect(recorded: true)
      return nil
    } catch {
      return error
    }
  }
}
