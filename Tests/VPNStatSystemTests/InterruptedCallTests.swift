import Glibc
import Testing

@testable import VPNStatSystem

/// The one retry layer: a call cut short is made again, whether the kernel said EINTR or let one
/// of its restart codes escape (516 reached `record` under gdb and ended it "Unknown error 516").
struct InterruptedCallTests {
  /// A call that fails with each of `errors` in turn, then returns 7.
  final class FailingCall {
    var errors: [Int32]
    var calls = 0
    init(_ errors: [Int32]) { self.errors = errors }
    func callAsFunction() -> Int32 {
      calls += 1
      guard !errors.isEmpty else { return 7 }
      errno = errors.removeFirst()
      return -1
    }
  }

  @Test(
    "EINTR and the kernel's restart codes 512, 513, 514 and 516 are made again", arguments: [EINTR, 512, 513, 514, 516])
  func retried(_ error: Int32) throws {
    let call = FailingCall([error, error])
    #expect(try retryingInterrupts { call() } == 7)
    #expect(call.calls == 3)
  }

  @Test("any other error is thrown at once, as the Errno it is", arguments: [EAGAIN, ENODEV, 515, 517])
  func thrown(_ error: Int32) {
    let call = FailingCall([error])
    #expect(throws: Errno(rawValue: error)) { try retryingInterrupts { call() } }
    #expect(call.calls == 1)
  }
}
