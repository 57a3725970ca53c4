import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// IP addresses as numeric text, both ways (`inet_pton`, `inet_ntop`): no name lookups.
package enum NumericAddress {
  /// The address `text` writes, in network order: 4 bytes for an IPv4 dotted quad, 16 for IPv6
  /// text; nil for anything else.
  package static func parse(_ text: String) -> [UInt8]? {
    var v4 = in_addr()
    if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
    var v6 = in6_addr()
    if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
    return nil
  }

  /// `address` (4 or 16 bytes, network order) as `inet_ntop` writes it: IPv6 in RFC 5952's
  /// form. Nil for another length.
  package static func text(_ address: [UInt8]) -> String? {
    guard address.count == 4 || address.count == 16 else { return nil }
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
    let written = address.withUnsafeBytes { raw in
      inet_ntop(address.count == 4 ? AF_INET : AF_INET6, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
    }
    guard written else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}

/// An address and port to listen on, as people write one: `127.0.0.1:9586`, `0.0.0.0:9586`,
/// `[::1]:9586`, `[::]:9586`. The address must be numeric (no name lookups).
package struct ListenAddress: Hashable, Sendable, CustomStringConvertible {
  package enum Family: Sendable { case ipv4, ipv6 }
  package var family: Family
  /// The address in network byte order: 4 bytes or 16.
  package var address: [UInt8]
  package var port: UInt16

  /// Parses `ADDR:PORT` or `[ADDR]:PORT` (port 0 lets the kernel choose); nil for anything else.
  package init?(parsing text: String) {
    guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
      return nil
    }
    var host = String(text[..<colon])
    let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
    if bracketed { host = String(host.dropFirst().dropLast()) }
    // IPv6 only in brackets, IPv4 only without.
    guard let address = NumericAddress.parse(host), address.count == (bracketed ? 16 : 4) else { return nil }
    family = bracketed ? .ipv6 : .ipv4
    self.address = address
    self.port = port
  }

  init(family: Family, address: [UInt8], port: UInt16) {
    self.family = family
    self.address = address
    self.port = port
  }

  /// `127.0.0.1:9586` or `[::1]:9586`.
  package var description: String {
    let text = NumericAddress.text(address) ?? "?"
    return family == .ipv4 ? "\(text):\(port)" : "[\(text)]:\(port)"
  }

  /// The address as a `sockaddr_in` or `sockaddr_in6`, for `body`.
  func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
    switch family {
    case .ipv4:
      var socketAddress = sockaddr_in()
      socketAddress.sin_family = sa_family_t(AF_INET)
      socketAddress.sin_port = port.bigEndian
      withUnsafeMutableBytes(of: &socketAddress.sin_addr) { $0.copyBytes(from: address) }
      return try withUnsafePointer(to: &socketAddress) {
        try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
      }
    case .ipv6:
      var socketAddress = sockaddr_in6()
      socketAddress.sin6_family = sa_family_t(AF_INET6)
      socketAddress.sin6_port = port.bigEndian
      withUnsafeMutableBytes(of: &socketAddress.sin6_addr) { $0.copyBytes(from: address) }
      return try withUnsafePointer(to: &socketAddress) {
        try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
        }
      }
    }
  }
}

/// A TCP socket listening on one address, non-blocking: `accept` never waits, so one loop can
/// serve it beside everything else it waits for.
package final class ListeningSocket: @unchecked Sendable {
  package let descriptor: FileDescriptor
  /// The address it listens on (with the port the kernel chose, for port 0).
  package let address: ListenAddress

  /// A failure to listen, naming the address.
  package struct Failure: Error, CustomStringConvertible {
    package var address: ListenAddress
    package var error: Errno
    package var description: String { "cannot listen on \(address): \(error)" }
  }

  package init(_ address: ListenAddress, backlog: Int32 = 128) throws {
    let domain = address.family == .ipv4 ? AF_INET : AF_INET6
    let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    let fd: Int32
    do {
      fd = try retryingInterrupts { socket(domain, type, 0) }
    } catch let error as Errno {
      throw Failure(address: address, error: error)
    }
    descriptor = FileDescriptor(rawValue: fd)
    do {
      var on: Int32 = 1
      _ = try retryingInterrupts {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
      }
      _ = try address.withSocketAddress { pointer, length in try retryingInterrupts { bind(fd, pointer, length) } }
      _ = try retryingInterrupts { listen(fd, backlog) }
      var bound = sockaddr_storage()
      var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
      _ = try withUnsafeMutablePointer(to: &bound) {
        try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
          try retryingInterrupts { getsockname(fd, pointer, &length) }
        }
      }
      let port = withUnsafeBytes(of: bound) { raw in UInt16(raw[2]) << 8 | UInt16(raw[3]) }
      self.address = ListenAddress(family: address.family, address: address.address, port: port)
    } catch let error as Errno {
      descriptor.close()
      throw Failure(address: address, error: error)
    }
  }

  /// The next waiting connection, non-blocking and close-on-exec; nil when none is waiting
  /// (or it went away before it was taken, or descriptors ran out: it waits in the backlog).
  package func accept() throws -> FileDescriptor? {
    do {
      let flags = Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
      return FileDescriptor(rawValue: try retryingInterrupts { clinux_accept4(descriptor.rawValue, flags) })
    } catch let error as Errno
      where [EAGAIN, EWOULDBLOCK, ECONNABORTED, EPROTO, EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.rawValue)
    {
      return nil
    }
  }

  deinit { descriptor.close() }
}

extension FileDescriptor {
  /// Reads what a non-blocking socket has, up to `limit` bytes: nil when nothing is there yet,
  /// empty at the end of the stream (or when the peer reset it).
  package func receive(limit: Int) throws -> [UInt8]? {
    var buffer = [UInt8](repeating: 0, count: max(1, limit))
    do {
      let n = try buffer.withUnsafeMutableBytes { raw in
        try retryingInterrupts { recv(rawValue, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT)) }
      }
      return Array(buffer[0..<n])
    } catch let error as Errno where error.rawValue == EAGAIN || error.rawValue == EWOULDBLOCK {
      return nil
    } catch let error as Errno where Self.peerGone.contains(error.rawValue) {
      return []
    }
  }

  /// Writes what a non-blocking socket takes now of `bytes`, without SIGPIPE: how many it
  /// took (0 when it takes nothing now); nil when the peer is gone.
  package func send(_ bytes: ArraySlice<UInt8>) throws -> Int? {
    do {
      return try bytes.withUnsafeBytes { raw in
        try retryingInterrupts {
          Glibc.send(rawValue, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
        }
      }
    } catch let error as Errno where error.rawValue == EAGAIN || error.rawValue == EWOULDBLOCK {
      return 0
    } catch let error as Errno where Self.peerGone.contains(error.rawValue) {
      return nil
    }
  }

  /// What a socket says when its peer reset or abandoned the connection.
  static let peerGone: Set<Int32> = [ECONNRESET, EPIPE, ETIMEDOUT, ENOTCONN]

  /// Ends this side's sending (the peer reads the end of the stream); reading goes on.
  package func shutdownWriting() {
    _ = shutdown(rawValue, Int32(SHUT_WR))
  }
}

/// A descriptor another thread can make readable, to wake a loop waiting on it (and ask it to
/// stop): an eventfd.
package final class WakeUp: @unchecked Sendable {
  package let descriptor: FileDescriptor

  package init() throws {
    let fd = try retryingInterrupts { eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC)) }
    descriptor = FileDescriptor(rawValue: fd)
  }

  /// Makes the descriptor readable (it stays so until `consume`).
  package func signal() {
    var one: UInt64 = 1
    // EAGAIN means the counter is full: it is readable already, which is all a signal asks.
    _ = try? Errno.retrying { write(descriptor.rawValue, &one, 8) }
  }

  /// True when `signal` was called since the last consume.
  package func consume() -> Bool {
    var count: UInt64 = 0
    return (try? Errno.retrying { read(descriptor.rawValue, &count, 8) }) == 8
  }

  deinit { descriptor.close() }
}

/// A thread of its own for work that must never wait on the caller's loop (the metrics server
/// beside the recorder). It starts with every signal blocked: stop signals keep arriving where
/// the main loop reads them (its signalfd), never at this thread.
package enum BackgroundThread {
  private final class Body {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
  }

  package static func start(_ run: @escaping @Sendable () -> Void) throws {
    var all = sigset_t()
    var previous = sigset_t()
    sigfillset(&all)
    pthread_sigmask(SIG_SETMASK, &all, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    let body = Unmanaged.passRetained(Body(run)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(
      &thread, nil,
      { raw in
        guard let raw else { return nil }
        Unmanaged<Body>.fromOpaque(raw).takeRetainedValue().run()
        return nil
      }, body)
    guard rc == 0 else {
      Unmanaged<Body>.fromOpaque(body).release()
      throw Errno(rawValue: rc)
    }
    pthread_detach(thread)
  }
}

extension IPRange {
  /// `ADDRESS/LENGTH` as WireGuard's control socket writes an allowed IP (`10.0.0.0/24`,
  /// `fd00::/64`); nil for anything else.
  package init?(parsing text: some Collection<UInt8>) {
    guard text.count <= 64, let slash = text.firstIndex(of: 0x2F),
      let length = Int(String(decoding: text[text.index(after: slash)...], as: UTF8.self))
    else { return nil }
    guard let address = NumericAddress.parse(String(decoding: text[..<slash], as: UTF8.self)) else { return nil }
    self.init(address: address, prefixLength: length)
  }
}

/// One empty UDP datagram sent into one network device and no further: the socket is bound to
/// the device (`SO_BINDTODEVICE`: the kernel routes it out of that device or not at all, the
/// routing table notwithstanding), with a TTL (hop limit) of 1, so a router past the device —
/// a VPN peer that would forward it — drops it. What `connect` sends into a WireGuard tunnel to
/// make it shake hands.
package enum DeviceDatagram {
  /// Sends it to `address` (4 or 16 bytes), `port`, through `device`.
  package static func send(to address: [UInt8], port: UInt16, through device: InterfaceName) throws {
    let family = address.count == 4 ? AF_INET : AF_INET6
    let fd = FileDescriptor(
      rawValue: try retryingInterrupts { socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })
    defer { fd.close() }
    var name = device.bytes
    _ = try retryingInterrupts {
      setsockopt(fd.rawValue, SOL_SOCKET, SO_BINDTODEVICE, &name, socklen_t(name.count))
    }
    var one: Int32 = 1
    _ = try retryingInterrupts {
      family == AF_INET
        ? setsockopt(fd.rawValue, Int32(IPPROTO_IP), IP_TTL, &one, socklen_t(MemoryLayout<Int32>.size))
        : setsockopt(fd.rawValue, Int32(IPPROTO_IPV6), IPV6_UNICAST_HOPS, &one, socklen_t(MemoryLayout<Int32>.size))
    }
    let destination = ListenAddress(family: family == AF_INET ? .ipv4 : .ipv6, address: address, port: port)
    _ = try destination.withSocketAddress { pointer, length in
      try retryingInterrupts { sendto(fd.rawValue, nil, 0, 0, pointer, length) }
    }
  }
}
