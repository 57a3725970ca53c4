import Synchronization
import VPNStatTLS

/// Who may be answered and what every answer carries, from the web configuration: basic auth
/// against bcrypt hashes, and the headers it adds.
package struct HTTPAccess: Sendable {
  /// User → bcrypt hash; empty: every request is answered.
  package var users: [String: String]
  /// Added to every response, in place of the server's own header of the same name.
  package var headers: [(name: String, value: String)]

  /// Credentials already checked: a scraper sends the same ones every few seconds, and bcrypt
  /// costs it tens of milliseconds each time (exporter-toolkit keeps such a cache too). Only
  /// successes, keyed by a salted digest of user, hash and password; a new access (a reload)
  /// starts empty.
  private let verified = VerifiedCredentials()

  package init(users: [String: String] = [:], headers: [(name: String, value: String)] = []) {
    self.users = users
    self.headers = headers
  }

  /// A bcrypt hash of cost 10 that no password matches, checked for an unknown user so that a
  /// failed check costs the same whether the user exists or not.
  static let unknownUserHash = "$2b$10$P7wOiLhgoxesm2DhZ3cgduxPSnC4ZeAJV1ZX1J43C0uQQRKjtHcKi"

  /// Whether a request with this `Authorization` header may be answered.
  package func allows(_ authorization: String?) -> Bool {
    guard !users.isEmpty else { return true }
    guard let (user, password) = Self.credentials(authorization) else { return false }
    guard let hash = users[user] else {
      _ = PasswordHash.matches(password, hash: Self.unknownUserHash)
      return false
    }
    let key = verified.key(user: user, hash: hash, password: password)
    if verified.contains(key) { return true }
    guard PasswordHash.matches(password, hash: hash) else { return false }
    verified.insert(key)
    return true
  }

  /// `Basic BASE64(user:password)` as user and password bytes; nil for anything else.
  static func credentials(_ authorization: String?) -> (String, [UInt8])? {
    guard let authorization else { return nil }
    let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
    guard parts.count == 2, parts[0].lowercased() == "basic",
      let decoded = Base64.decode(parts[1].trimmingCharacters(in: " \t")), let colon = decoded.firstIndex(of: 0x3A)
    else { return nil }
    return (String(decoding: decoded[..<colon], as: UTF8.self), Array(decoded[(colon + 1)...]))
  }

  /// `response` with the configured headers in place of the server's own of the same names.
  package func decorate(_ response: [UInt8]) -> [UInt8] {
    guard !headers.isEmpty else { return response }
    let end = Array("\r\n\r\n".utf8)
    guard let split = (0..<max(0, response.count - 3)).first(where: { response[$0..<($0 + 4)].elementsEqual(end) })
    else { return response }
    let names = Set(headers.map { $0.name.lowercased() })
    var lines = String(decoding: response[..<split], as: UTF8.self).split(separator: "\r\n").filter { line in
      !names.contains(line.prefix { $0 != ":" }.lowercased())
    }
    lines += headers.map { "\($0.name): \($0.value)" }
    return Array(lines.joined(separator: "\r\n").utf8) + response[split...]
  }

  /// The answer to a request without the right credentials.
  static let unauthorized = HTTPResponse.error(
    401, "Unauthorized", headers: [("WWW-Authenticate", "Basic realm=\"vpnstat\"")])
}

/// The credentials `HTTPAccess` has seen pass, as salted digests, at most `limit` of them.
final class VerifiedCredentials: @unchecked Sendable {
  static let limit = 64
  private let salt = CredentialDigest.random(32)
  private let keys = Mutex<Set<[UInt8]>>([])

  func key(user: String, hash: String, password: [UInt8]) -> [UInt8] {
    CredentialDigest.sha256(salt + Array(user.utf8) + [0] + Array(hash.utf8) + [0] + password)
  }

  func contains(_ key: [UInt8]) -> Bool { keys.withLock { $0.contains(key) } }

  func insert(_ key: [UInt8]) {
    keys.withLock { keys in
      if keys.count >= Self.limit { keys.removeAll() }
      keys.insert(key)
    }
  }
}

/// RFC 4648's base64, as `Authorization: Basic` carries it.
enum Base64 {
  static func decode(_ text: String) -> [UInt8]? {
    var bytes: [UInt8] = []
    var buffer: UInt32 = 0
    var bits = 0
    var padding = 0
    for character in text.utf8 {
      let value: UInt8
      switch character {
      case 0x41...0x5A: value = character - 0x41
      case 0x61...0x7A: value = character - 0x61 + 26
      case 0x30...0x39: value = character - 0x30 + 52
      case 0x2B: value = 62
      case 0x2F: value = 63
      case 0x3D:
        padding += 1
        continue
      default: return nil
      }
      guard padding == 0 else { return nil }
      buffer = buffer << 6 | UInt32(value)
      bits += 6
      if bits >= 8 {
        bits -= 8
        bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
      }
    }
    guard (text.utf8.count % 4 == 0) || padding == 0, padding <= 2 else { return nil }
    return bytes
  }
}
