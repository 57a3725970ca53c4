import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// A session bus played by the test on an AF_UNIX socket: it accepts one connection and runs a
/// script on it — the real protocol, or a stuck, slow, lying or hostile bus.
final class ScriptedBus: @unchecked Sendable {
  /// The test's end of the connection: blocking, with a 5-second receive timeout so that no
  /// script outlives its test.
  final class Peer: @unchecked Sendable {
    let fd: Int32
    var buffer: [UInt8] = []
    private(set) var authenticationLine = ""

    init(_ fd: Int32) {
      self.fd = fd
      var timeout = timeval(tv_sec: 5, tv_usec: 0)
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Reads more; false at the end of the stream (or after 5 s of nothing).
    func fill() -> Bool {
      var chunk = [UInt8](repeating: 0, count: 4096)
      let count = recv(fd, &chunk, chunk.count, 0)
      guard count > 0 else { return false }
      buffer += chunk[..<count]
      return true
    }

    func readLine() -> String? {
      while true {
        if let end = (0..<max(0, buffer.count - 1)).first(where: { buffer[$0] == 0x0D && buffer[$0 + 1] == 0x0A }) {
          let line = String(decoding: buffer[..<end], as: UTF8.self)
          buffer.removeFirst(end + 2)
          return line
        }
        guard fill() else { return nil }
      }
    }

    func readMessage() -> BusMessage? {
      while true {
        if let length = try? BusMessage.length(of: buffer), buffer.count >= length {
          let bytes = Array(buffer[..<length])
          buffer.removeFirst(length)
          return try? BusMessage(decoding: bytes)
        }
        guard fill() else { return nil }
      }
    }

    /// False when the client is gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
      bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    func send(_ message: BusMessage) { send(try! message.encoded()) }

    /// The server's side of SASL EXTERNAL: the NUL, the AUTH line (kept), OK, BEGIN.
    @discardableResult
    func authenticate() -> Bool {
      guard fill(), buffer.first == 0 else { return false }
      buffer.removeFirst()
      guard let line = readLine() else { return false }
      authenticationLine = line
      send(Array("OK 0123456789abcdef0123456789abcdef\r\n".utf8))
      return readLine() == "BEGIN"
    }

    /// Reads Hello and answers with a name, then the bus's NameAcquired signal.
    @discardableResult
    func hello() -> Bool {
      guard let hello = readMessage(), hello.member == "Hello" else { return false }
      reply(to: hello, [.string(":1.9")])
      send(
        BusMessage(
          kind: .signal, serial: 2, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
          member: "NameAcquired", destination: ":1.9", sender: "org.freedesktop.DBus", body: [.string(":1.9")]))
      return true
    }

    private var serial: UInt32 = 100

    func reply(to call: BusMessage, _ body: [BusValue]) {
      serial += 1
      send(
        BusMessage(
          kind: .methodReturn, serial: serial, replySerial: call.serial, destination: ":1.9", sender: "org.example",
          body: body))
    }

    func error(to call: BusMessage, name: String, message: String) {
      serial += 1
      send(
        BusMessage(
          kind: .error, serial: serial, errorName: name, replySerial: call.serial, destination: ":1.9",
          body: [.string(message)]))
    }

    /// Keeps the connection open, saying nothing, until the client goes (or 5 s pass).
    func holdOpen() { while fill() {} }
  }

  let name: UnixSocketName
  private let listener: Int32
  private let finished = DispatchSemaphore(value: 0)
  private let lock = NSLock()
  private var peer: Peer?

  /// Listens at `name` (a path in a test's directory, or an abstract name in a network
  /// namespace the calling thread is in) and serves one connection with `script`.
  init(_ name: UnixSocketName, script: @escaping @Sendable (Peer) -> Void) throws {
    self.name = name
    listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes: [UInt8]
    switch name {
    case .path(let path): bytes = path.bytes + [0]
    case .abstract(let abstract): bytes = [0] + abstract
    }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
    }
    guard bound == 0, listen(listener, 4) == 0 else {
      throw TestSetupError("cannot listen at \(name): \(String(cString: strerror(errno)))")
    }
    let listening = listener
    let finished = finished
    Thread { [self] in
      defer { finished.signal() }
      var ready = pollfd(fd: listening, events: Int16(POLLIN), revents: 0)
      guard poll(&ready, 1, 10_000) == 1 else { return }
      let connection = accept(listening, nil, nil)
      guard connection >= 0 else { return }
      let peer = Peer(connection)
      lock.lock()
      self.peer = peer
      lock.unlock()
      script(peer)
      close(connection)
    }.start()
  }

  /// In a test's directory.
  convenience init(in directory: TemporaryDirectory, script: @escaping @Sendable (Peer) -> Void) throws {
    try self.init(.path(SystemPath(directory.file("bus"))), script: script)
  }

  var address: DesktopBusAddress { DesktopBusAddress(name) }

  /// Waits until the script has run to its end; the connection's peer, for what it saw.
  func finish() -> Peer? {
    _ = finished.wait(timeout: .now() + 15)
    lock.lock()
    defer { lock.unlock() }
    return peer
  }

  deinit {
    close(listener)
    if case .path(let path) = name { unlink(path.description) }
  }
}

/// Short limits, so the hostile buses' tests take a fraction of a second.
let quickLimits = DesktopBusConnection.Limits(messageSize: 4096, idle: .milliseconds(300), total: .seconds(1))

func connect(_ bus: ScriptedBus) throws(DesktopBusConnection.Failure) -> DesktopBusConnection {
  try DesktopBusConnection.connect(to: [bus.address], limits: quickLimits)
}

let ping = BusMethodCall(
  destination: "org.example", path: "/org/example", interface: "org.example.Test", member: "Ping")

/// Finding the session bus, and the connection's protocol against a bus the test plays: the
/// real exchange, and each way a stuck or hostile bus may behave, which must cost a call at most
/// its limits and end in a typed failure.
struct DesktopBusTests {
  @Test("DBUS_SESSION_BUS_ADDRESS: unix path= and abstract= are used in order; guid, escapes, other transports")
  func addresses() {
    #expect(
      DesktopBusAddress.parse("unix:path=/run/user/1000/bus") == [DesktopBusAddress(.path("/run/user/1000/bus"))])
    #expect(
      DesktopBusAddress.parse("unix:abstract=/tmp/dbus-AbC,guid=0123456789abcdef")
        == [DesktopBusAddress(.abstract(Array("/tmp/dbus-AbC".utf8)))])
    #expect(
      DesktopBusAddress.parse("tcp:host=localhost,port=4;unix:guid=x,path=/a%20b%2cc;unix:path=/second")
        == [DesktopBusAddress(.path("/a b,c")), DesktopBusAddress(.path("/second"))])
    for unusable in [
      "", ";", "unix:tmpdir=/tmp", "unix:runtime=yes", "unix:dir=/tmp", "unix:path=/x,abstract=y", "unix:path=%zz",
      "unix:path=%4", "unix:path=", "unix:", "unix", "unixexec:path=/bin/sh", "launchd:env=X", "unix:path",
    ] {
      #expect(DesktopBusAddress.parse(unusable).isEmpty, "\(unusable)")
    }
    #expect(DesktopBusAddress(.path("/a b")).description == "unix:path=/a%20b")
  }

  @Test("no session bus: the error says which variable is missing and where the fallback was looked for")
  func noDesktopBus() throws {
    let directory = try TemporaryDirectory("nobus")
    #expect(throws: DesktopBusUnavailable.notSet(fallback: "XDG_RUNTIME_DIR is not set")) {
      try DesktopBusAddress.find(environment: ["HOME": "/root"])
    }
    let missing = directory.path + "/bus"
    #expect(throws: DesktopBusUnavailable.notSet(fallback: "\(missing) does not exist")) {
      try DesktopBusAddress.find(environment: ["XDG_RUNTIME_DIR": directory.path, "DBUS_SESSION_BUS_ADDRESS": ""])
    }
    _ = FileManager.default.createFile(atPath: missing, contents: Data())
    #expect(throws: DesktopBusUnavailable.notSet(fallback: "\(missing) is not a socket")) {
      try DesktopBusAddress.find(environment: ["XDG_RUNTIME_DIR": directory.path + "/"])
    }
    #expect(throws: DesktopBusUnavailable.unusableAddress("tcp:host=h,port=1")) {
      try DesktopBusAddress.find(environment: ["DBUS_SESSION_BUS_ADDRESS": "tcp:host=h,port=1"])
    }
    #expect(
      DesktopBusUnavailable.notSet(fallback: "XDG_RUNTIME_DIR is not set").description
        == "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and XDG_RUNTIME_DIR/bus does not exist (XDG_RUNTIME_DIR is not set)"
    )
  }

  @Test("XDG_RUNTIME_DIR/bus is the fallback when it is this user's socket")
  func runtimeDirectoryFallback() throws {
    let directory = try TemporaryDirectory("runtime")
    let bus = try ScriptedBus(in: directory) { _ in }
    #expect(
      try DesktopBusAddress.find(environment: ["XDG_RUNTIME_DIR": directory.path])
        == [DesktopBusAddress(.path(SystemPath(directory.file("bus"))))])
    // The variable wins when it is set, even when the fallback exists.
    #expect(
      try DesktopBusAddress.find(environment: [
        "XDG_RUNTIME_DIR": directory.path, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/x",
      ])
        == [DesktopBusAddress(.path("/x"))])
    _ = bus
  }

  @Test("the exchange: NUL, AUTH EXTERNAL with the uid in hex, BEGIN with Hello; calls get their own replies")
  func protocolExchange() throws {
    let directory = try TemporaryDirectory("bus")
    let bus = try ScriptedBus(in: directory) { peer in
      guard peer.authenticate(), peer.hello(), let call = peer.readMessage() else { return }
      // Before the reply: a signal, another peer's call, and a reply to some other serial.
      peer.send(BusMessage(kind: .signal, serial: 50, path: "/x", interface: "x.y", member: "Z", body: [.uint32(1)]))
      peer.send(BusMessage(kind: .methodCall, serial: 51, path: "/x", member: "Poke", sender: ":1.66"))
      peer.send(BusMessage(kind: .methodReturn, serial: 52, replySerial: call.serial + 40, body: [.string("no")]))
      peer.reply(to: call, [.string("pong"), .uint32(call.serial)])
      guard let second = peer.readMessage() else { return }
      peer.error(to: second, name: "org.example.Error.Nope", message: "not today")
      guard let third = peer.readMessage() else { return }
      peer.reply(to: third, [])
      peer.holdOpen()
    }
    do {
      let connection = try connect(bus)
      #expect(connection.uniqueName == ":1.9")
      #expect(try connection.call(ping) == [.string("pong"), .uint32(2)])
      #expect(
        throws: DesktopBusConnection.Failure.error(BusErrorReply(name: "org.example.Error.Nope", message: "not today"))
      ) { try connection.call(ping) }
      // An ERROR reply leaves the connection in step: the next call is answered.
      #expect(try connection.call(ping) == [])
    }
    // The connection is closed: the bus's script ends.
    let peer = bus.finish()
    #expect(peer?.authenticationLine == "AUTH EXTERNAL " + String(geteuid()).utf8.map { hexByte($0) }.joined())
  }

  @Test(
    "an abstract address is connected to in the network namespace's abstract namespace",
    .enabled(if: Privilege.isRoot, "needs root: the abstract socket is bound in a network namespace of the test's own"))
  func abstractAddress() throws {
    let name = Array("vpnstat-test-bus-\(getpid())".utf8)
    let result: Result<String, DesktopBusConnection.Failure>? = try inOwnNamespace(if: true) {
      guard
        let bus = try? ScriptedBus(
          .abstract(name),
          script: { peer in
            guard peer.authenticate(), peer.hello() else { return }
            peer.holdOpen()
          })
      else { return nil }
      let address = DesktopBusAddress.parse("unix:abstract=vpnstat-test-bus-\(getpid()),guid=00")
      return withExtendedLifetime(bus) {
        Result { () throws(DesktopBusConnection.Failure) -> String in
          try DesktopBusConnection.connect(to: address, limits: quickLimits).uniqueName
        }
      }
    }
    #expect(try result?.get() == ":1.9")
  }

  @Test(
    "a hostile or broken bus ends in a typed failure within the limits",
    arguments: [
      ("silent", DesktopBusConnection.Failure.timedOut(.milliseconds(300))),
      ("rejects", .rejected("REJECTED EXTERNAL")),
      ("garbage", .protocolViolation("an answer to AUTH that is neither OK, REJECTED nor ERROR")),
      ("endless line", .tooLarge(1024)),
      ("binary line", .protocolViolation("an authentication line that is not printable ASCII")),
      ("closes", .closed),
      ("huge message", .tooLarge(4096)),
      ("bad message", .protocolViolation("non-zero padding at offset 35")),
      ("trickles", .timedOut(.seconds(1))),
      ("hello without name", .protocolViolation("Hello answered with \"u\", not \"s\"")),
      ("floods", .timedOut(.seconds(1))),
    ])
  func hostile(behaviour: String, failure: DesktopBusConnection.Failure) throws {
    let directory = try TemporaryDirectory("hostile")
    let bus = try ScriptedBus(in: directory) { peer in
      switch behaviour {
      case "silent":
        peer.holdOpen()
      case "rejects":
        _ = peer.fill()
        peer.send(Array("REJECTED EXTERNAL\r\n".utf8))
        peer.holdOpen()
      case "garbage":
        _ = peer.fill()
        peer.send(Array("HELLO THERE\r\n".utf8))
        peer.holdOpen()
      case "endless line":
        _ = peer.fill()
        peer.send([UInt8](repeating: 0x41, count: 3000))
        peer.holdOpen()
      case "binary line":
        _ = peer.fill()
        peer.send([0x4F, 0x4B, 0x20, 0x1B, 0x5B, 0x32, 0x4A, 0x0D, 0x0A])
        peer.holdOpen()
      case "closes":
        _ = peer.fill()
      case "huge message":
        // A header claiming 4 GiB of body: refused on its first 16 bytes, not waited for.
        guard peer.authenticate(), peer.readMessage() != nil else { return }
        peer.send(hexBytes("6c020001 ffffffff 01000000 08000000"))
        peer.holdOpen()
      case "bad message":
        guard peer.authenticate(), let hello = peer.readMessage() else { return }
        var bytes = try! BusMessage(
          kind: .methodReturn, serial: 9, replySerial: hello.serial, body: [.byte(1), .uint32(2)]
        ).encoded()
        bytes[bytes.count - 5] = 0xAA  // a padding byte between the byte and the uint32
        peer.send(bytes)
        peer.holdOpen()
      case "trickles":
        // One byte of a valid reply every 100 ms: within the idle time, never within the total.
        guard peer.authenticate(), let hello = peer.readMessage() else { return }
        let bytes = try! BusMessage(
          kind: .methodReturn, serial: 9, replySerial: hello.serial, body: [.string(":1.9")]
        ).encoded()
        for byte in bytes {
          guard peer.send([byte]) else { return }
          usleep(100_000)
        }
      case "floods":
        // Valid signals without end, never the reply: each is read and dropped, until the total.
        guard peer.authenticate(), peer.readMessage() != nil else { return }
        let signal = try! BusMessage(
          kind: .signal, serial: 5, path: "/x", interface: "x.y", member: "Z", body: [.string("spam")]
        ).encoded()
        let burst = Array([[UInt8]](repeating: signal, count: 64).joined())
        while peer.send(burst) {}
      case "hello without name":
        guard peer.authenticate(), let hello = peer.readMessage() else { return }
        peer.reply(to: hello, [.uint32(1)])
        peer.holdOpen()
      default:
        break
      }
    }
    let started = Date()
    #expect(throws: failure) { try connect(bus) }
    // Bounded: whatever the bus does, connecting ends within the total limit (1 s) and a margin.
    #expect(Date().timeIntervalSince(started) < 3)
    _ = bus.finish()
  }

  @Test("a silent bus costs the idle time, not the total")
  func silentCostsIdle() throws {
    let directory = try TemporaryDirectory("silent")
    let bus = try ScriptedBus(in: directory) { peer in peer.holdOpen() }
    let limits = DesktopBusConnection.Limits(messageSize: 4096, idle: .milliseconds(200), total: .seconds(8))
    let started = Date()
    #expect(throws: DesktopBusConnection.Failure.timedOut(.milliseconds(200))) {
      try DesktopBusConnection.connect(to: [bus.address], limits: limits)
    }
    let elapsed = Date().timeIntervalSince(started)
    #expect(elapsed >= 0.19 && elapsed < 4, "\(elapsed)")
    _ = bus.finish()
  }

  @Test("after a failure that leaves the stream out of step, every later call fails at once the same way")
  func brokenStaysBroken() throws {
    let directory = try TemporaryDirectory("broken")
    let bus = try ScriptedBus(in: directory) { peer in
      guard peer.authenticate(), peer.hello(), peer.readMessage() != nil else { return }
      peer.send([UInt8]("this is not a message...".utf8))
      peer.holdOpen()
    }
    let connection = try connect(bus)
    let failure = DesktopBusConnection.Failure.protocolViolation("byte order 116 is neither 'l' nor 'B'")
    #expect(throws: failure) { try connection.call(ping) }
    #expect(throws: failure) { try connection.call(ping) }
    withExtendedLifetime(connection) {}
  }

  @Test("a call that times out leaves the connection in step: a late reply is dropped, the next call answered")
  func lateReply() throws {
    let directory = try TemporaryDirectory("late")
    let bus = try ScriptedBus(in: directory) { peer in
      guard peer.authenticate(), peer.hello(), let slow = peer.readMessage() else { return }
      guard let next = peer.readMessage() else { return }
      peer.reply(to: slow, [.string("late")])
      peer.reply(to: next, [.string("on time")])
      peer.holdOpen()
    }
    let connection = try connect(bus)
    #expect(throws: DesktopBusConnection.Failure.timedOut(.milliseconds(300))) { try connection.call(ping) }
    #expect(try connection.call(ping) == [.string("on time")])
    withExtendedLifetime(connection) {}
  }

  @Test("nobody listening, or no socket: the system's error")
  func nobodyThere() throws {
    let directory = try TemporaryDirectory("nobody")
    #expect(throws: DesktopBusConnection.Failure.system(.noSuchFile)) {
      try DesktopBusConnection.connect(to: [DesktopBusAddress(.path(SystemPath(directory.file("none"))))])
    }
    // Bound, not listening.
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let path = directory.file("bound")
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
    }
    _ = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    #expect(throws: DesktopBusConnection.Failure.system(.connectionRefused)) {
      try DesktopBusConnection.connect(to: [DesktopBusAddress(.path(SystemPath(path)))])
    }
  }
}
