import VPNStatModel

extension OpenMetrics.Format {
  /// The format an HTTP `Accept` header asks for: OpenMetrics when it names
  /// `application/openmetrics-text` with a weight no lower than the plain text format's (as
  /// Prometheus asks), the Prometheus text format otherwise — also without the header, as the
  /// text format is what any other client reads.
  public static func negotiated(accept: String?) -> OpenMetrics.Format {
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
  public var contentType: String {
    switch self {
    case .openmetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8"
    case .prometheus: "text/plain; version=0.0.4; charset=utf-8"
    }
  }
}

/// An HTTP/1.1 response as bytes: the status line, the headers (always `Connection: close`:
/// one request per connection), the body.
public enum HTTPResponse {
  public static func render(
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
  public static func head(of response: [UInt8]) -> [UInt8] {
    let end = [UInt8]("\r\n\r\n".utf8)
    for i in 0..<max(0, response.count - 3) where response[i..<(i + 4)].elementsEqual(end) {
      return Array(response[..<(i + 4)])
    }
    return response
  }

  /// A short plain-text answer for an error status.
  public static func error(_ status: Int, _ reason: String, headers: [(String, String)] = []) -> [UInt8] {
    render(status: status, reason: reason, body: Array("\(status) \(reason)\n".utf8), headers: headers)
  }
}

/// `/` of `record --listen`: a small page that says what this is and links to the metrics.
public enum MetricsPage {
  public static let html = """
    <!DOCTYPE html>
    <html lang="en"><head><meta charset="utf-8"><title>vpnstat</title></head>
    <body><h1>vpnstat</h1>
    <p>Traffic per interface class (estimates) and the VPN session window, recorded by <code>vpnstat record</code>.</p>
    <p><a href="/metrics">/metrics</a>: OpenMetrics 1.0 when asked for with <code>Accept: application/openmetrics-text</code>, the Prometheus text format otherwise.</p>
    </body></html>

    """
}
