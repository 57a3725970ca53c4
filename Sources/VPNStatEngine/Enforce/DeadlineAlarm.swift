import VPNStatModel
import VPNStatSystem

/// The enforcer's alarm on the wall clock: armed for one instant, or disarmed. The kernel's is a
/// `WallClockDeadline` (a timerfd); tests remember what was armed.
package protocol DeadlineAlarm {
  func arm(at deadline: Timestamp?) throws
}

extension WallClockDeadline: DeadlineAlarm {}
