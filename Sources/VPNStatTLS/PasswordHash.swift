import CCrypt
import COpenSSL
import VPNStatModel

/// A password checked against its hash (bcrypt, `$2y$`, as Prometheus's web configuration
/// stores them) through the system's crypt (libxcrypt's `crypt_r`). The comparison takes the
/// same time wherever the first difference is.
package enum PasswordHash {
  /// Whether `password` hashes to `hash`. False for a password with a NUL byte (crypt cannot
  /// take it) or a hash crypt does not know.
  package static func matches(_ password: [UInt8], hash: String) -> Bool {
    guard !password.contains(0) else { return false }
    let data = UnsafeMutablePointer<crypt_data>.allocate(capacity: 1)
    defer { data.deallocate() }
    UnsafeMutableRawPointer(data).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<crypt_data>.size)
    let computed: [UInt8]? = (password + [0]).withUnsafeBufferPointer { phrase in
      phrase.withMemoryRebound(to: CChar.self) { phrase in
        guard let result = crypt_r(phrase.baseAddress, hash, data) else { return nil }
        return Array(String(cString: result).utf8)
      }
    }
    // crypt_r returns "*0"/"*1" for a setting it refuses: never equal to a real hash.
    guard let computed, computed.first != 0x2A else {
      _ = equalInConstantTime(Array(hash.utf8), Array(hash.utf8))
      return false
    }
    return equalInConstantTime(computed, Array(hash.utf8))
  }

  /// Compares every byte of the longer of the two, whatever they hold.
  package static func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt8(a.count == b.count ? 0 : 1)
    for i in 0..<max(a.count, b.count) {
      difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
    }
    return difference == 0
  }
}

/// SHA-256 (OpenSSL's) of bytes, and bytes from OpenSSL's random generator: what a cache of
/// checked credentials keys on, never the password itself.
package enum CredentialDigest {
  package static func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 32)
    var size: UInt32 = 0
    _ = bytes.withUnsafeBytes { raw in EVP_Digest(raw.baseAddress, raw.count, &digest, &size, EVP_sha256(), nil) }
    return Array(digest.prefix(Int(size)))
  }

  package static func random(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    _ = RAND_bytes(&bytes, Int32(count))
    return bytes
  }
}
