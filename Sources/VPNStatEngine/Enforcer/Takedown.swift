import VPNStatKernel
import VPNStatModel

/// How the enforcer takes one device down, whatever the reason: the action's control for it (its
/// manager, chosen now), then the kernel's word and the manager's (`StopConfirmation`), then
/// link-down where the control did not do it, each failure said and kept for the stop record. An
/// action that failed once is not given the time to fail again in the pause.
struct Takedown {
  enum Outcome {
    /// The device was gone before anything was asked of it.
    case vanished
    /// Down or gone. `stoppedBy`: the control that did it (which may hold its manager off for
    /// the pause); nil when link-down did.
    case down(stoppedBy: (any ManagerControl)?)
    /// Still up: the control and link-down both failed.
    case stillUp
  }

  let action: any DisconnectAction
  let links: any LinkTable
  let clock: any TimeSource
  let log: any EventLog
  /// Set when the last disconnect's action left the link up: during the pause the next up goes
  /// straight to link-down rather than waiting for the action to fail again.
  private(set) var actionFailed = false

  /// Takes `device` (ifindex `index`) down for `reason`, adding to `details` what the stop record
  /// is to say.
  mutating func takeDown(
    _ index: Int32, _ device: Enforcer.Device, reason: StopReason, details: inout [String]
  ) -> Outcome {
    // In the pause, an action that already failed once is not given the time to fail again.
    let skipAction = actionFailed && reason != .freeLimit
    var failure: String?
    var control: (any ManagerControl)?
    if !skipAction {
      guard let link = try? links.link(index: index) else { return .vanished }
      let chosen = action.control(for: link)
      control = chosen
      if case .failed(let why) = chosen.stop(device.name, reason: reason) { failure = why }
    }
    // A manager may take a second to let go (NetworkManager's OpenVPN tells its peer first).
    let timeout: Duration = control?.manager != nil ? .seconds(5) : .seconds(2)
    let down = control != nil && failure == nil && confirmation.deviceDown(index, timeout: timeout)
    if let control, down {
      actionFailed = false
      if control.manager != nil { details.append("stopped through \(control.label)") }
      if !confirmation.managerStopped(control, device.name, index: index, timeout: timeout) {
        let text = "\(control.label): \(device.name.terminalText) is down, but its manager does not say it stopped"
        log.event(text)
        details.append(text)
      }
      return .down(stoppedBy: control)
    }
    if let control {
      let text = "\(control.label) left \(device.name.terminalText) up" + (failure.map { " (\($0))" } ?? "")
      log.event(text + "; falling back to link-down")
      details.append(text + "; fell back to link-down")
      actionFailed = true
    }
    _ = DirectLinkControl(links: links).stop(device.name, reason: reason)
    guard confirmation.deviceDown(index, timeout: .seconds(2)) else {
      if details.isEmpty { details.append("link-down") }
      details[details.count - 1] += ", which failed too"
      return .stillUp
    }
    return .down(stoppedBy: nil)
  }

  /// The kernel's word, then the manager's: the one way a stop is confirmed.
  private var confirmation: StopConfirmation { StopConfirmation(links: links, clock: clock) }
}
