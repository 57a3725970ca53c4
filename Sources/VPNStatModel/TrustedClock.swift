/// The last (wall, boottime) pair vpnstat trusted, kept in the store. Within one boot, "now" never
/// runs behind that wall time plus the boottime elapsed since, so setting the clock back cannot
/// extend a window; a clock set forward is simply believed.
public struct TrustedClock: Hashable, Sendable {
  public var wall: Timestamp
  public var boottime: Int64
  public var bootID: String

  public init(wall: Timestamp, boottime: Int64, bootID: String) {
    self.wall = wall
    self.boottime = boottime
    self.bootID = bootID
  }

  /// The trusted "now" for `reading`, given the last trusted pair (if any from this boot). Without
  /// boot ids, uptime that went forward counts as the same boot: after a reboot that assumption
  /// only gives a floor below the true time, which the wall clock then exceeds.
  public static func now(_ reading: ClockReading, last: TrustedClock?) -> Timestamp {
    guard let last, reading.boottime >= last.boottime else { return reading.wall }
    if let lastID = BootIdentity.known(last.bootID), let id = BootIdentity.known(reading.bootID), lastID != id {
      return reading.wall
    }
    let floor = last.wall + .nanoseconds(reading.boottime - last.boottime)
    return max(reading.wall, floor)
  }

  /// The pair to store after trusting `now` at `reading`.
  public static func after(_ reading: ClockReading, trusted now: Timestamp) -> TrustedClock {
    TrustedClock(wall: now, boottime: reading.boottime, bootID: reading.bootID)
  }
}
