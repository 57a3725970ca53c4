import VPNStatModel

/// Whether the machine slept between two events: CLOCK_BOOTTIME − CLOCK_MONOTONIC
/// (`ClockReading.suspended`) grows only while it sleeps. The wall-clock alarm cannot be trusted
/// to have fired for a deadline slept through, so a wake means a check.
struct SleepDetector {
  private var lastSuspended: Int64?

  /// Counts from `reading` on.
  mutating func start(_ reading: ClockReading) {
    lastSuspended = reading.suspended
  }

  /// How long the machine slept (nanoseconds) since the reading before `reading`, when it did —
  /// more than half a second; nil otherwise. Notes `reading`.
  mutating func slept(_ reading: ClockReading) -> Int64? {
    let suspended = reading.suspended
    defer { lastSuspended = suspended }
    guard let last = lastSuspended, suspended > last + 500_000_000 else { return nil }
    return suspended - last
  }
}
