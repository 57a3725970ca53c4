import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// Where the user's D-Bus session bus — "the desktop bus" here, so that "session" means only the
/// free plan's window — listens: an AF_UNIX socket, by path or by abstract name.
/// Found the way the D-Bus specification says a client finds it: `DBUS_SESSION_BUS_ADDRESS`,
/// else `$XDG_RUNTIME_DIR/bus`.
package struct DesktopBusAddress: Hashable, Sendable, CustomStringConvertible {
  package var socket: UnixSocketName

  package init(_ socket: UnixSocketName) { self.socket = socket }

  /// The addresses of a D-Bus address list (`transport:key=value,…;…`, values %-escaped) that
  /// this client can connect to, in their order: `unix:` with `path=` or `abstract=`. Others
  /// (`tcp:`, `unixexec:`, `launchd:`, the listen-only `unix:dir=`/`tmpdir=`/`runtime=`) and
  /// malformed ones are left out; `guid=` and unknown keys are ignored.
  package static func parse(_ text: String) -> [DesktopBusAddress] {
    var addresses: [DesktopBusAddress] = []
    for entry in Array(text.utf8).split(separator: UInt8(ascii: ";")) {
      guard let colon = entry.firstIndex(of: UInt8(ascii: ":")), Array(entry[..<colon]) == Array("unix".utf8) else {
        continue
      }
      var path: [UInt8]?
      var abstract: [UInt8]?
      var valid = true
      for pair in entry[entry.index(after: colon)...].split(separator: UInt8(ascii: ",")) {
        guard let equals = pair.firstIndex(of: UInt8(ascii: "=")),
          let value = unescape(pair[pair.index(after: equals)...])
        else {
          valid = false
          break
        }
        switch String(decoding: pair[..<equals], as: UTF8.self) {
        case "path": path = value
        case "abstract": abstract = value
        case "dir", "tmpdir", "runtime": valid = false
        default: break
        }
      }
      guard valid else { continue }
      switch (path, abstract) {
      case (let path?, nil) where !path.isEmpty: addresses.append(DesktopBusAddress(.path(SystemPath(bytes: path))))
      case (nil, let name?) where !name.isEmpty: addresses.append(DesktopBusAddress(.abstract(name)))
      default: continue
      }
    }
    return addresses
  }

  /// `%XX` escapes decoded; nil for a broken one.
  private static func unescape(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
    var result: [UInt8] = []
    var index = bytes.startIndex
    while index < bytes.endIndex {
      if bytes[index] == UInt8(ascii: "%") {
        guard bytes.endIndex - index >= 3, let high = hexDigit(bytes[index + 1]), let low = hexDigit(bytes[index + 2])
        else { return nil }
        result.append(high << 4 | low)
        index += 3
      } else {
        result.append(bytes[index])
        index += 1
      }
    }
    return result
  }

  private static func hexDigit(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: byte - 0x30
    case 0x41...0x46: byte - 0x41 + 10
    case 0x61...0x66: byte - 0x61 + 10
    default: nil
    }
  }

  /// Where the session bus of a process with `environment` listens: the usable addresses of
  /// `DBUS_SESSION_BUS_ADDRESS` when it is set, else `$XDG_RUNTIME_DIR/bus` when that is a
  /// socket of this user (libdbus's rule: another user's socket there is not this session's).
  package static func find(environment: [String: String]) throws(DesktopBusUnavailable) -> [DesktopBusAddress] {
    if let value = environment["DBUS_SESSION_BUS_ADDRESS"], !value.isEmpty {
      let addresses = parse(value)
      guard !addresses.isEmpty else { throw .unusableAddress(value) }
      return addresses
    }
    guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else {
      throw .notSet(fallback: "XDG_RUNTIME_DIR is not set")
    }
    let path = (runtime.hasSuffix("/") ? String(runtime.dropLast()) : runtime) + "/bus"
    var info = stat()
    guard (try? Errno.retrying({ stat(path, &info) })) != nil else { throw .notSet(fallback: "\(path) does not exist") }
    guard info.st_mode & S_IFMT == S_IFSOCK else { throw .notSet(fallback: "\(path) is not a socket") }
    guard info.st_uid == geteuid() else {
      throw .notSet(fallback: "\(path) belongs to user \(info.st_uid), not to this one")
    }
    return [DesktopBusAddress(.path(SystemPath(path)))]
  }

  /// `unix:path=…` or `unix:abstract=…`, bytes beyond printable ASCII %-escaped.
  package var description: String {
    func escaped(_ bytes: [UInt8]) -> String {
      var text = ""
      for byte in bytes {
        if byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "%") && byte != UInt8(ascii: ",")
          && byte != UInt8(ascii: ";")
        {
          text.unicodeScalars.append(Unicode.Scalar(byte))
        } else {
          text += "%" + hexByte(byte)
        }
      }
      return text
    }
    switch socket {
    case .path(let path): return "unix:path=" + escaped(path.bytes)
    case .abstract(let name): return "unix:abstract=" + escaped(name)
    }
  }
}

/// Why there is no session bus to connect to: this process does not run in a desktop session.
package enum DesktopBusUnavailable: Error, Hashable, Sendable, CustomStringConvertible {
  /// `DBUS_SESSION_BUS_ADDRESS` is not set, and the fallback did not apply (why, in words).
  case notSet(fallback: String)
  /// `DBUS_SESSION_BUS_ADDRESS` is set but names no address this client can use.
  case unusableAddress(String)

  package var description: String {
    switch self {
    case .notSet(let fallback):
      "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and XDG_RUNTIME_DIR/bus does not exist (\(fallback))"
    case .unusableAddress(let value):
      "no session bus: DBUS_SESSION_BUS_ADDRESS (\(TerminalText.sanitize(value))) names no unix:path= or unix:abstract= address"
    }
  }
}

/// A method call to make on the bus: who, which object, which method, with what.
package struct BusMethodCall: Hashable, Sendable {
  package var destination: String
  package var path: String
  package var interface: String
  package var member: String
  package var arguments: [BusValue]

  package init(destination: String, path: String, interface: String, member: String, arguments: [BusValue] = []) {
    self.destination = destination
    self.path = path
    self.interface = interface
    self.member = member
    self.arguments = arguments
  }
}

/// An ERROR message that answered a call: its D-Bus error name and its message, if any.
package struct BusErrorReply: Error, Hashable, Sendable, CustomStringConvertible {
  package var name: String
  package var message: String

  package init(name: String, message: String) {
    self.name = name
    self.message = message
  }

  /// The bus's answer to a call for a name nobody owns and nothing can start.
  package static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"

  package var description: String {
    message.isEmpty ? name : "\(name): \(TerminalText.sanitize(message))"
  }
}

/// A connection to the user's session bus: authenticated (`EXTERNAL`, the kernel's word on
/// who we are), registered (`Hello`), then method calls and their replies, one at a time. A bus
/// or a peer that is stuck, slow or hostile costs a call at most its limits: every message is
/// checked (`BusMessage`), none may exceed the size limit, and every wait goes through the one
/// wait (`waitForReadiness`) with an idle and a total timeout (`ExchangeBudget`), as
/// `LocalSocketExchange` does for other programs' sockets.
package final class DesktopBusConnection {
  /// How long and how large: no byte for `idle`, or one call (or the connecting) longer than
  /// `total`, ends it; a message longer than `messageSize` ends the connection.
  package struct Limits: Hashable, Sendable {
    package var messageSize: Int
    package var idle: Duration
    package var total: Duration

    package init(messageSize: Int = 1 << 20, idle: Duration = .seconds(10), total: Duration = .seconds(25)) {
      self.messageSize = messageSize
      self.idle = idle
      self.total = total
    }

    /// 1 MiB, 10 s idle, 25 s in all: replies to vpnstat's calls are a few hundred bytes, and a
    /// method call's total is libdbus's default reply timeout, time enough for the bus to start
    /// a notification server that is activated on demand.
    package static let standard = Limits()
  }

  /// Why a connection or a call failed.
  package enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
    /// A system call failed (connecting: ENOENT no socket, ECONNREFUSED nobody listens,
    /// EACCES not ours).
    case system(Errno)
    /// No byte came for the idle time, or the call took longer than the total.
    case timedOut(Duration)
    /// The bus closed the connection.
    case closed
    /// A message (or an authentication line) longer than the limit.
    case tooLarge(Int)
    /// The bus sent what the protocol does not allow.
    case protocolViolation(String)
    /// The bus refused to let this user in (its answer to `AUTH EXTERNAL`).
    case rejected(String)
    /// The call was answered with an ERROR message.
    case error(BusErrorReply)
    /// The call cannot be sent: its arguments make no valid message.
    case unencodable(String)

    package var description: String {
      switch self {
      case .system(let error): "\(error)"
      case .timedOut(let limit): "no answer within \(limit)"
      case .closed: "the bus closed the connection"
      case .tooLarge(let limit): "a message longer than \(limit) bytes"
      case .protocolViolation(let reason): "the bus broke the D-Bus protocol: \(reason)"
      case .rejected(let answer): "the bus refused this user (\(TerminalText.sanitize(answer)))"
      case .error(let reply): reply.description
      case .unencodable(let reason): "cannot send the call: \(reason)"
      }
    }

    /// True for failures after which the byte stream cannot be trusted to be in step.
    var breaksConnection: Bool {
      switch self {
      case .timedOut, .error, .unencodable: false
      case .system, .closed, .tooLarge, .protocolViolation, .rejected: true
      }
    }
  }

  /// The address it is connected to.
  package let address: DesktopBusAddress
  /// The name the bus gave this connection (`:1.42`).
  package private(set) var uniqueName = ""
  package let limits: Limits

  private let descriptor: FileDescriptor
  private var received: [UInt8] = []
  private var lastSerial: UInt32 = 0
  private var broken: Failure?
  /// False while a message is out in part.
  private var inStep = true

  private static let bus = "org.freedesktop.DBus"
  private static let longestAuthenticationLine = 1024

  private init(descriptor: FileDescriptor, address: DesktopBusAddress, limits: Limits) {
    self.descriptor = descriptor
    self.address = address
    self.limits = limits
  }

  deinit { descriptor.close() }

  /// Connects to the first of `addresses` that answers (as libdbus does), authenticates and
  /// says `Hello`; the failure of the last one tried when none does.
  package static func connect(to addresses: [DesktopBusAddress], limits: Limits = .standard) throws(Failure)
    -> DesktopBusConnection
  {
    var last = Failure.system(.noSuchFile)
    for address in addresses {
      do {
        return try connect(to: address, limits: limits)
      } catch {
        last = error
      }
    }
    throw last
  }

  private static func connect(to address: DesktopBusAddress, limits: Limits) throws(Failure) -> DesktopBusConnection {
    let descriptor: FileDescriptor
    do {
      descriptor = try UnixStreamSocket.open()
    } catch {
      throw .system(error)
    }
    let connection = DesktopBusConnection(descriptor: descriptor, address: address, limits: limits)
    do {
      try UnixStreamSocket.connect(descriptor, to: address.socket)
    } catch {
      throw .system(error)
    }
    let budget = ExchangeBudget(idle: limits.idle, total: limits.total)
    try connection.authenticate(budget)
    let hello = BusMethodCall(
      destination: bus, path: "/org/freedesktop/DBus", interface: bus, member: "Hello")
    // BEGIN goes out with Hello: the bus reads messages from the byte after BEGIN's line.
    let reply = try connection.exchange(hello, before: Array("BEGIN\r\n".utf8), budget)
    guard case .string(let name)? = reply.first, reply.count == 1 else {
      throw .protocolViolation("Hello answered with \"\(reply.map(\.signature).joined())\", not \"s\"")
    }
    connection.uniqueName = name
    return connection
  }

  /// SASL: a NUL byte, `AUTH EXTERNAL` with this user's id as hex of its decimal digits, and
  /// an `OK` to wait for.
  private func authenticate(_ budget: ExchangeBudget) throws(Failure) {
    let user = Array(String(geteuid()).utf8).map { hexByte($0) }.joined()
    try send([0] + Array("AUTH EXTERNAL \(user)\r\n".utf8), budget)
    let line = try readLine(budget)
    if line.hasPrefix("OK ") { return }
    if line.hasPrefix("REJECTED") || line.hasPrefix("ERROR") { throw .rejected(line) }
    throw .protocolViolation("an answer to AUTH that is neither OK, REJECTED nor ERROR")
  }

  /// One line of the authentication exchange, without its CR LF.
  private func readLine(_ budget: ExchangeBudget) throws(Failure) -> String {
    while true {
      if let end = lineEnd() {
        let line = received[..<end]
        received.removeFirst(end + 2)
        guard line.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
          throw .protocolViolation("an authentication line that is not printable ASCII")
        }
        return String(decoding: line, as: UTF8.self)
      }
      guard received.count <= Self.longestAuthenticationLine else { throw .tooLarge(Self.longestAuthenticationLine) }
      try receive(budget)
    }
  }

  private func lineEnd() -> Int? {
    guard received.count >= 2 else { return nil }
    for index in 0..<(received.count - 1) where received[index] == 0x0D && received[index + 1] == 0x0A {
      return index
    }
    return nil
  }

  /// Calls a method and returns its reply's body. An ERROR reply is `.error` with its name and
  /// message. Messages that are not the reply (signals, other peers' calls) are read and
  /// dropped. After a failure that leaves the stream out of step, every later call fails the
  /// same way at once.
  package func call(_ call: BusMethodCall) throws(Failure) -> [BusValue] {
    if let broken { throw broken }
    return try exchange(call, before: [], ExchangeBudget(idle: limits.idle, total: limits.total))
  }

  private func exchange(_ call: BusMethodCall, before prefix: [UInt8], _ budget: ExchangeBudget) throws(Failure)
    -> [BusValue]
  {
    lastSerial = lastSerial == UInt32.max ? 1 : lastSerial + 1
    let serial = lastSerial
    let message = BusMessage(
      kind: .methodCall, serial: serial, path: call.path, interface: call.interface, member: call.member,
      destination: call.destination, body: call.arguments)
    let bytes: [UInt8]
    do {
      bytes = try message.encoded()
    } catch {
      throw .unencodable(error.reason)
    }
    guard bytes.count <= limits.messageSize else { throw .unencodable("a call of \(bytes.count) bytes") }
    do throws(Failure) {
      try send(prefix + bytes, budget)
      while true {
        let reply = try nextMessage(budget)
        guard reply.replySerial == serial else { continue }
        switch reply.kind {
        case .methodReturn: return reply.body
        case .error:
          var text = ""
          if case .string(let first)? = reply.body.first { text = first }
          throw Failure.error(BusErrorReply(name: reply.errorName ?? "", message: text))
        default: continue
        }
      }
    } catch {
      if error.breaksConnection || !inStep { broken = error }
      throw error
    }
  }

  /// The next whole message: read until one is complete, its length checked against the limit
  /// as soon as its first 16 bytes are in.
  private func nextMessage(_ budget: ExchangeBudget) throws(Failure) -> BusMessage {
    while true {
      let length: Int?
      do {
        length = try BusMessage.length(of: received)
      } catch {
        throw .protocolViolation(error.reason)
      }
      if let length {
        guard length <= limits.messageSize else { throw .tooLarge(limits.messageSize) }
        if received.count >= length {
          let bytes = Array(received[..<length])
          received.removeFirst(length)
          do {
            return try BusMessage(decoding: bytes)
          } catch {
            throw .protocolViolation(error.reason)
          }
        }
      }
      try receive(budget)
    }
  }

  /// Waits within the budget for bytes and appends what the socket has. Whole messages are
  /// taken out before more is read, so the buffer never holds much more than one message.
  private func receive(_ budget: ExchangeBudget) throws(Failure) {
    try wait(budget, writing: false)
    let bytes: [UInt8]?
    do {
      bytes = try descriptor.receive(limit: 65_536)
    } catch {
      throw .system(error as? Errno ?? .invalidArgument)
    }
    guard let bytes else { return }
    if bytes.isEmpty { throw .closed }
    received += bytes
  }

  private func send(_ bytes: [UInt8], _ budget: ExchangeBudget) throws(Failure) {
    var offset = 0
    while offset < bytes.count {
      let taken: Int?
      do {
        taken = try descriptor.send(bytes[offset...])
      } catch {
        throw .system(error as? Errno ?? .invalidArgument)
      }
      guard let taken else { throw .closed }
      offset += taken
      // Part of a message is out: until the rest follows, the stream is out of step.
      inStep = offset == bytes.count
      if !inStep { try wait(budget, writing: true) }
    }
  }

  private func wait(_ budget: ExchangeBudget, writing: Bool) throws(Failure) {
    do {
      try budget.waitUntilReady(descriptor, writing: writing)
    } catch {
      switch error {
      case .timedOut(let limit): throw .timedOut(limit)
      case .system(let error): throw .system(error)
      }
    }
  }
}
