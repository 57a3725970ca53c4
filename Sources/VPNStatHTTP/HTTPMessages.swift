// HTTP as `record --listen` speaks it: the request head it reads and the responses it writes.
// Pure; the sockets are `HTTPServer`'s, what is served is the engine's (`MetricsRoutes`).

/// The head of an HTTP request: what the metrics server needs of it.
package struct HTTPRequestHead: Hashable, Sendable {
  package var method: String
  package var target: String
  package var version: String
  /// Every `Accept` header, joined with commas (as HTTP allows); nil without one.
  package var accept: String?
  /// Every `Accept-Encoding` header, joined the same way; nil without one.
  package var acceptEncoding: String?
  /// The `Authorization` header (one: two are refused); nil without one.
  package var authorization: String? = nil

  /// What the bytes received so far hold.
  package enum Parsed: Hashable, Sendable {
    /// The head has not ended yet.
    case incomplete
    case complete(HTTPRequestHead)
    /// Not an HTTP request head.
    case malformed
  }

  /// The path the target names, without its query: an origin-form target's own
  /// (`/metrics?x`), an absolute-form one's after its scheme and authority
  /// (`http://host:9586/metrics`, which RFC 9112 §3.2.2 says a server must accept); "" for any
  /// other form (`*`, `host:port`) or scheme.
  package var path: String {
    var rest = Substring(target)
    if !rest.hasPrefix("/") {
      let lowered = rest.prefix(8).lowercased()
      let scheme = lowered.hasPrefix("http://") ? 7 : lowered.hasPrefix("https://") ? 8 : nil
      guard let scheme else { return "" }
      rest = rest.dropFirst(scheme)
      // The authority ends at the path, the query or the end (an empty path is "/").
      let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
      rest = rest[end...]
      if !rest.hasPrefix("/") { rest = Substring("/" + rest) }
    }
    return String(rest.prefix { $0 != "?" && $0 != "#" })
  }

  /// The longest request line accepted: a longer one is refused (400) as soon as it shows.
  package static let requestLineLimit = 4096

  /// Parses `bytes` up to the blank line that ends the head (CRLF CRLF; bare LFs are accepted).
  /// What RFC 9112 says a server must reject is malformed (400): whitespace between a field's
  /// name and its colon (§5.1), a line folded onto the one before (obs-fold, §5.2), differing
  /// `Content-Length`s (§6.3), more than one `Host` (§3.2), a request line over the limit.
  package static func parse(_ bytes: [UInt8]) -> Parsed {
    var lines: [ArraySlice<UInt8>] = []
    var lineStart = 0
    var ended = false
    for i in bytes.indices where bytes[i] == 0x0A {
      var line = bytes[lineStart..<i]
      if line.last == 0x0D { line = line.dropLast() }
      lineStart = i + 1
      if line.isEmpty {
        // Blank lines before the request line are tolerated (RFC 9112 §2.2).
        if lines.isEmpty { continue }
        ended = true
        break
      }
      lines.append(line)
    }
    guard ended else {
      // Garbage is refused as soon as it shows, not when the head would have ended.
      let partial = bytes[lineStart...].filter { $0 != 0x0D }[...]
      let soFar = lines.enumerated().allSatisfy { valid($1, requestLine: $0 == 0) }
      let lineTooLong = (lines.first ?? partial).count > requestLineLimit
      return soFar && valid(partial, requestLine: lines.isEmpty) && !lineTooLong ? .incomplete : .malformed
    }
    let words = lines[0].split(separator: 0x20, omittingEmptySubsequences: false)
    guard words.count == 3, valid(lines[0], requestLine: true), lines[0].count <= requestLineLimit else {
      return .malformed
    }
    let method = String(decoding: words[0], as: UTF8.self)
    let target = String(decoding: words[1], as: UTF8.self)
    let version = String(decoding: words[2], as: UTF8.self)
    guard !method.isEmpty, method.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A || $0 == 0x2D }), !target.isEmpty,
      version.hasPrefix("HTTP/1.")
    else { return .malformed }
    var accept: [String] = []
    var acceptEncoding: [String] = []
    var contentLengths: Set<String> = []
    var hosts = 0
    var authorization: [String] = []
    for line in lines.dropFirst() {
      guard valid(line, requestLine: false), let colon = line.firstIndex(of: 0x3A), colon > line.startIndex,
        line[..<colon].allSatisfy(isTokenCharacter)
      else { return .malformed }
      let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
      let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: " \t")
      switch name {
      case "accept": accept.append(value)
      case "accept-encoding": acceptEncoding.append(value)
      case "content-length":
        for length in value.split(separator: ",", omittingEmptySubsequences: false) {
          contentLengths.insert(length.trimmingCharacters(in: " \t"))
        }
      case "host": hosts += 1
      case "authorization": authorization.append(value)
      default: break
      }
    }
    guard contentLengths.count <= 1,
      contentLengths.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && UInt64($0) != nil }),
      hosts <= 1, authorization.count <= 1
    else { return .malformed }
    return .complete(
      HTTPRequestHead(
        method: method, target: target, version: version,
        accept: accept.isEmpty ? nil : accept.joined(separator: ","),
        acceptEncoding: acceptEncoding.isEmpty ? nil : acceptEncoding.joined(separator: ","),
        authorization: authorization.first))
  }

  /// A field name is a token (RFC 9110 §5.6.2): no whitespace, so `Host : x` and a folded line
  /// (which starts with whitespace) are refused.
  private static func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
    default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
    }
  }

  /// Printable ASCII (and tabs in headers): anything else has no place in a request head.
  private static func valid(_ line: ArraySlice<UInt8>, requestLine: Bool) -> Bool {
    line.allSatisfy { ($0 >= 0x20 && $0 < 0x7F) || (!requestLine && $0 == 0x09) }
  }
}

package enum HTTPContentCoding: String, Hashable, Sendable {
  case identity
  case gzip

  /// The coding an `Accept-Encoding` header asks for (RFC 9110 §12.5.3): gzip when it (or
  /// `x-gzip`, or `*` where gzip is not named) has a weight above zero and no lower than
  /// identity's where identity is weighed, as Prometheus and `curl --compressed` ask; identity otherwise — without the
  /// header, and when gzip is refused with `q=0`. Identity is served even when it is refused
  /// too: a body any client reads beats a 406.
  package static func negotiated(acceptEncoding: String?) -> HTTPContentCoding {
    guard let acceptEncoding else { return .identity }
    var gzip: Double?
    var identity: Double?
    var any: Double?
    for range in acceptEncoding.split(separator: ",") {
      let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: " \t").lowercased() }
      guard let coding = parts.first, !coding.isEmpty else { continue }
      var weight = 1.0
      for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
        weight = Double(parameter.dropFirst(2)).map { min(max($0, 0), 1) } ?? 0
      }
      switch coding {
      case "gzip", "x-gzip": gzip = max(gzip ?? 0, weight)
      case "identity": identity = max(identity ?? 0, weight)
      case "*": any = max(any ?? 0, weight)
      default: break
      }
    }
    let gzipWeight = gzip ?? any ?? 0
    // Identity is always acceptable, but competes with gzip only where the client weighed it.
    let identityWeight = identity ?? any ?? 0
    return gzipWeight > 0 && gzipWeight >= identityWeight ? .gzip : .identity
  }
}

/// An HTTP/1.1 response as bytes: the status line, the headers (always `Connection: close`:
/// one request per connection), the body.
package enum HTTPResponse {
  package static func render(
    status: Int, reason: String, contentType: String = "text/plain; charset=utf-8", body: [UInt8],
    headers: [(String, String)] = []
  ) -> [UInt8] {
    var head = "HTTP/1.1 \(status) \(reason)\r\n"
    head += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n"
    head += "Cache-Control: no-store\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    head += "\r\n"
    return Array(head.utf8) + body
  }

  /// A response's head alone (up to and with the blank line): the answer to HEAD, whose
  /// Content-Length still says the body GET would get.
  package static func head(of response: [UInt8]) -> [UInt8] {
    let end = [UInt8]("\r\n\r\n".utf8)
    for i in 0..<max(0, response.count - 3) where response[i..<(i + 4)].elementsEqual(end) {
      return Array(response[..<(i + 4)])
    }
    return response
  }

  /// A short plain-text answer for an error status.
  package static func error(_ status: Int, _ reason: String, headers: [(String, String)] = []) -> [UInt8] {
    render(status: status, reason: reason, body: Array("\(status) \(reason)\n".utf8), headers: headers)
  }
}
