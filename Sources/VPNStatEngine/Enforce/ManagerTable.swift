import VPNStatKernel
import VPNStatModel
import VPNStatSystem

/// Who manages each device under the limit, learned while nothing waits on it and kept current,
/// so that no deadline and no undo in the pause ever waits for a /proc walk or a manager's answer:
/// those take the link down first (`Takedown.cut`), and the manager's own stop comes after.
///
/// Learned when a followed device is up inside a window with its deadline far enough away
/// (`learningMargin`): when it is not known, and once more in the `refreshLead` before that
/// margin, so the deadline finds it current. Found again after a link-down when what is known is
/// not current (the check by issue 19's rules, `ManagerAction`, that the stop acts on).
/// Forgotten when the device goes away or is renamed (a new ifindex is a new device), and when the
/// process the manager was found through exits: its pidfd is in the loop's one wait
/// (`exitNotices`), so the table never looks in /proc to stay true.
///
/// A look walks /proc: some 0.1 s at 1000 processes, on the loop's only thread, during which an
/// up waits. So a link-down — the deadline's, and every up's in the pause — acts on what was
/// found while it is `current`, and looks only when it is not.
struct ManagerTable {
  /// What is known of one device.
  struct Entry {
    var control: any TunnelControl
    /// Readable once the process the control was found through (the tun's holder) exits.
    var exitNotice: FileDescriptor?
    /// The device's carrier changes when this was learned: a tun's holders coming or all going
    /// move it.
    var carrierChanges: UInt32?
    /// CLOCK_MONOTONIC when this was learned.
    var learnedAt: Int64
  }

  /// A deadline closer than this is not delayed by learning: what is not known by then is
  /// found after the link is down. A manager's answer may take seconds (nmcli, systemctl).
  static let learningMargin: Duration = .seconds(30)

  /// How long before the learning margin a device known from earlier is looked at again, so
  /// that what its deadline acts on is at most `learningMargin + refreshLead` and a tick old.
  static let refreshLead: Duration = .seconds(30)

  /// How long what was learned stands with nothing said against it: what no notification tells
  /// (a manager's own state, a second queue of a multi-queue tun) is looked at again at most
  /// this long after, however often the device is raised in the pause.
  static let trustedFor: Duration = .seconds(90)

  let action: any DisconnectAction
  let exits: any ProcessExitWatching
  private(set) var entries: [Int32: Entry] = [:]

  init(action: any DisconnectAction, exits: any ProcessExitWatching) {
    self.action = action
    self.exits = exits
  }

  /// The manager learned for the device, if any.
  func known(_ index: Int32) -> (any TunnelControl)? { entries[index]?.control }

  /// What was learned of `link` if nothing says it changed since: the same device (a rename or
  /// its end forgets it), learned less than `trustedFor` ago (`monotonic` is now), no holder
  /// came or all went (the carrier changes), and the process it was found through still runs.
  func current(_ link: LinkRecord, monotonic: Int64) -> (any TunnelControl)? {
    guard let entry = entries[link.index], link.carrierChanges != nil, entry.carrierChanges == link.carrierChanges,
      monotonic - entry.learnedAt < Self.trustedFor.nanoseconds,
      !(entry.exitNotice.map(exits.hasExited) ?? false)
    else { return nil }
    return entry.control
  }

  /// Whether device `index`, up, is to be looked at now (`remaining`: the time to its deadline,
  /// already no closer than `learningMargin`; nil: none armed): when it is not known, or when
  /// the `refreshLead` before the margin has begun and it was learned before that.
  func wantsLook(_ index: Int32, untilDeadline remaining: Duration?, monotonic: Int64) -> Bool {
    guard let entry = entries[index] else { return true }
    guard let remaining else { return false }
    let age = Duration.nanoseconds(monotonic - entry.learnedAt)
    let lead = Self.learningMargin + Self.refreshLead
    return remaining <= lead && age + remaining > lead
  }

  /// Finds the manager of `link` now (for `--action auto`: a walk of /proc, the managers' own
  /// state) and keeps it. Only where nothing waits: never between an event and its link-down.
  @discardableResult
  mutating func learn(_ link: LinkRecord, monotonic: Int64) -> any TunnelControl {
    forget(link.index)
    let control = action.control(for: link)
    var notice = control.manager?.process.flatMap { exits.watch($0) }
    // A zombie can still be watched, and would wake the loop at once, forever.
    if let exited = notice, exits.hasExited(exited) {
      exits.close(exited)
      notice = nil
    }
    entries[link.index] = Entry(
      control: control, exitNotice: notice, carrierChanges: link.carrierChanges, learnedAt: monotonic)
    return control
  }

  /// The device went away, or is no longer what was learned (renamed).
  mutating func forget(_ index: Int32) {
    if let notice = entries[index]?.exitNotice { exits.close(notice) }
    entries[index] = nil
  }

  mutating func forgetAll() {
    for index in entries.keys { forget(index) }
  }

  /// The descriptors the loop waits on: each becomes readable when a process a manager was
  /// found through exits.
  var exitNotices: [FileDescriptor] { entries.values.compactMap(\.exitNotice) }

  /// Forgets what was learned through a process that exited since; returns those devices.
  mutating func forgetExited() -> [(index: Int32, control: any TunnelControl)] {
    let exited = entries.filter { $0.value.exitNotice.map(exits.hasExited) ?? false }
    for index in exited.keys { forget(index) }
    return exited.sorted { $0.key < $1.key }.map { ($0.key, $0.value.control) }
  }
}

/// How the enforcer learns that a process exited without looking in /proc: a descriptor that
/// becomes readable at its exit. A seam, so the enforcer's tests run without real processes.
package protocol ProcessExitWatching {
  /// A descriptor readable once `process` exits; nil when it cannot be watched (gone already,
  /// or its pid is another process's now).
  func watch(_ process: TunnelProcess) -> FileDescriptor?
  /// Whether the process `notice` watches has exited, without waiting.
  func hasExited(_ notice: FileDescriptor) -> Bool
  func close(_ notice: FileDescriptor)
}

/// Through pidfds (`ProcessTable.exitNotice`).
package struct PidfdExitWatching: ProcessExitWatching {
  package init() {}
  package func watch(_ process: TunnelProcess) -> FileDescriptor? {
    ProcessTable.exitNotice(of: process.pid, startTime: process.startTime)
  }
  package func hasExited(_ notice: FileDescriptor) -> Bool { ProcessTable.hasExited(notice) }
  package func close(_ notice: FileDescriptor) { notice.close() }
}
