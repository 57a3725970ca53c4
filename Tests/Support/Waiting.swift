import Foundation

/// Polls until `condition` holds; returns when it first did, or nil after `timeout` seconds. The
/// condition is tried at least once, also when the caller was descheduled past the deadline (a
/// loaded machine): a state that holds is never reported as not reached. The one way tests wait
/// for a state; a timeout only bounds how long a test waits for one that never comes, so make it
/// generous — it costs nothing when the state comes. `every`: how often it is tried.
func waitUntil(timeout: TimeInterval, every interval: TimeInterval = 0.01, _ condition: () throws -> Bool) rethrows
  -> Date?
{
  let deadline = Date().addingTimeInterval(timeout)
  repeat {
    if try condition() { return Date() }
    usleep(UInt32(interval * 1_000_000))
  } while Date() < deadline
  return try condition() ? Date() : nil
}
