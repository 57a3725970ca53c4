import Synchronization
import VPNStatModel
import VPNStatSystem
import VPNStatTLS

/// What a server answers: the whole response (head and body) to one complete request head.
package protocol HTTPResponder: Sendable {
  func respond(to head: HTTPRequestHead) -> [UInt8]
}

/// An HTTP/1.1 server that answers each request with what its `HTTPResponder` gives, to any
/// number of clients at once without ever waiting for one (`record --listen`: the metrics and
/// the status page). A state machine: `step` waits once for whatever is ready and handles it;
/// `HTTPServerLoop` runs it on a thread of its own, tests step it themselves.
///
/// Bounded: a request head of at most `Limits.requestBytes`, complete within
/// `Limits.requestTime` of connecting (not of its last byte); at most `Limits.connections` at
/// once (a new one takes the place of the oldest done, idle or slow one, else is closed at once); a response not taken within `Limits.responseTime` is dropped. Every socket is
/// non-blocking: a slow or hostile client costs one entry here, never a wait.
package struct HTTPServer {
  /// The bounds on what a client may cost.
  package struct Limits: Sendable {
    /// Clients at once; when full, a new one takes the place of the oldest done one (answered),
    /// else of the oldest idle one, else of the oldest whose request has not come whole: idle or
    /// slow connections never lock a scrape out.
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
    /// TLS over the socket, when the server speaks it; its handshake comes first.
    var tls: TLSSession?
    var handshaking = false
    /// What TLS last said it must wait for (nil: as the phase says).
    var tlsWaits: Readiness?
    enum Readiness { case readable, writable }
    var waitsFor: Readiness { tlsWaits ?? (phase == .writing ? .writable : .readable) }
    var received: [UInt8] = []
    var response: [UInt8] = []
    var sent = 0
    /// CLOCK_MONOTONIC nanoseconds: when this phase's time is up (while idle: the first byte's).
    var deadline: Int64
    /// CLOCK_MONOTONIC nanoseconds: when the request's time is up, counted from the connection.
    var requestDeadline: Int64
    /// The order of acceptance: the lowest is the oldest.
    var serial: UInt64
    /// CLOCK_MONOTONIC nanoseconds: when it was accepted.
    var acceptedAt: Int64

    /// Connected and nothing sent yet.
    var isIdle: Bool { phase == .reading && received.isEmpty }
  }

  package let listener: ListeningSocket
  let responder: any HTTPResponder
  /// TLS for every connection (nil: plain HTTP); replaced to reload the certificate.
  package var tls: TLSServerContext?
  /// Basic auth and the configured headers.
  package var access: HTTPAccess
  let clock: any TimeSource
  package let limits: Limits
  var connections: [Int32: Connection] = [:]
  var accepted: UInt64 = 0

  package init(
    listener: ListeningSocket, responder: any HTTPResponder, clock: any TimeSource, limits: Limits = Limits(),
    tls: TLSServerContext? = nil, access: HTTPAccess = HTTPAccess()
  ) {
    self.tls = tls
    self.access = access
    self.listener = listener
    self.responder = responder
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
      if connection.waitsFor == .writable {
        writing.append(connection.descriptor)
      } else {
        reading.append(connection.descriptor)
      }
    }
    let (readable, writable) = try waitForReadiness(reading: reading, writing: writing, timeout: wait)
    for descriptor in readable where descriptor != listener.descriptor && !also.contains(descriptor) {
      try advance(descriptor.rawValue)
    }
    for descriptor in writable { try advance(descriptor.rawValue) }
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
      var connection = Connection(
        descriptor: descriptor, deadline: now + min(limits.firstByteTime, limits.requestTime).nanoseconds,
        requestDeadline: now + limits.requestTime.nanoseconds, serial: accepted, acceptedAt: now)
      if let tls {
        guard let session = try? TLSSession(tls, descriptor: descriptor) else {
          descriptor.close()
          continue
        }
        connection.tls = session
        connection.handshaking = true
      }
      connections[descriptor.rawValue] = connection
    }
  }

  /// The connection a new one may take the place of when all are taken: the oldest that is done
  /// (its response sent, lingering), else the oldest idle one, else the oldest whose request has
  /// not come whole (idle or slow); nil when every one is being answered. By age within each: a
  /// scraper sends its head at once, so its connection is the newest, never the one that makes
  /// way, even while its bytes are on their way.
  private func evictable() -> Int32? {
    func oldest(_ include: (Connection) -> Bool) -> Int32? {
      connections.filter { include($0.value) }.min { $0.value.serial < $1.value.serial }?.key
    }
    // A connection that has said nothing for a while goes before a request on its way; one just
    // accepted is given the moment its request needs to arrive.
    let settled = clock.now().monotonic - Self.newcomerGrace.nanoseconds
    return oldest { $0.phase == .draining } ?? oldest { $0.isIdle && $0.acceptedAt <= settled }
      ?? oldest { $0.phase == .reading }
  }

  /// How long a new connection is not taken for idle when a slot is needed.
  static let newcomerGrace = Duration.milliseconds(250)

  /// A connection's socket is ready: the next step of its handshake, its request or its
  /// response.
  private mutating func advance(_ fd: Int32) throws {
    guard var connection = connections[fd] else { return }
    if connection.handshaking, let session = connection.tls {
      connection.tlsWaits = nil
      switch session.handshake() {
      case .done:
        connection.handshaking = false
        connections[fd] = connection
      case .wantsRead:
        connection.tlsWaits = .readable
        connections[fd] = connection
        return
      case .wantsWrite:
        connection.tlsWaits = .writable
        connections[fd] = connection
        return
      case .closed, .failed:
        // No certificate, a protocol too old, not TLS at all: the handshake is the answer.
        close(fd)
        return
      }
    }
    // A response goes on whatever TLS waited for (a write may need the socket readable).
    if connection.phase == .writing { try write(fd) } else { try read(fd) }
  }

  /// What the connection has for us now, up to `limit` bytes: nil when nothing yet, empty when
  /// it ended. Through TLS when it speaks it (until TLS has nothing more decrypted).
  private func receive(_ connection: inout Connection, limit: Int) throws -> [UInt8]? {
    guard let session = connection.tls, connection.phase == .reading else {
      return try connection.descriptor.receive(limit: limit)
    }
    connection.tlsWaits = nil
    var bytes: [UInt8] = []
    while bytes.count < limit {
      let (more, progress) = session.read(limit: limit - bytes.count)
      switch progress {
      case .done: bytes += more
      case .wantsRead: return bytes.isEmpty ? nil : bytes
      case .wantsWrite:
        connection.tlsWaits = .writable
        return bytes.isEmpty ? nil : bytes
      case .closed, .failed: return bytes.isEmpty ? [] : bytes
      }
    }
    return bytes
  }

  /// Writes what the connection takes now: how many bytes (0: wait), nil when it is gone.
  private func transmit(_ connection: inout Connection, _ bytes: ArraySlice<UInt8>) throws -> Int? {
    guard let session = connection.tls else { return try connection.descriptor.send(bytes) }
    connection.tlsWaits = nil
    let (count, progress) = session.write(bytes)
    switch progress {
    case .done: return count
    case .wantsWrite: return 0
    case .wantsRead:
      connection.tlsWaits = .readable
      return 0
    case .closed, .failed: return nil
    }
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
      guard let bytes = try receive(&connection, limit: limits.requestBytes + 1 - connection.received.count)
      else {
        connections[fd] = connection
        return
      }
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
      guard let taken = try transmit(&connection, connection.response[connection.sent...]) else {
        close(fd)
        return
      }
      if taken == 0 { break }
      connection.sent += taken
    }
    if connection.sent == connection.response.count {
      connection.tls?.shutdown()
      connection.tlsWaits = nil
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

  /// The answer to one request. HEAD gets GET's head alone (its Content-Length too), as
  /// HTTP/1.1 asks.
  func response(to head: HTTPRequestHead) -> [UInt8] {
    let response =
      access.allows(head.authorization)
      ? access.decorate(responder.respond(to: head)) : access.decorate(HTTPAccess.unauthorized)
    guard head.method == "HEAD" else { return response }
    return HTTPResponse.head(of: response)
  }
}

/// An HTTP server's life: on a thread of its own, until `stop` is signalled.
package enum HTTPServerLoop {
  /// Starts `server` on a new thread; signal `stop` to end it (its clients are closed). What
  /// `updates` is given (a reloaded certificate, users, headers) is taken between two steps:
  /// the listener and the connections stay, new connections get the new settings.
  package static func start(
    _ server: HTTPServer, stop: WakeUp, updates: HTTPServerUpdates? = nil,
    log: @escaping @Sendable (String) -> Void
  ) throws {
    let box = ServerBox(server)
    try BackgroundThread.start {
      var server = box.take()
      defer { server.closeAll() }
      let watched = [stop.descriptor] + (updates.map { [$0.wake.descriptor] } ?? [])
      while true {
        do {
          let ready = try server.step(timeout: nil, also: watched)
          if ready.contains(stop.descriptor) { return }
          if let updates, ready.contains(updates.wake.descriptor), let (tls, access) = updates.take() {
            server.tls = tls
            server.access = access
          }
        } catch {
          // A failure of one wait (out of memory, a descriptor gone bad) must not end the
          // serving for good: say it and go on after a moment.
          log("\(error)")
          _ = try? waitForReadable([stop.descriptor], timeout: .milliseconds(100))
        }
      }
    }
  }

  /// Hands the server to the thread that owns it from then on.
  private final class ServerBox: @unchecked Sendable {
    private var server: HTTPServer?
    init(_ server: HTTPServer) { self.server = server }
    func take() -> HTTPServer {
      defer { server = nil }
      return server!
    }
  }
}

/// New settings for a running server's thread (`record --listen` reloading its web
/// configuration on SIGHUP): offered by one thread, taken by the server's between two steps.
package final class HTTPServerUpdates: @unchecked Sendable {
  let wake: WakeUp
  private let pending = Mutex<(TLSServerContext?, HTTPAccess)?>(nil)

  package init() throws { wake = try WakeUp() }

  package func offer(tls: TLSServerContext?, access: HTTPAccess) {
    pending.withLock { $0 = (tls, access) }
    wake.signal()
  }

  func take() -> (TLSServerContext?, HTTPAccess)? {
    _ = wake.consume()
    return pending.withLock { value in
      defer { value = nil }
      return value
    }
  }
}
