import Synchronization
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// What `/metrics` and the status page at `/` serve: the recorder's figures after one sample —
/// the ledger as it holds it in memory, the session, what the ledger could not see — and when
/// they were taken; for the page, the rates since the sample before and the last day's history.
package struct MetricsSnapshot: Sendable {
  package var ledger: Ledger
  package var session: SessionReport?
  package var health: StoreHealth?
  package var takenAt: Timestamp
  package var rates: [InterfaceName: StatusPageModel.Rates]
  package var history: TrafficHistory?

  package init(
    ledger: Ledger, session: SessionReport?, health: StoreHealth?, takenAt: Timestamp,
    rates: [InterfaceName: StatusPageModel.Rates] = [:], history: TrafficHistory? = nil
  ) {
    self.ledger = ledger
    self.session = session
    self.health = health
    self.takenAt = takenAt
    self.rates = rates
    self.history = history
  }

  /// The status page's model of these figures.
  package func page(refreshSeconds: Int) -> StatusPageModel {
    StatusPageModel(
      takenAt: takenAt, session: session,
      interfaces: ledger.entries.values.map {
        StatusPageModel.Interface(
          name: $0.name, interfaceClass: $0.interfaceClass, traffic: $0.totals.traffic, rates: rates[$0.name])
      }, history: history, refreshSeconds: refreshSeconds)
  }
}

/// The metrics the recorder published last, shared with the thread that serves them: the
/// recorder only swaps in a new snapshot (never waits for a client), the server renders each
/// snapshot at most once per format, outside the lock.
package final class MetricsExposition: Sendable {
  private struct State {
    var snapshot: MetricsSnapshot?
    var version = 0
    var rendered: [Encoded: (version: Int, bytes: [UInt8])] = [:]
  }
  /// A body as it goes out: its format (nil: the status page), and its coding on the wire.
  private struct Encoded: Hashable {
    var format: OpenMetrics.Format?
    var coding: HTTPContentCoding
  }
  private let state = Mutex(State())
  /// How the status page shows figures and times (the recorder's calendar), and how often it
  /// reloads itself.
  package let pageOptions: DisplayOptions
  package let pageRefreshSeconds: Int

  package init(pageOptions: DisplayOptions = DisplayOptions(), pageRefreshSeconds: Int = 10) {
    self.pageOptions = pageOptions
    self.pageRefreshSeconds = pageRefreshSeconds
  }

  /// Publishes the figures of a new sample.
  package func publish(_ snapshot: MetricsSnapshot) {
    state.withLock {
      $0.snapshot = snapshot
      $0.version += 1
    }
  }

  /// The exposition of the last snapshot in `format`, encoded with `coding` (gzip: compressed
  /// once per snapshot, whatever the number of scrapers); nil before the first one.
  package func body(_ format: OpenMetrics.Format, coding: HTTPContentCoding = .identity) -> [UInt8]? {
    rendered(Encoded(format: format, coding: coding))
  }

  /// The status page of the last snapshot, the same way.
  package func page(coding: HTTPContentCoding = .identity) -> [UInt8]? {
    rendered(Encoded(format: nil, coding: coding))
  }

  private func rendered(_ key: Encoded) -> [UInt8]? {
    let (snapshot, version, cached) = state.withLock { ($0.snapshot, $0.version, $0.rendered[key]) }
    if let cached, cached.version == version { return cached.bytes }
    guard let snapshot else { return nil }
    var bytes: [UInt8]
    switch key.coding {
    case .identity:
      if let format = key.format {
        bytes = OpenMetrics.render(
          ledger: snapshot.ledger, session: snapshot.session, health: snapshot.health, at: snapshot.takenAt,
          format: format)
      } else {
        bytes = Array(
          StatusPage.render(snapshot.page(refreshSeconds: pageRefreshSeconds), options: pageOptions).utf8)
      }
    case .gzip:
      // The plain body of the same snapshot (a newer one may have come meanwhile: then both are
      // of that one, and the version kept is the older, so the next scrape renders again).
      guard let plain = rendered(Encoded(format: key.format, coding: .identity)),
        let compressed = Gzip.compress(plain, level: Self.gzipLevel)
      else { return nil }
      bytes = compressed
    }
    state.withLock { $0.rendered[key] = (version, bytes) }
    return bytes
  }

  /// zlib's fastest level: at 1000 interfaces 4× quicker than the default (6) for a body 8 %
  /// larger (Prometheus text: 508 KB → 23.5 KB, against 21.8 KB).
  static let gzipLevel: Int32 = 1
}

/// `record --listen`: serves `GET /metrics` (and `/`, the status page for a person) over HTTP, from the
/// snapshot the recorder published, to any number of clients at once without ever waiting for
/// one. A state machine: `step` waits once for whatever is ready and handles it;
/// `MetricsServerLoop` runs it on a thread of its own, tests step it themselves.
///
/// Bounded: a request head of at most `Limits.requestBytes`, complete within
/// `Limits.requestTime` of connecting; at most `Limits.connections` at once (more are closed at
/// once); a response not taken within `Limits.responseTime` is dropped. Every socket is
/// non-blocking: a slow or hostile client costs one entry here, never a wait.
package struct MetricsServer {
  /// The bounds on what a client may cost.
  package struct Limits: Sendable {
    /// Clients at once; when full, a new one takes the place of the oldest idle one (connected,
    /// nothing sent yet), so idle connections never lock a scrape out.
    package var connections = 512
    package var requestBytes = 8192
    /// How long a new connection may stay idle (nothing sent) before it is closed, unanswered.
    package var firstByteTime: Duration = .seconds(2)
    package var requestTime: Duration = .seconds(5)
    package var responseTime: Duration = .seconds(10)
    /// After a response, how long unread input is drained before closing (closing with input
    /// unread would reset the connection and could lose the response's end).
    package var lingerTime: Duration = .seconds(2)
    package init() {}
  }

  /// One client connection.
  struct Connection {
    enum Phase {
      case reading
      case writing
      case draining
    }
    var descriptor: FileDescriptor
    var phase = Phase.reading
    var received: [UInt8] = []
    var response: [UInt8] = []
    var sent = 0
    /// CLOCK_MONOTONIC nanoseconds: when this phase's time is up (while idle: the first byte's).
    var deadline: Int64
    /// CLOCK_MONOTONIC nanoseconds: when the request's time is up, counted from the connection.
    var requestDeadline: Int64
    /// The order of acceptance: the lowest is the oldest.
    var serial: UInt64

    /// Connected and nothing sent yet.
    var isIdle: Bool { phase == .reading && received.isEmpty }
  }

  package let listener: ListeningSocket
  let exposition: MetricsExposition
  let clock: any TimeSource
  package let limits: Limits
  var connections: [Int32: Connection] = [:]
  var accepted: UInt64 = 0

  package init(
    listener: ListeningSocket, exposition: MetricsExposition, clock: any TimeSource, limits: Limits = Limits()
  ) {
    self.listener = listener
    self.exposition = exposition
    self.clock = clock
    self.limits = limits
  }

  /// How many clients are connected now.
  package var connectionCount: Int { connections.count }

  /// Waits at most `timeout` (and never past the earliest client deadline) for the listener,
  /// the clients or `also`, handles what is ready, closes what is past its time. Returns the
  /// descriptors of `also` that are readable.
  @discardableResult
  package mutating func step(timeout: Duration?, also: [FileDescriptor] = []) throws -> [FileDescriptor] {
    let now = clock.now().monotonic
    var wait = timeout
    if let earliest = connections.values.map(\.deadline).min() {
      let untilDeadline = Duration.nanoseconds(max(0, earliest - now))
      wait = wait.map { min($0, untilDeadline) } ?? untilDeadline
    }
    var reading = [listener.descriptor] + also
    var writing: [FileDescriptor] = []
    for connection in connections.values {
      if connection.phase == .writing {
        writing.append(connection.descriptor)
      } else {
        reading.append(connection.descriptor)
      }
    }
    let (readable, writable) = try waitForReadiness(reading: reading, writing: writing, timeout: wait)
    for descriptor in readable where descriptor != listener.descriptor && !also.contains(descriptor) {
      try read(descriptor.rawValue)
    }
    for descriptor in writable { try write(descriptor.rawValue) }
    if readable.contains(listener.descriptor) { try acceptAll() }
    try expire()
    return readable.filter { also.contains($0) }
  }

  /// Closes every client (the server is stopping).
  package mutating func closeAll() {
    for connection in connections.values { connection.descriptor.close() }
    connections = [:]
  }

  // MARK: - Events

  private mutating func acceptAll() throws {
    // Up to a backlog's worth per step, so a flood of connections cannot starve the clients.
    for _ in 0..<128 {
      guard let descriptor = try listener.accept() else { return }
      if connections.count >= limits.connections {
        guard let oldest = evictable() else {
          descriptor.close()
          continue
        }
        close(oldest)
      }
      let now = clock.now().monotonic
      accepted += 1
      connections[descriptor.rawValue] = Connection(
        descriptor: descriptor, deadline: now + min(limits.firstByteTime, limits.requestTime).nanoseconds,
        requestDeadline: now + limits.requestTime.nanoseconds, serial: accepted)
    }
  }

  /// The connection a new one may take the place of when all are taken: the oldest idle one,
  /// else the oldest that is done (its response sent, lingering); nil when every one is busy.
  private func evictable() -> Int32? {
    let idle = connections.filter { $0.value.isIdle }
    let done = connections.filter { $0.value.phase == .draining }
    return (idle.isEmpty ? done : idle).min { $0.value.serial < $1.value.serial }?.key
  }

  private mutating func read(_ fd: Int32) throws {
    guard var connection = connections[fd] else { return }
    switch connection.phase {
    case .writing: return
    case .draining:
      // Input after the response is read and dropped until the client closes.
      guard let bytes = try connection.descriptor.receive(limit: 16_384) else { return }
      if bytes.isEmpty { close(fd) }
    case .reading:
      // One byte more than allowed tells an oversized head from one that just fits.
      guard let bytes = try connection.descriptor.receive(limit: limits.requestBytes + 1 - connection.received.count)
      else { return }
      if bytes.isEmpty {
        close(fd)
        return
      }
      // The first bytes: from now on, the request's own time.
      if connection.received.isEmpty { connection.deadline = connection.requestDeadline }
      connection.received += bytes
      switch HTTPRequestHead.parse(connection.received) {
      case .incomplete where connection.received.count > limits.requestBytes:
        respond(&connection, HTTPResponse.error(431, "Request Header Fields Too Large"))
      case .incomplete:
        connections[fd] = connection
        return
      case .malformed:
        respond(&connection, HTTPResponse.error(400, "Bad Request"))
      case .complete(let head):
        respond(&connection, response(to: head))
      }
      connections[fd] = connection
      try write(fd)
    }
  }

  private mutating func write(_ fd: Int32) throws {
    guard var connection = connections[fd], connection.phase == .writing else { return }
    while connection.sent < connection.response.count {
      guard let taken = try connection.descriptor.send(connection.response[connection.sent...]) else {
        close(fd)
        return
      }
      if taken == 0 { break }
      connection.sent += taken
    }
    if connection.sent == connection.response.count {
      connection.descriptor.shutdownWriting()
      connection.phase = .draining
      connection.response = []
      connection.deadline = clock.now().monotonic + limits.lingerTime.nanoseconds
    }
    connections[fd] = connection
  }

  /// Clients past their time: a request never finished is answered 408 like any other request
  /// (and then has a response's time to take it); a response never taken, or a linger over, is
  /// closed.
  private mutating func expire() throws {
    let now = clock.now().monotonic
    for (fd, var connection) in connections where connection.deadline <= now {
      // Past its time: a response not taken, a linger over, a connection that never said a
      // word — closed.
      guard connection.phase == .reading, !connection.received.isEmpty else {
        close(fd)
        continue
      }
      respond(&connection, HTTPResponse.error(408, "Request Timeout"))
      connections[fd] = connection
      try write(fd)
    }
  }

  private mutating func respond(_ connection: inout Connection, _ response: [UInt8]) {
    connection.phase = .writing
    connection.response = response
    connection.received = []
    connection.deadline = clock.now().monotonic + limits.responseTime.nanoseconds
  }

  private mutating func close(_ fd: Int32) {
    connections.removeValue(forKey: fd)?.descriptor.close()
  }

  /// The answer to one request: the metrics, the page, or why not. HEAD gets GET's head alone
  /// (its Content-Length too), as HTTP/1.1 asks.
  func response(to head: HTTPRequestHead) -> [UInt8] {
    let response = fullResponse(to: head)
    guard head.method == "HEAD" else { return response }
    return HTTPResponse.head(of: response)
  }

  private func fullResponse(to head: HTTPRequestHead) -> [UInt8] {
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
          ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store"),
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

/// The metrics server's life: on a thread of its own, until `stop` is signalled.
package enum MetricsServerLoop {
  /// Starts `server` on a new thread; signal `stop` to end it (its clients are closed).
  package static func start(_ server: MetricsServer, stop: WakeUp, log: @escaping @Sendable (String) -> Void) throws {
    let box = ServerBox(server)
    try BackgroundThread.start {
      var server = box.take()
      defer { server.closeAll() }
      while true {
        do {
          if try server.step(timeout: nil, also: [stop.descriptor]).contains(stop.descriptor) { return }
        } catch {
          // A failure of one wait (out of memory, a descriptor gone bad) must not end the
          // serving for good: say it and go on after a moment.
          log("metrics server: \(error)")
          _ = try? waitForReadable([stop.descriptor], timeout: .milliseconds(100))
        }
      }
    }
  }

  /// Hands the server to the thread that owns it from then on.
  private final class ServerBox: @unchecked Sendable {
    private var server: MetricsServer?
    init(_ server: MetricsServer) { self.server = server }
    func take() -> MetricsServer {
      defer { server = nil }
      return server!
    }
  }
}
