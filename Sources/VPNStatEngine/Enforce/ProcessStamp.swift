import VPNStatSystem

/// A process as a presence names it: its pid and its start time, which together tell it from a
/// later process given the same pid.
package struct ProcessStamp: Hashable, Sendable {
  package var pid: Int32
  /// Clock ticks after boot.
  package var startTime: UInt64?

  package init(pid: Int32, startTime: UInt64?) {
    self.pid = pid
    self.startTime = startTime
  }

  /// This process.
  package static var current: ProcessStamp {
    ProcessStamp(pid: ProcessTable.currentID, startTime: ProcessTable.startTime(of: ProcessTable.currentID))
  }
}
