import Glibc
import Testing

@testable import VPNStatSystem

/// `Errno.retryingPointer`, for the C calls that return a pointer (`realpath`, `fdopendir`,
/// `readdir`): NULL with errno set is a failure, NULL with errno 0 is `readdir`'s end.
struct InterruptedPointerCallTests {
  /// A call that fails with each of `errors` in turn (0: NULL with errno untouched), then
  /// returns a pointer.
  final class FailingCall {
    var errors: [Int32]
    var calls = 0
    let pointer = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
    init(_ errors: [Int32]) { self.errors = errors }
    deinit { pointer.deallocate() }
    func callAsFunction() -> UnsafeMutableRawPointer? {
      calls += 1
      guard !errors.isEmpty else { return pointer }
      let error = errors.removeFirst()
      if error != 0 { errno = error }
      return nil
    }
  }

  @Test("EINTR and the kernel's restart codes are made again", arguments: [EINTR, 512, 516])
  func retried(_ error: Int32) throws {
    let call = FailingCall([error, error])
    #expect(try Errno.retryingPointer { call() } == call.pointer)
    #expect(call.calls == 3)
  }

  @Test("NULL with errno left alone is nil, not an error, even after an earlier call set errno")
  func endIsNil() throws {
    errno = ENOENT
    let call = FailingCall([0])
    #expect(try Errno.retryingPointer { call() } == nil)
    #expect(call.calls == 1)
  }

  @Test("any other error is thrown at once, as the Errno it is", arguments: [ENOENT, EACCES, 515])
  func thrown(_ error: Int32) {
    let call = FailingCall([error])
    #expect(throws: Errno(rawValue: error)) { try Errno.retryingPointer { call() } }
    #expect(call.calls == 1)
  }
}
