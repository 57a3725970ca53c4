import VPNStatModel

/// The enforcer's alarm, armed for an instant of trusted time: the wall-clock alarm
/// (`DeadlineAlarm`) is set where that instant falls on the wall clock now — earlier when the
/// wall clock was set back, since trusted time then runs ahead of it — and set again when the
/// wall clock moves.
struct TrustedAlarm {
  let alarm: any DeadlineAlarm
  /// The deadline armed, in trusted time, if any.
  private(set) var armed: Timestamp?
  /// Where that deadline fell on the wall clock when the alarm was set.
  private(set) var armedWall: Timestamp?

  /// Arms for `target` (nil disarms), which falls at `wall` on the wall clock now.
  mutating func arm(_ target: Timestamp?, wall: Timestamp?) throws {
    armed = target
    armedWall = wall
    try alarm.arm(at: wall)
  }

  /// Whether the armed deadline, falling at `wall` on the wall clock now, fell elsewhere when
  /// the alarm was set: the wall clock was set since.
  func moved(_ wall: Timestamp) -> Bool { armedWall != wall }

  /// Where the trusted `instant` falls on the wall clock, when trusted time reads `trustedNow`
  /// and the wall clock `wallNow`.
  static func wall(of instant: Timestamp, trustedNow: Timestamp, wallNow: Timestamp) -> Timestamp {
    instant - (trustedNow - wallNow)
  }
}
