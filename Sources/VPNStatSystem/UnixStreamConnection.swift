import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A connected AF_UNIX stream socket for a line protocol spoken with a local daemon (OpenVPN's
/// management interface): send a command, read until the answer is complete or a deadline
/// passes. Never blocks longer than the deadline it is given.
public final class UnixStreamConnection {
  private let descriptor: FileDescriptor
  private var buffer: [UInt8] = []

  /// Connects to the socket at `path`. Throws `Errno` (ENOENT: no such socket; ECONNREFUSED:
  /// nobody listens; ENAMETOOLONG: a path longer than a socket address holds).
  public init(path: String) throws {
    let fd = try retryingInterrupts { socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
    descriptor = FileDescriptor(rawValue: fd)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
      descriptor.close()
      throw Errno(rawValue: ENAMETOOLONG)
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
        try? retryingInterrupts { connect(fd, pointer, socklen_t(MemoryLayout<sockaddr_un>.size)) }
      }
    }
    guard connected != nil else {
      let error = Errno.current
      descriptor.close()
      throw error
    }
  }

  deinit { descriptor.close() }

  /// Sends all of `text` (a peer that went away is EPIPE, not a signal).
  public func send(_ text: String) throws {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
      let sent = try bytes[offset...].withUnsafeBytes { raw in
        try retryingInterrupts { Glibc.send(descriptor.rawValue, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL)) }
      }
      offset += sent
    }
  }

  /// Reads until `complete` holds for the text received since the last call, the peer closes,
  /// or `timeout` passes (then `Errno.timedOut`). Returns that text and keeps nothing.
  public func receive(timeout: Duration, until complete: (String) -> Bool) throws -> String {
    let deadline = SystemClock.monotonic + timeout.nanoseconds
    var chunk = [UInt8](repeating: 0, count: 4096)
    while !complete(String(decoding: buffer, as: UTF8.self)) {
      let left = deadline - SystemClock.monotonic
      guard left > 0 else { throw Errno.timedOut }
      guard !(try waitForReadable([descriptor], timeout: .nanoseconds(left))).isEmpty else { continue }
      let count = try chunk.withUnsafeMutableBytes { try descriptor.read(into: $0) }
      if count == 0 { break }
      buffer += chunk[0..<count]
      // A daemon that never stops talking is not waited for past a sane size.
      if buffer.count > 1 << 20 { break }
    }
    defer { buffer.removeAll() }
    return String(decoding: buffer, as: UTF8.self)
  }
}
