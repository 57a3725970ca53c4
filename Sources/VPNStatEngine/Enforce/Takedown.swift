import VPNStatKernel
import VPNStatModel

/// How the enforcer takes one device down, whatever the reason, in two steps.
///
/// First the cut (`cut`): one request to the kernel — the link's up flag cleared, or the link
/// deleted for `--action delete` — the instant the deadline or an up in the pause is seen, before
/// anything is asked of anyone: no walk of /proc, no file, no manager. However many processes
/// run, that is what the tunnel waits for.
///
/// Then, every link cut, the rest (`finish`): the kernel's word; the manager's own way of
/// stopping, which works on a link already down (`wg-quick down` removes its rules and the
/// device, `nmcli connection down` deactivates, `systemctl stop` runs the unit's ExecStop,
/// OpenVPN takes `signal SIGTERM`) through the manager learned by issue 19's rules
/// (`ManagerTable`) — while what it knows is current, else found again now; then the manager's
/// word (`StopConfirmation`). Each failure said and kept for the stop record. A manager's stop
/// that failed once is not run again in the pause.
struct Takedown {
  enum Outcome {
    /// The device was gone, nothing left to stop.
    case vanished
    /// Down or gone. `stoppedBy`: the control whose stop followed the cut (which may hold its
    /// manager off for the pause); nil when the kernel alone did it.
    case down(stoppedBy: (any TunnelControl)?)
    /// Still up: the cut and the control both failed.
    case stillUp
  }

  let action: any DisconnectAction
  let links: any LinkTable
  let clock: any TimeSource
  let log: any EventLog
  /// Set when the last disconnect's control failed: during the pause the next up is only cut,
  /// rather than running the control to fail again.
  private(set) var actionFailed = false

  /// The one request, at once. Nil when the kernel took it; else what it said.
  func cut(_ index: Int32) -> String? {
    do {
      if action.deletesLink { try links.delete(index: index) } else { try links.setDown(index: index) }
      return nil
    } catch {
      return "\(action.deletesLink ? "delete" : "link-down"): \(error)"
    }
  }

  /// After the cut of device `device` (ifindex `index`; `refused`: what the kernel said to it):
  /// the kernel's word, then the manager's stop and word, adding to `details` what the stop record
  /// is to say. The manager's stop acts on what `managers` knows while that is current, else on
  /// what it finds now; what it learned before is used when the device is gone.
  mutating func finish(
    _ index: Int32, _ device: Enforcer.Device, refused: String?, reason: StopReason, managers: inout ManagerTable,
    details: inout [String]
  ) -> Outcome {
    let name = device.name.terminalText
    let cutDown = refused == nil && confirmation.deviceDown(index, timeout: .seconds(2))
    // In the pause, a control that already failed once is not given the time to fail again.
    let skipAction = actionFailed && reason != .freeLimit
    var control: (any TunnelControl)?
    if !skipAction {
      if let link = try? links.link(index: index) {
        let now = clock.now().monotonic
        if let current = managers.current(link, monotonic: now) {
          control = current
        } else {
          let learned = managers.known(index)
          control = managers.learn(link, monotonic: now)
          if let learned, let control, learned.label != control.label {
            log.event(
              "\(name): its manager was \(learned.label) before the deadline, and is \(control.label) now: using the latter"
            )
          }
        }
      } else {
        control = managers.known(index)
      }
    }
    guard let control, !(control is DirectLinkControl) else {
      // The kernel alone. A device gone (also while the request was on its way) is not up.
      guard (try? links.link(index: index)) != nil else {
        return action.deletesLink && refused == nil ? .down(stoppedBy: nil) : .vanished
      }
      if cutDown { return .down(stoppedBy: nil) }
      details.append((refused ?? "\(action.label): \(name) stayed up") + ", which failed")
      return .stillUp
    }
    var failure: String?
    if case .failed(let why) = control.stop(device.name, reason: reason) { failure = why }
    // A manager may take a second to let go (NetworkManager's OpenVPN tells its peer first).
    let timeout: Duration = control.manager != nil ? .seconds(5) : .seconds(2)
    let down = cutDown || (failure == nil && confirmation.deviceDown(index, timeout: timeout))
    if failure == nil, down {
      actionFailed = false
      if control.manager != nil {
        details.append("stopped through \(control.label)")
        log.event(
          "\(name): "
            + (cutDown ? "down at once (link-down, confirmed by the kernel), then " : "link-down refused, ")
            + "stopped through \(control.label)")
      }
      if !confirmation.managerStopped(control, device.name, index: index, timeout: timeout) {
        let text = "\(control.label): \(name) is down, but its manager does not say it stopped"
        log.event(text)
        details.append(text)
      }
      return .down(stoppedBy: control)
    }
    actionFailed = true
    let text = "\(control.label) " + (failure.map { "failed (\($0))" } ?? "left \(name) up")
    if down {
      log.event(
        LoggedEvent(
          "\(name) is down (link-down, confirmed by the kernel), but \(text)", kind: .stopFailed,
          interface: device.name, reason: reason.rawValue))
      details.append("down by link-down; \(text)")
      return .down(stoppedBy: nil)
    }
    details.append((refused ?? "link-down: \(name) stayed up") + "; \(text), which failed too")
    return .stillUp
  }

  /// The kernel's word, then the manager's: the one way a stop is confirmed.
  private var confirmation: StopConfirmation { StopConfirmation(links: links, clock: clock) }
}
