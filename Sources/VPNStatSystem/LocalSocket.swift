import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// One request and its answer over a local (AF_UNIX stream) socket that belongs to another
/// program — wireguard-go's control socket — bounded in time and size: the other end may be
/// stuck, slow, hostile or gone, and the caller (a `status` a person waits for) must not be.
package enum LocalSocketExchange {
  /// Why an exchange ended without a whole answer.
  package enum Failure: Error, Hashable, Sendable {
    /// A system call failed: ENOENT (no socket), EACCES (not ours), ECONNREFUSED (nobody
    /// listens), EAGAIN (its backlog is full), ENAMETOOLONG (the path does not fit a sockaddr).
    case system(Errno)
    /// No byte came for `idle`, or the whole answer took longer than `total`.
    case timedOut(Duration)
    /// The answer grew past the limit.
    case tooLarge(Int)
    /// The other end closed (or reset the connection) before the answer was complete; what came
    /// is kept (to be parsed or discarded by the caller).
    case closedEarly([UInt8])
    /// The socket is served by another process or user than the one required (the kernel's
    /// word on who listens: pid and user, nil when it would not say): nothing was sent. Any user
    /// may bind a socket at a path it can write, or name one in its arguments.
    case wrongPeer(pid: Int32?, user: UInt32?)
  }

  /// Who must serve the socket for a request to be sent: the kernel records the pid and user of
  /// the process that called `listen` (SO_PEERCRED).
  package enum Peer: Hashable, Sendable {
    /// Exactly this process (OpenVPN serves its management socket itself).
    case process(Int32)
    /// A process of root or of this process's user (wireguard-go listens before it forks, so
    /// its pid is gone).
    case rootOrSelf
  }

  /// A peer that hung up: how a send or receive learns that the other end closed.
  static func meansClosed(_ error: Errno) -> Bool {
    error == .brokenPipe || error.rawValue == ECONNRESET
  }

  /// Connects to the socket at `path`, sends `request`, and reads until `isComplete` holds for
  /// everything read so far. Fails when no byte arrives for `idle` (`ExchangeBudget`, through the
  /// one wait), when the exchange takes longer than `total`, or when the answer exceeds
  /// `limit` bytes. The descriptor is non-blocking from the start, so not even `connect` can hang.
  /// With `peer`, the request goes out only when the kernel says that process or user serves it.
  package static func exchange(
    path: SystemPath, request: [UInt8], limit: Int, idle: Duration, total: Duration, peer: Peer? = nil,
    isComplete: ([UInt8]) -> Bool
  ) throws(Failure) -> [UInt8] {
    let budget = ExchangeBudget(idle: idle, total: total)
    let fd: FileDescriptor
    do {
      fd = try UnixStreamSocket.open()
    } catch {
      throw .system(error)
    }
    defer { fd.close() }
    do {
      try UnixStreamSocket.connect(fd, to: .path(path))
    } catch {
      throw .system(error)
    }
    if let peer {
      var pid: Int32 = 0
      var user: UInt32 = 0
      guard clinux_peer_credentials(fd.rawValue, &pid, &user) == 0 else { throw .wrongPeer(pid: nil, user: nil) }
      let served: Bool
      switch peer {
      case .process(let wanted): served = pid == wanted
      case .rootOrSelf: served = user == 0 || user == geteuid()
      }
      guard served else { throw .wrongPeer(pid: pid > 0 ? pid : nil, user: user) }
    }
    do {
      try request.withUnsafeBytes { raw in
        var offset = 0
        while offset < raw.count {
          // MSG_NOSIGNAL: a peer that closed gives EPIPE here, never SIGPIPE.
          offset += try retryingInterrupts {
            send(fd.rawValue, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
          }
        }
      }
    } catch let error as Errno {
      throw meansClosed(error) ? .closedEarly([]) : .system(error)
    } catch {
      throw .system(.invalidArgument)
    }

    var answer: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16_384)
    while true {
      do {
        try budget.waitUntilReady(fd)
      } catch {
        switch error {
        case .timedOut(let limit): throw .timedOut(limit)
        case .system(let error): throw .system(error)
        }
      }
      let count: Int
      do {
        count = try chunk.withUnsafeMutableBytes { raw in
          try retryingInterrupts { recv(fd.rawValue, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT)) }
        }
      } catch let error as Errno where error == .wouldBlock {
        continue
      } catch let error as Errno {
        throw meansClosed(error) ? .closedEarly(answer) : .system(error)
      } catch {
        throw .system(.invalidArgument)
      }
      if count == 0 { throw .closedEarly(answer) }
      if answer.count + count > limit { throw .tooLarge(limit) }
      answer.append(contentsOf: chunk[0..<count])
      if isComplete(answer) { return answer }
    }
  }
}

/// The time one exchange with another program may take: no byte for `idle`, or all of it longer
/// than `total`, ends it, whatever the peer does meanwhile. Every wait of the exchange draws on it.
struct ExchangeBudget {
  enum Failure: Error {
    /// No byte came for the idle time, or the whole exchange took its total.
    case timedOut(Duration)
    case system(Errno)
  }

  let idle: Duration
  let total: Duration
  let started = SystemClock.monotonic

  /// Returns when `fd` is readable (with `writing`: writable), through the one wait
  /// (`waitForReadiness`), or throws which limit passed first.
  func waitUntilReady(_ fd: FileDescriptor, writing: Bool = false) throws(Failure) {
    let totalNanoseconds = total.nanoseconds
    let idleNanoseconds = idle.nanoseconds
    while true {
      let elapsed = SystemClock.monotonic - started
      if elapsed >= totalNanoseconds { throw .timedOut(total) }
      let wait = min(idleNanoseconds, totalNanoseconds - elapsed)
      let waitStarted = SystemClock.monotonic
      let ready: (readable: [FileDescriptor], writable: [FileDescriptor])
      do {
        ready = try waitForReadiness(
          reading: writing ? [] : [fd], writing: writing ? [fd] : [], timeout: .nanoseconds(wait))
      } catch {
        throw .system(error as? Errno ?? .invalidArgument)
      }
      if !ready.readable.isEmpty || !ready.writable.isEmpty { return }
      // Only a full idle wait is a timeout (the one wait makes an interrupted poll again for the
      // rest of it, so it returns nothing sooner).
      if SystemClock.monotonic - waitStarted >= wait {
        throw .timedOut(wait < idleNanoseconds ? total : idle)
      }
    }
  }
}

/// Where an AF_UNIX socket is: a file system path, or a name in the network namespace's abstract
/// namespace (Linux; the session bus of many desktops listens there).
package enum UnixSocketName: Hashable, Sendable {
  case path(SystemPath)
  case abstract([UInt8])
}

/// The AF_UNIX stream sockets vpnstat connects to another program's: made non-blocking from
/// the start, so no call on them can hang.
enum UnixStreamSocket {
  /// A new non-blocking, close-on-exec AF_UNIX stream socket.
  static func open() throws(Errno) -> FileDescriptor {
    do {
      return FileDescriptor(
        rawValue: try retryingInterrupts {
          socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        })
    } catch {
      throw error as? Errno ?? .invalidArgument
    }
  }

  /// Connects `fd` to `name`: ENOENT (no socket), EACCES (not ours), ECONNREFUSED (nobody
  /// listens), EAGAIN (its backlog is full), ENAMETOOLONG (the name does not fit a sockaddr).
  static func connect(_ fd: FileDescriptor, to name: UnixSocketName) throws(Errno) {
    try name.withSocketAddress { (address, length) throws(Errno) in
      _ = try Errno.retrying { Glibc.connect(fd.rawValue, address, length) }
    }
  }
}

extension UnixSocketName {
  /// The name as a `sockaddr_un` and its length, for `connect` and `sendto`.
  func withSocketAddress<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(Errno) -> R) throws(Errno) -> R {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    // A path ends in a NUL that the length counts; an abstract name starts with one and is
    // exactly as long as its bytes (a NUL inside it is part of the name).
    let bytes: [UInt8]
    switch self {
    case .path(let path):
      guard !path.bytes.contains(0) else { throw Errno(rawValue: ENAMETOOLONG) }
      bytes = path.bytes + [0]
    case .abstract(let name):
      bytes = [0] + name
    }
    guard bytes.count <= capacity else { throw Errno(rawValue: ENAMETOOLONG) }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in bytes.enumerated() { raw[index] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
    return try withUnsafePointer(to: &address) { (pointer) throws(Errno) -> R in
      try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (socketAddress) throws(Errno) -> R in
        try body(socketAddress, length)
      }
    }
  }
}
