import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// One request and its answer over a local (AF_UNIX stream) socket that belongs to another
/// program — wireguard-go's control socket — bounded in time and size: the other end may be
/// stuck, slow, hostile or gone, and the caller (a `status` a person waits for) must not be.
public enum LocalSocketExchange {
  /// Why an exchange ended without a whole answer.
  public enum Failure: Error, Hashable, Sendable {
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
  public enum Peer: Hashable, Sendable {
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
  /// everything read so far. Fails when no byte arrives for `idle` (the one wait is
  /// `waitForReadable`), when the exchange takes longer than `total`, or when the answer exceeds
  /// `limit` bytes. The descriptor is non-blocking from the start, so not even `connect` can hang.
  /// With `peer`, the request goes out only when the kernel says that process or user serves it.
  public static func exchange(
    path: SystemPath, request: [UInt8], limit: Int, idle: Duration, total: Duration, peer: Peer? = nil,
    isComplete: ([UInt8]) -> Bool
  ) throws(Failure) -> [UInt8] {
    let started = SystemClock.monotonic
    let fd: FileDescriptor
    do {
      fd = FileDescriptor(
        rawValue: try retryingInterrupts {
          socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        })
    } catch let error as Errno {
      throw .system(error)
    } catch {
      throw .system(.invalidArgument)
    }
    defer { fd.close() }
    try connect(fd, to: path)
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
    let totalNanoseconds = total.nanoseconds
    let idleNanoseconds = idle.nanoseconds
    while true {
      let elapsed = SystemClock.monotonic - started
      if elapsed >= totalNanoseconds { throw .timedOut(total) }
      let wait = min(idleNanoseconds, totalNanoseconds - elapsed)
      let waitStarted = SystemClock.monotonic
      let ready: [FileDescriptor]
      do {
        ready = try waitForReadable([fd], timeout: .nanoseconds(wait))
      } catch {
        throw .system(error as? Errno ?? .invalidArgument)
      }
      if ready.isEmpty {
        // A signal cuts poll short and returns nothing: only a full idle wait is a timeout.
        if SystemClock.monotonic - waitStarted >= wait {
          throw .timedOut(wait < idleNanoseconds ? total : idle)
        }
        continue
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

  private static func connect(_ fd: FileDescriptor, to path: SystemPath) throws(Failure) {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard path.bytes.count < capacity, !path.bytes.contains(0) else { throw .system(Errno(rawValue: ENAMETOOLONG)) }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      for (index, byte) in path.bytes.enumerated() { raw[index] = byte }
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + path.bytes.count + 1)
    do {
      _ = try withUnsafePointer(to: &address) { pointer in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
          try retryingInterrupts { Glibc.connect(fd.rawValue, socketAddress, length) }
        }
      }
    } catch let error as Errno {
      throw .system(error)
    } catch {
      throw .system(.invalidArgument)
    }
  }
}
