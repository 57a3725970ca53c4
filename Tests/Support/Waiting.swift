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

/// Whether `condition` holds throughout the next `duration` seconds, tried every `interval`: for
/// what must not happen (a tunnel brought back in the pause, a save before its interval). Returns
/// as soon as it fails, so a broken rule fails the test at once rather than after the period.
func holdsThroughout(_ duration: TimeInterval, every interval: TimeInterval = 0.02, _ condition: () throws -> Bool)
  rethrows -> Bool
{
  let end = Date().addingTimeInterval(duration)
  repeat {
    if try !condition() { return false }
    usleep(UInt32(interval * 1_000_000))
  } while Date() < end
  return try condition()
}

/// The value `read` gives once it stops changing: the same across `quiet` seconds (e.g. a
/// device's counters once the kernel has counted the bytes still in flight after a sender
/// returned). After `timeout` seconds, the last value read.
func settled<Value: Equatable>(
  timeout: TimeInterval = 10, quiet: TimeInterval = 0.05, _ read: () throws -> Value
) rethrows -> Value {
  let deadline = Date().addingTimeInterval(timeout)
  var last = try read()
  var since = Date()
  while Date() < deadline {
    usleep(10_000)
    let now = try read()
    if now != last {
      last = now
      since = Date()
    } else if Date().timeIntervalSince(since) >= quiet {
      return now
    }
  }
  return last
}
