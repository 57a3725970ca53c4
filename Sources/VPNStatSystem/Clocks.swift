import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// Reading the kernel's clocks.
package enum SystemClock {
  /// Nanoseconds of `clock` (CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_MONOTONIC).
  package static func read(_ clock: clockid_t) -> Int64 {
    var spec = timespec()
    clock_gettime(clock, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
  }

  /// CLOCK_MONOTONIC in nanoseconds: for timeouts within one process.
  package static var monotonic: Int64 { read(CLOCK_MONOTONIC) }

  /// Sleeps the calling thread for `duration`, resuming after signals until the time is up.
  package static func sleep(for duration: Duration) {
    let nanos = max(0, duration.nanoseconds)
    var request = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
    var remaining = timespec()
    // Made again after a signal for what was left of it: the sleep is as long as asked.
    _ = try? Errno.retrying {
      defer { request = remaining }
      return nanosleep(&request, &remaining)
    }
  }
}

/// The kernel's clocks and `/proc/sys/kernel/random/boot_id`.
package struct SystemTimeSource: TimeSource {
  /// The boot id, or "" when it cannot be read.
  package let bootID: String
  package let bootIDProblem: String?

  package init(procRoot: String = "/proc") {
    let path = SystemPath(procRoot + "/sys/kernel/random/boot_id")
    do {
      let bytes = try SmallFile.read(path, limit: 64).trimmingASCIIWhitespace()
      // A boot id is a UUID; anything else is not evidence of a boot.
      if bytes.count == 36, bytes.allSatisfy({ $0 == 0x2D || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) })
      {
        bootID = String(decoding: bytes, as: UTF8.self)
        bootIDProblem = nil
      } else {
        bootID = ""
        bootIDProblem = "\(path) does not hold a boot id; telling boots apart by the clocks"
      }
    } catch {
      bootID = ""
      bootIDProblem = "cannot read \(path) (\(error)); telling boots apart by the clocks"
    }
  }

  package func now() -> ClockReading {
    ClockReading(
      wall: Timestamp(nanoseconds: SystemClock.read(CLOCK_REALTIME)), boottime: SystemClock.read(CLOCK_BOOTTIME),
      monotonic: SystemClock.read(CLOCK_MONOTONIC), bootID: bootID)
  }

  package func sleep(for duration: Duration) { SystemClock.sleep(for: duration) }
}

/// The machine's local calendar (the C library's time zone: `TZ`, `/etc/localtime`).
package struct SystemCalendar: LocalCalendar {
  package init() {}

  package func civil(_ seconds: Int64) -> CivilTime {
    var t = time_t(seconds)
    var parts = tm()
    localtime_r(&t, &parts)
    return CivilTime(
      year: Int64(parts.tm_year) + 1900, month: Int64(parts.tm_mon) + 1, day: Int64(parts.tm_mday),
      hour: Int64(parts.tm_hour), minute: Int64(parts.tm_min), second: Int64(parts.tm_sec), weekday: Int(parts.tm_wday))
  }

  package func instant(_ civil: CivilTime) -> Int64 {
    var parts = tm()
    parts.tm_year = Int32(clamping: civil.year - 1900)
    parts.tm_mon = Int32(clamping: civil.month - 1)
    parts.tm_mday = Int32(clamping: civil.day)
    parts.tm_hour = Int32(clamping: civil.hour)
    parts.tm_min = Int32(clamping: civil.minute)
    parts.tm_sec = Int32(clamping: civil.second)
    parts.tm_isdst = -1
    return Int64(mktime(&parts))
  }
}
