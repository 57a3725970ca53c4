import Foundation
import Glibc
import Testing

@testable import VPNStatSystem

/// Real signals on a waiting thread. A handler installed without SA_RESTART makes the kernel end
/// a wait it interrupts with EINTR (poll is never restarted, whatever the flags), as a debugger or
/// a profiler's signal does to `record`: the one wait must neither end early nor start over.
struct InterruptedWaitTests {
  /// A handler that does nothing for SIGUSR2, installed once and left for the life of the test
  /// process: restoring the default (which ends the process) could race a signal still on its way.
  static let handlerInstalled: Bool = {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = { _ in }
    sigemptyset(&action.sa_mask)
    action.sa_flags = 0
    return sigaction(SIGUSR2, &action, nil) == 0
  }()

  /// Sends SIGUSR2 to `thread` `times` times, `interval` apart, from a thread of its own.
  final class Interrupter: Sendable {
    private let finished = DispatchSemaphore(value: 0)

    init(_ thread: pthread_t, times: Int, every interval: Duration) {
      Thread.detachNewThread { [finished] in
        for _ in 0..<times {
          SystemClock.sleep(for: interval)
          pthread_kill(thread, SIGUSR2)
        }
        finished.signal()
      }
    }

    /// Returns once every signal is sent.
    func wait() { finished.wait() }
  }

  /// What `interrupted` hands back from its thread.
  final class Outcome<T>: @unchecked Sendable {
    var result: Result<T, any Error>?
  }

  /// Runs `body` on a thread of its own that takes SIGUSR2, sent `times` times `interval` apart
  /// meanwhile, and returns what it returned once every signal is sent. Not on the test's own
  /// thread: the pool's threads block signals, so a signal sent to one waits and interrupts
  /// nothing.
  static func interrupted<T>(
    times: Int, every interval: Duration, _ body: @escaping @Sendable () throws -> T
  ) throws -> T {
    #expect(handlerInstalled)
    let outcome = Outcome<T>()
    let finished = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      var usr2 = sigset_t()
      sigemptyset(&usr2)
      sigaddset(&usr2, SIGUSR2)
      pthread_sigmask(SIG_UNBLOCK, &usr2, nil)
      let interrupter = Interrupter(pthread_self(), times: times, every: interval)
      outcome.result = Result { try body() }
      interrupter.wait()
      finished.signal()
    }
    finished.wait()
    return try outcome.result!.get()
  }

  /// A pipe whose read end nothing is written to unless the test does.
  static func pipe() -> (read: FileDescriptor, write: FileDescriptor) {
    var ends: [Int32] = [-1, -1]
    _ = Glibc.pipe(&ends)
    return (FileDescriptor(rawValue: ends[0]), FileDescriptor(rawValue: ends[1]))
  }

  @Test("a wait that signals interrupt lasts its whole timeout and returns nothing ready")
  func interruptedWaitLastsItsTimeout() throws {
    let (read, write) = Self.pipe()
    defer {
      read.close()
      write.close()
    }
    // Signals from 40 ms to 400 ms into a wait of 200 ms.
    let (ready, elapsed) = try Self.interrupted(times: 10, every: .milliseconds(40)) {
      let started = SystemClock.monotonic
      let ready = try waitForReadable([read], timeout: .milliseconds(200))
      return (ready, SystemClock.monotonic - started)
    }
    #expect(ready.isEmpty)
    // Before poll was made again, the wait came back empty at the first signal, 40 ms in.
    #expect(elapsed >= 200_000_000, "returned after \(elapsed / 1_000_000) ms")
    // Made again in full each time, it would last until 200 ms after the last signal: 600 ms.
    #expect(elapsed < 550_000_000, "returned after \(elapsed / 1_000_000) ms")
  }

  @Test("a wait that signals interrupt still returns the descriptor that becomes ready")
  func interruptedWaitSeesReadiness() throws {
    let (read, write) = Self.pipe()
    defer {
      read.close()
      write.close()
    }
    let writer = write.rawValue
    Thread.detachNewThread {
      SystemClock.sleep(for: .milliseconds(200))
      var byte: UInt8 = 1
      _ = Glibc.write(writer, &byte, 1)
    }
    let ready = try Self.interrupted(times: 5, every: .milliseconds(20)) {
      try waitForReadable([read], timeout: .seconds(10))
    }
    #expect(ready == [read])
  }

  @Test("a sleep that signals interrupt is as long as asked")
  func interruptedSleepLastsItsDuration() throws {
    let elapsed = try Self.interrupted(times: 5, every: .milliseconds(20)) {
      let started = SystemClock.monotonic
      SystemClock.sleep(for: .milliseconds(300))
      return SystemClock.monotonic - started
    }
    #expect(elapsed >= 300_000_000, "slept \(elapsed / 1_000_000) ms")
  }
}
