import CZlib

/// gzip (RFC 1952) of a whole body in one call, with Debian's zlib: what an HTTP response with
/// `Content-Encoding: gzip` carries.
package enum Gzip {
  /// `bytes` compressed at `level` (1 fastest … 9 smallest); nil if zlib fails (out of memory),
  /// when the caller sends them as they are.
  package static func compress(_ bytes: [UInt8], level: Int32 = 6) -> [UInt8]? {
    var stream = z_stream()
    guard czlib_gzip_init(&stream, level) == Z_OK else { return nil }
    defer { deflateEnd(&stream) }
    // deflateBound is enough for one Z_FINISH call, plus the gzip header and trailer it leaves out.
    let capacity = Int(deflateBound(&stream, uLong(bytes.count))) + 18
    var finished = false
    let output = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
      bytes.withUnsafeBufferPointer { input in
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
        stream.avail_in = uInt(input.count)
        stream.next_out = buffer.baseAddress
        stream.avail_out = uInt(capacity)
        finished = deflate(&stream, Z_FINISH) == Z_STREAM_END
        count = finished ? Int(stream.total_out) : 0
      }
    }
    return finished ? output : nil
  }
}
