import Foundation

/// A control socket served by the test: what it answers, or how it misbehaves.
final class FakeControlSocket: @unchecked Sendable {
  enum Behaviour {
    /// Reads the request (to an empty line, as WireGuard's protocol ends one), then writes these
    /// bytes and closes.
    case answer([UInt8])
    /// Reads one line (OpenVPN's management commands), then writes these bytes and closes.
    case answerLine([UInt8])
    /// Accepts and then says nothing, keeping the connection open.
    case silent
    /// Writes one byte every `interval`, forever.
    case trickle(Duration)
    /// Writes `count` bytes of lines without an end.
    case flood(Int)
    /// Accepts and closes at once.
    case close
  }

  let path: String
  private let listener: Int32
  private var thread: Thread?
  private let lock = NSLock()
  private var stopped = false
  private(set) var connections = 0
  private(set) var requests: [String] = []

  /// Listens at `path` (its directory is made) with `behaviour`; `listening: false` binds only,
  /// so a connect is refused.
  init(path: String, behaviour: Behaviour, listening: Bool = true) throws {
    self.path = path
    try FileManager.default.createDirectory(
      atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard bound == 0 else { throw TestSetupError("bind \(path): \(String(cString: strerror(errno)))") }
    guard listening else { return }
    listen(listener, 8)
    let thread = Thread { [self] in serve(behaviour) }
    self.thread = thread
    thread.start()
  }

  private var isStopped: Bool {
    lock.lock()
    defer { lock.unlock() }
    return stopped
  }

  /// Signalled when the accepting thread has left its loop: only then may the listening
  /// descriptor be closed (a closed number is reused at once, by the next test's server).
  private let served = NSCondition()
  private var serving = true

  private func serve(_ behaviour: Behaviour) {
    defer {
      served.lock()
      serving = false
      served.broadcast()
      served.unlock()
    }
    while !isStopped {
      var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
      guard poll(&descriptor, 1, 50) > 0 else { continue }
      let connection = accept(listener, nil, nil)
      guard connection >= 0 else { continue }
      lock.lock()
      connections += 1
      lock.unlock()
      Thread { [self] in
        handle(connection, behaviour)
        close(connection)
      }.start()
    }
  }

  private func handle(_ connection: Int32, _ behaviour: Behaviour) {
    if case .close = behaviour { return }
    var request: [UInt8] = []
    var byte: UInt8 = 0
    let end: [UInt8] = if case .answerLine = behaviour { [0x0A] } else { [0x0A, 0x0A] }
    while !request.suffix(end.count).elementsEqual(end), recv(connection, &byte, 1, 0) == 1 { request.append(byte) }
    lock.lock()
    requests.append(String(decoding: request, as: UTF8.self))
    lock.unlock()
    func send(_ bytes: [UInt8]) -> Bool {
      bytes.withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }
    switch behaviour {
    case .answer(let bytes), .answerLine(let bytes): _ = send(bytes)
    case .silent:
      while !isStopped { usleep(20_000) }
    case .trickle(let interval):
      while !isStopped, send([0x61]) { usleep(UInt32(interval.nanoseconds / 1000)) }
    case .flood(let count):
      let line = [UInt8]("listen_port=1\n".utf8)
      var sent = 0
      while sent < count, !isStopped, send(line) { sent += line.count }
    case .close: break
    }
  }

  /// Stops serving and removes the socket file (the serving threads hold the value: call it).
  func stop() {
    lock.lock()
    let wasStopped = stopped
    stopped = true
    lock.unlock()
    guard !wasStopped else { return }
    if thread != nil {
      served.lock()
      while serving { served.wait() }
      served.unlock()
    }
    thread = nil
    close(listener)
    unlink(path)
  }

  deinit { stop() }
}
