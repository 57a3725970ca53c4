import VPNStatSystem

/// A process as a presence names it: its pid and its start time, which together tell it from a
/// later process given the same pid.
public struct ProcessStamp: Hashable, Sendable {
  public var pid: Int32
  /// Clock ticks after boot.
  public var startTime: UInt64?

  public init(pid: Int32, startTime: UInt64?) {
    self.pid = pid
    self.startTime = startTime
  }

  /// This process.
  public static var current: ProcessStamp {
    ProcessStamp(pid: ProcessTable.currentID, startTime: ProcessTable.startTime(of: ProcessTable.currentID))
  }
}
