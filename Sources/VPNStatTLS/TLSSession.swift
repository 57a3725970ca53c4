import COpenSSL
import VPNStatModel
import VPNStatSystem

/// TLS over one accepted, non-blocking connection: the handshake, then reads and writes, each a
/// step that never waits — it says what the socket must become (readable, writable) before the
/// next one can go on.
package final class TLSSession: @unchecked Sendable {
  /// Where a step left the connection.
  package enum Progress: Equatable, Sendable {
    /// Done (the handshake), or bytes moved.
    case done
    /// Wait until the socket is readable, then step again.
    case wantsRead
    /// Wait until the socket is writable, then step again.
    case wantsWrite
    /// The peer closed the connection.
    case closed
    /// The handshake or the record layer failed: OpenSSL's words.
    case failed(String)
  }

  let ssl: OpaquePointer

  package init(_ context: TLSServerContext, descriptor: FileDescriptor) throws(TLSServerContext.Failure) {
    guard let ssl = SSL_new(context.context) else { throw TLSServerContext.failure("cannot start TLS") }
    self.ssl = ssl
    guard SSL_set_fd(ssl, descriptor.rawValue) == 1 else { throw TLSServerContext.failure("cannot start TLS") }
    SSL_set_accept_state(ssl)
  }

  deinit { SSL_free(ssl) }

  /// One step of the handshake.
  package func handshake() -> Progress {
    retrying { SSL_do_handshake(ssl) }.1
  }

  /// What has arrived, decrypted, up to `limit` bytes (empty with a progress other than `.done`).
  package func read(limit: Int) -> (bytes: [UInt8], progress: Progress) {
    var buffer = [UInt8](repeating: 0, count: max(1, limit))
    let (result, progress) = buffer.withUnsafeMutableBytes { raw in
      retrying { SSL_read(ssl, raw.baseAddress, Int32(raw.count)) }
    }
    return result > 0 ? (Array(buffer[0..<Int(result)]), .done) : ([], progress)
  }

  /// Writes what the connection takes now of `bytes`: how many (0 with a progress to wait for).
  package func write(_ bytes: ArraySlice<UInt8>) -> (count: Int, progress: Progress) {
    guard !bytes.isEmpty else { return (0, .done) }
    let (result, progress) = bytes.withUnsafeBytes { raw in
      retrying { SSL_write(ssl, raw.baseAddress, Int32(raw.count)) }
    }
    return result > 0 ? (Int(result), .done) : (0, progress)
  }

  /// Says the end of the connection (close_notify), once, without waiting for the peer's.
  package func shutdown() {
    ERR_clear_error()
    _ = SSL_shutdown(ssl)
  }

  /// The version negotiated (`TLSv1.3`).
  package var version: String { String(cString: SSL_get_version(ssl)) }

  /// Runs an OpenSSL call that a signal may interrupt, again while it says so; its result and
  /// where it leaves the connection.
  private func retrying(_ call: () -> Int32) -> (Int32, Progress) {
    while true {
      ERR_clear_error()
      let result = call()
      if result > 0 { return (result, .done) }
      switch SSL_get_error(ssl, result) {
      case 2: return (result, .wantsRead)  // SSL_ERROR_WANT_READ
      case 3: return (result, .wantsWrite)  // SSL_ERROR_WANT_WRITE
      case 6: return (result, .closed)  // SSL_ERROR_ZERO_RETURN
      case 5:  // SSL_ERROR_SYSCALL
        if Errno.current.meansInterrupted { continue }
        let text = Self.errorText()
        return (result, text.isEmpty ? .closed : .failed(text))
      default: return (result, .failed(Self.errorText()))
      }
    }
  }

  /// OpenSSL's error queue as one line, emptied.
  static func errorText() -> String {
    var parts: [String] = []
    while case let code = ERR_get_error(), code != 0 {
      var buffer = [CChar](repeating: 0, count: 256)
      ERR_error_string_n(code, &buffer, buffer.count)
      let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
      parts.append(String(decoding: bytes, as: UTF8.self))
    }
    return parts.joined(separator: "; ")
  }
}
