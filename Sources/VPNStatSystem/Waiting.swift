import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A periodic timer on CLOCK_BOOTTIME as a pollable descriptor: it keeps running through
/// suspend, so the first tick after a resume comes at once instead of an interval later.
package final class IntervalTimer {
  package let descriptor: FileDescriptor

  package init(interval: Duration, clock: clockid_t = CLOCK_BOOTTIME) throws {
    let fd = try retryingInterrupts { timerfd_create(clock, Int32(TFD_CLOEXEC | TFD_NONBLOCK)) }
    descriptor = FileDescriptor(rawValue: fd)
    var spec = itimerspec(it_interval: timespec(interval), it_value: timespec(interval))
    guard timerfd_settime(fd, 0, &spec, nil) == 0 else {
      let error = Errno.current
      descriptor.close()
      throw error
    }
  }

  /// Consumes the expirations so far; returns how many (0 when none is pending).
  @discardableResult
  package func acknowledge() -> UInt64 {
    var count: UInt64 = 0
    let n = (try? Errno.retrying { read(descriptor.rawValue, &count, 8) }) ?? -1
    return n == 8 ? count : 0
  }

  deinit { descriptor.close() }
}

/// An absolute deadline on the wall clock (CLOCK_REALTIME timerfd with TFD_TIMER_ABSTIME and
/// TFD_TIMER_CANCEL_ON_SET): it fires at once after a resume that passed the deadline, and
/// reports a change of the wall clock as `clockChanged` so the caller can re-check.
///
/// With a `lead`, the timer wakes the process that much before the deadline and `consume` waits
/// out the rest on the CPU: a timer's wake-up of a sleeping process on an idle CPU of this VM took
/// 50–150 µs, which the enforcer's deadline paid before its request.
package final class WallClockDeadline {
  package let descriptor: FileDescriptor
  /// How long before the deadline the timer fires (zero: at it).
  let lead: Duration
  /// The deadline armed, CLOCK_REALTIME nanoseconds.
  private var target: Int64?

  package enum Event: Equatable {
    case none
    case expired
    case clockChanged
  }

  package init(waking lead: Duration = .zero) throws {
    let fd = try retryingInterrupts { timerfd_create(CLOCK_REALTIME, Int32(TFD_CLOEXEC | TFD_NONBLOCK)) }
    descriptor = FileDescriptor(rawValue: fd)
    self.lead = lead
  }

  /// Arms the timer for `deadline` (`lead` before it); nil disarms it.
  package func arm(at deadline: Timestamp?) throws {
    var spec = itimerspec()
    target = deadline?.nanoseconds
    if let deadline {
      // A zero it_value disarms, so a deadline at the epoch is nudged to 1 ns.
      let nanos = max(deadline.nanoseconds - lead.nanoseconds, 1)
      spec.it_value = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
    }
    let flags = Int32(TFD_TIMER_ABSTIME) | Int32(TFD_TIMER_CANCEL_ON_SET)
    try settime(flags, &spec)
  }

  /// `timerfd_settime`, once more after ECANCELED: after a step of the wall clock since the timer
  /// was last armed, Linux arms it all the same but fails the call (an enforcer in fresh-ci died
  /// of it in the pause, exit 74). The canceled mark is read away — with any expiry the new
  /// deadline already had — and the same absolute deadline set again, so a past one fires at once.
  private func settime(_ flags: Int32, _ spec: inout itimerspec) throws {
    if timerfd_settime(descriptor.rawValue, flags, &spec, nil) == 0 { return }
    guard errno == ECANCELED else { throw Errno.current }
    var count: UInt64 = 0
    // Only the read clears the mark; what it says (ECANCELED, or an expiry) is not needed.
    _ = try? Errno.retrying { read(descriptor.rawValue, &count, 8) }
    guard timerfd_settime(descriptor.rawValue, flags, &spec, nil) == 0 else { throw Errno.current }
  }

  /// Disarms the timer and stops following changes of the clock: a process with no deadline
  /// ahead (`vpnstat notify` between sessions) is not woken by every NTP step.
  package func disarm() throws {
    var spec = itimerspec()
    target = nil
    try settime(0, &spec)
  }

  /// Reads what happened since the last call. An expiry `lead` early is waited out on the CPU
  /// until the deadline; a wall clock that does not get there within the lead (it was set back
  /// meanwhile) is `clockChanged`.
  package func consume() -> Event {
    var count: UInt64 = 0
    do throws(Errno) {
      guard try Errno.retrying({ read(descriptor.rawValue, &count, 8) }) == 8 else { return .none }
    } catch {
      return error == .canceled ? .clockChanged : .none
    }
    if let target, lead > .zero {
      let giveUp = SystemClock.monotonic + 2 * lead.nanoseconds
      while SystemClock.read(CLOCK_REALTIME) < target {
        if SystemClock.monotonic > giveUp { return .clockChanged }
      }
    }
    return .expired
  }

  deinit { descriptor.close() }
}

/// SIGINT, SIGTERM (and others asked for) as a pollable descriptor. The signals are blocked for
/// the process so they arrive only here, never interrupting the work in between.
package final class SignalChannel {
  package let descriptor: FileDescriptor

  package init(_ signals: [Int32]) throws {
    var set = sigset_t()
    sigemptyset(&set)
    for signal in signals { sigaddset(&set, signal) }
    sigprocmask(SIG_BLOCK, &set, nil)
    let fd = try retryingInterrupts { signalfd(-1, &set, Int32(SFD_CLOEXEC | SFD_NONBLOCK)) }
    descriptor = FileDescriptor(rawValue: fd)
  }

  /// The signals that ask vpnstat to stop: SIGINT, SIGTERM, SIGHUP (and SIGWINCH besides, for
  /// a live view that redraws on a resize).
  package static func stopping(resizing: Bool = false) throws -> SignalChannel {
    try SignalChannel([SIGINT, SIGTERM, SIGHUP] + (resizing ? [SIGWINCH] : []))
  }

  /// True for a signal that asks to stop (anything but SIGWINCH).
  package static func isStop(_ signal: Int32) -> Bool { signal != SIGWINCH }

  /// True for SIGHUP, which a daemon with files to read again takes as "reload" (and others as
  /// "stop").
  package static func isHangUp(_ signal: Int32) -> Bool { signal == SIGHUP }

  /// True for SIGWINCH: the terminal was resized.
  package static func isResize(_ signal: Int32) -> Bool { signal == SIGWINCH }

  /// The signals received since the last call, in order.
  package func received() -> [Int32] {
    var result: [Int32] = []
    var info = signalfd_siginfo()
    let size = MemoryLayout<signalfd_siginfo>.size
    while (try? Errno.retrying { read(descriptor.rawValue, &info, size) }) == size {
      result.append(Int32(info.ssi_signo))
    }
    return result
  }

  deinit { descriptor.close() }
}

/// Waits until one of `descriptors` is readable or `timeout` passes (nil: forever).
/// Returns the readable ones.
package func waitForReadable(_ descriptors: [FileDescriptor], timeout: Duration?) throws -> [FileDescriptor] {
  try waitForReadiness(reading: descriptors, writing: [], timeout: timeout).readable
}

/// Waits until one of `reading` is readable or one of `writing` writable (an error or a hang-up
/// counts as both: the next read or write says which), or `timeout` passes (nil: forever). The
/// one wait every loop of vpnstat goes through.
package func waitForReadiness(reading: [FileDescriptor], writing: [FileDescriptor], timeout: Duration?) throws -> (
  readable: [FileDescriptor], writable: [FileDescriptor]
) {
  // A few descriptors, each once, in the order first named: a search of the few made so far,
  // not a dictionary (hashing, and code the recorder's every-second loop would keep resident).
  var fds: [pollfd] = []
  fds.reserveCapacity(reading.count + writing.count)
  func watch(_ descriptors: [FileDescriptor], for event: Int16) {
    for descriptor in descriptors {
      if let at = fds.firstIndex(where: { $0.fd == descriptor.rawValue }) {
        fds[at].events |= event
      } else {
        fds.append(pollfd(fd: descriptor.rawValue, events: event, revents: 0))
      }
    }
  }
  watch(reading, for: Int16(POLLIN))
  watch(writing, for: Int16(POLLOUT))
  // poll is made again after a signal for what is left of the timeout: a wait cut short would
  // look like one that timed out, and one made again in full could go on for ever.
  let deadline = timeout.map { timeout in
    let (end, overflow) = SystemClock.monotonic.addingReportingOverflow(max(0, timeout.nanoseconds))
    return overflow ? Int64.max : end
  }
  _ = try Errno.retrying { poll(&fds, nfds_t(fds.count), pollTimeout(until: deadline)) }
  let trouble = Int16(POLLERR) | Int16(POLLHUP) | Int16(POLLNVAL)
  var readable: [FileDescriptor] = []
  var writable: [FileDescriptor] = []
  for fd in fds where fd.revents != 0 {
    if fd.events & Int16(POLLIN) != 0, fd.revents & (Int16(POLLIN) | trouble) != 0 {
      readable.append(FileDescriptor(rawValue: fd.fd))
    }
    if fd.events & Int16(POLLOUT) != 0, fd.revents & (Int16(POLLOUT) | trouble) != 0 {
      writable.append(FileDescriptor(rawValue: fd.fd))
    }
  }
  return (readable, writable)
}

/// poll's timeout from now to `deadline` (CLOCK_MONOTONIC nanoseconds), -1 (for ever) for none:
/// whole milliseconds rounded up, so the wait never ends before the deadline.
private func pollTimeout(until deadline: Int64?) -> Int32 {
  guard let deadline else { return -1 }
  let left = max(0, deadline - SystemClock.monotonic)
  return Int32(clamping: left / 1_000_000 + (left % 1_000_000 == 0 ? 0 : 1))
}

extension timespec {
  init(_ duration: Duration) {
    let nanos = duration.nanoseconds
    self.init(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
  }
}
