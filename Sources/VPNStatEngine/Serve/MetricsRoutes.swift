import VPNStatHTTP
import VPNStatModel
import VPNStatRender

/// `record --listen`'s routes: `GET /metrics` in the format the scraper asks for, `/` the status
/// page for a person, from the snapshot the recorder published last.
package struct MetricsRoutes: HTTPResponder {
  let exposition: MetricsExposition

  package init(_ exposition: MetricsExposition) { self.exposition = exposition }

  /// The answer to one request: the metrics, the page, or why not (HEAD is answered as GET; the
  /// server sends the head alone).
  package func respond(to head: HTTPRequestHead) -> [UInt8] {
    let path = head.path
    guard path == "/metrics" || path == "/" else { return HTTPResponse.error(404, "Not Found") }
    guard head.method == "GET" || head.method == "HEAD" else {
      return HTTPResponse.error(405, "Method Not Allowed", headers: [("Allow", "GET, HEAD")])
    }
    let coding = HTTPContentCoding.negotiated(acceptEncoding: head.acceptEncoding)
    if path == "/" {
      // The page loads nothing from anywhere: a browser is told to refuse anything it would.
      return encoded(
        coding, contentType: "text/html; charset=utf-8",
        headers: [
          ("Vary", "Accept-Encoding"), ("Content-Security-Policy", StatusPage.contentSecurityPolicy),
          ("X-Content-Type-Options", "nosniff"),
        ]
      ) { exposition.page(coding: $0) }
    }
    let format = OpenMetrics.Format.negotiated(accept: head.accept)
    // The body depends on both headers: a cache between the scraper and here must know it.
    return encoded(coding, contentType: format.contentType, headers: [("Vary", "Accept, Accept-Encoding")]) {
      exposition.body(format, coding: $0)
    }
  }

  /// A 200 with the body `body` gives in `coding`, or as it is when zlib failed (out of memory);
  /// a 503 before the first sample.
  private func encoded(
    _ coding: HTTPContentCoding, contentType: String, headers: [(String, String)],
    body: (HTTPContentCoding) -> [UInt8]?
  ) -> [UInt8] {
    var headers = headers
    var bytes = body(coding)
    if bytes != nil, coding == .gzip {
      headers.append(("Content-Encoding", "gzip"))
    } else if bytes == nil, coding != .identity {
      bytes = body(.identity)
    }
    guard let bytes else { return HTTPResponse.error(503, "Service Unavailable", headers: [("Retry-After", "1")]) }
    return HTTPResponse.render(status: 200, reason: "OK", contentType: contentType, body: bytes, headers: headers)
  }
}

extension OpenMetrics.Format {
  /// The format an HTTP `Accept` header asks for: OpenMetrics when it names
  /// `application/openmetrics-text` with a weight no lower than the plain text format's (as
  /// Prometheus asks), the Prometheus text format otherwise — also without the header, as the
  /// text format is what any other client reads.
  package static func negotiated(accept: String?) -> OpenMetrics.Format {
    guard let accept else { return .prometheus }
    var openMetrics = 0.0
    var text = 0.0
    for range in accept.split(separator: ",") {
      let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: " \t").lowercased() }
      guard let type = parts.first else { continue }
      var weight = 1.0
      for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
        weight = Double(parameter.dropFirst(2)).map { min(max($0, 0), 1) } ?? 0
      }
      switch type {
      case "application/openmetrics-text": openMetrics = max(openMetrics, weight)
      case "text/plain", "text/*", "*/*": text = max(text, weight)
      default: break
      }
    }
    return openMetrics > 0 && openMetrics >= text ? .openmetrics : .prometheus
  }

  /// The `Content-Type` a response in this format carries.
  package var contentType: String {
    switch self {
    case .openmetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
    case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
    }
  }
}

/// How a response's body is encoded on the wire (`Content-Encoding`).
