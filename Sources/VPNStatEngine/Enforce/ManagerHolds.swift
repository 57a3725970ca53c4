import VPNStatModel

/// What the enforcer holds of the tunnel's manager for the pause (NetworkManager's autoconnect,
/// so it cannot bring the connection back by itself), and the presence file that says so: every
/// reader sees that an enforcer runs and how it disconnects, and a successor after a crash finds
/// what to give back. Given back when connecting is allowed again, or when the enforcer stops.
struct ManagerHolds {
  /// Where this enforcer says it runs (nil: it says nothing, as in most tests).
  let file: EnforcerPresenceFile?
  let release: any HoldRelease
  /// This process, as the presence names it.
  let process: ProcessStamp
  let log: any EventLog
  private(set) var held: [ManagerHold] = []
  private var presence: EnforcerPresence?

  init(file: EnforcerPresenceFile?, release: any HoldRelease, process: ProcessStamp, log: any EventLog) {
    self.file = file
    self.release = release
    self.process = process
    self.log = log
  }

  /// Says where everyone can see it that this enforcer holds `tunnel` (disconnecting with
  /// `action`, looking for wg-quick configurations in `wgQuickDirectories`, opening windows of
  /// `lengths`, since `since`), and takes over what a predecessor that died (kill -9, a crash)
  /// still held of the manager.
  mutating func announce(
    tunnel: InterfaceName, action: String, wgQuickDirectories: [String] = [], lengths: SessionLengths,
    since: Timestamp
  ) {
    guard let file else { return }
    if let previous = file.read(), !previous.holds.isEmpty, previous.pid != process.pid {
      held = previous.holds
      log.event("taking over what the previous enforcer (pid \(previous.pid)) held: \(Self.describe(held))")
    }
    presence = EnforcerPresence(
      pid: process.pid, startTime: process.startTime, since: since, action: action, tunnel: tunnel, holds: held,
      lengths: lengths, wgQuickDirectories: wgQuickDirectories)
    writePresence()
  }

  /// Holds `control`'s manager off for the pause, once per connection, and says so where a
  /// successor finds it.
  mutating func hold(_ control: any TunnelControl) {
    if let id = control.manager?.id, held.contains(where: { $0.id == id }) { return }
    guard let hold = control.holdForPause() else { return }
    held.append(hold)
    log.event("holding \(Self.describe([hold])) off until the pause ends")
    writePresence()
  }

  /// Gives back everything held. What a manager refuses stays held, to be tried again — unless
  /// `all`: the enforcer stops, and nobody would.
  mutating func giveBack(all: Bool) {
    var kept: [ManagerHold] = []
    for hold in held {
      if release.release(hold) {
        log.event("gave back \(Self.describe([hold])) (\(hold.restore))")
      } else {
        log.event("could not give back \(Self.describe([hold])) (\(hold.setting) \(hold.restore)): will try again")
        kept.append(hold)
      }
    }
    held = all ? [] : kept
    writePresence()
  }

  /// The enforcer stops: it no longer says it runs.
  func withdraw() {
    file?.remove()
  }

  private mutating func writePresence() {
    guard let file, var current = presence else { return }
    current.holds = held
    presence = current
    do {
      try file.write(current)
    } catch {
      log.event("cannot say that this enforcer runs (\(error)): `vpnstat session` will not show it")
    }
  }

  static func describe(_ holds: [ManagerHold]) -> String {
    holds.map { "\($0.kind.rawValue) \(TerminalText.sanitize($0.id))'s \($0.setting)" }.joined(separator: ", ")
  }
}
