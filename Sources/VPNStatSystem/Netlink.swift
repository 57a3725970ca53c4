import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// A netlink socket — NETLINK_ROUTE unless asked for another family (NETLINK_GENERIC for
/// WireGuard): dumps (request → every reply message) and, when bound to groups, the kernel's
/// notifications. The only code that speaks netlink framing.
package final class NetlinkSocket {
  package let descriptor: FileDescriptor
  private var sequence: UInt32 = 1
  private let buffer: UnsafeMutableRawBufferPointer

  /// The rtnetlink multicast group for link changes (`RTNLGRP_LINK`).
  package static let linkGroup: UInt32 = 1 << (UInt32(RTNLGRP_LINK.rawValue) - 1)

  /// The generic netlink family (`NETLINK_GENERIC`), where WireGuard's family lives.
  package static let generic = NETLINK_GENERIC

  /// Opens and binds a socket; `groups` subscribes to notifications (e.g. `linkGroup`).
  /// `nonBlocking` sockets return what is queued and never wait.
  package init(
    protocol netlinkProtocol: Int32 = NETLINK_ROUTE, groups: UInt32 = 0, nonBlocking: Bool = false,
    receiveBuffer: Int32 = 0
  ) throws {
    let type =
      Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
      | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
    let fd = try retryingInterrupts { socket(AF_NETLINK, type, netlinkProtocol) }
    descriptor = FileDescriptor(rawValue: fd)
    buffer = .allocate(byteCount: 1 << 18, alignment: 8)
    if receiveBuffer > 0 {
      // SO_RCVBUF is capped by net.core.rmem_max (often 208 KiB); root may force the size.
      var size = receiveBuffer
      if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
      }
    }
    var address = sockaddr_nl()
    address.nl_family = sa_family_t(AF_NETLINK)
    address.nl_groups = groups
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
      }
    }
    if bound != 0 {
      let error = Errno.current
      descriptor.close()
      buffer.deallocate()
      throw error
    }
  }

  deinit {
    descriptor.close()
    buffer.deallocate()
  }

  /// Sends one request message: a header of `type` and `flags` and then `payload`.
  /// Returns the sequence number used.
  @discardableResult
  package func send(type: UInt16, flags: UInt16, payload: [UInt8]) throws -> UInt32 {
    sequence &+= 1
    let headerLength = Int(clinux_nlmsg_hdrlen())
    let length = headerLength + payload.count
    var kernel = sockaddr_nl()
    kernel.nl_family = sa_family_t(AF_NETLINK)
    // Made on the stack: an array made for it went through the standard library's shared
    // allocation at every request, a recorder's every second (docs/performance.md).
    let sent = try withUnsafeTemporaryAllocation(byteCount: length, alignment: 4) { raw -> Int in
      raw.initializeMemory(as: UInt8.self, repeating: 0)
      raw.storeBytes(of: UInt32(length), toByteOffset: 0, as: UInt32.self)
      raw.storeBytes(of: type, toByteOffset: 4, as: UInt16.self)
      raw.storeBytes(of: flags, toByteOffset: 6, as: UInt16.self)
      raw.storeBytes(of: sequence, toByteOffset: 8, as: UInt32.self)
      payload.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: raw[headerLength...]).copyMemory(from: $0) }
      return try withUnsafePointer(to: &kernel) { (pointer) -> Int in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) -> Int in
          try retryingInterrupts {
            sendto(
              descriptor.rawValue, raw.baseAddress, raw.count, 0, address,
              socklen_t(MemoryLayout<sockaddr_nl>.size))
          }
        }
      }
    }
    if sent != length { throw Errno(rawValue: EMSGSIZE) }
    return sequence
  }

  /// Sends a dump request and calls `body` with every reply message until the dump is done.
  package func dump(
    type: UInt16, payload: [UInt8], _ body: (NetlinkMessage) -> Void
  ) throws {
    let flags = UInt16(NLM_F_REQUEST | NLM_F_DUMP)
    let seq = try send(type: type, flags: flags, payload: payload)
    var done = false
    while !done {
      let count = try receive(blocking: true)
      try NetlinkMessage.forEach(in: UnsafeRawBufferPointer(rebasing: buffer[0..<count])) {
        (message) in
        guard message.sequence == seq else { return }
        switch message.type {
        case UInt16(NLMSG_DONE):
          done = true
        case UInt16(NLMSG_ERROR):
          let code = message.payload.count >= 4 ? message.payload.loadUnaligned(as: Int32.self) : 0
          if code != 0 { throw Errno(rawValue: -code) }
          done = true
        default:
          body(message)
        }
      }
    }
  }

  /// Sends one request (not a dump) with NLM_F_ACK and passes the reply messages to `body`
  /// until the kernel's acknowledgement or error arrives: the one way vpnstat asks the kernel
  /// one thing (a link by name or index) or tells it one (set a link down).
  package func request(type: UInt16, payload: [UInt8], _ body: (NetlinkMessage) -> Void = { _ in }) throws {
    let seq = try send(type: type, flags: UInt16(NLM_F_REQUEST | NLM_F_ACK), payload: payload)
    var done = false
    while !done {
      let count = try receive(blocking: true)
      try NetlinkMessage.forEach(in: UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { message in
        guard message.sequence == seq else { return }
        if message.type == UInt16(NLMSG_ERROR) {
          let code = message.payload.count >= 4 ? message.payload.loadUnaligned(as: Int32.self) : 0
          if code != 0 { throw Errno(rawValue: -code) }
          done = true
        } else if message.type == UInt16(NLMSG_DONE) {
          done = true
        } else {
          body(message)
        }
      }
    }
  }

  /// Calls `body` with every notification already queued, without waiting.
  /// Throws ENOBUFS when the kernel dropped notifications: the caller must resynchronise.
  package func drainNotifications(_ body: (NetlinkMessage) -> Void) throws {
    while try receiveNotifications(body) {}
  }

  /// Calls `body` with the notifications of one receive, without waiting; false when none
  /// was queued. Throws ENOBUFS when the kernel dropped notifications.
  package func receiveNotifications(_ body: (NetlinkMessage) -> Void) throws -> Bool {
    let count: Int
    do {
      count = try receive(blocking: false)
    } catch let error as Errno where error == .wouldBlock {
      return false
    }
    if count == 0 { return false }
    NetlinkMessage.forEach(in: UnsafeRawBufferPointer(rebasing: buffer[0..<count]), body)
    return true
  }

  private func receive(blocking: Bool) throws -> Int {
    let flags = blocking ? Int32(0) : Int32(MSG_DONTWAIT)
    let count = try retryingInterrupts {
      recv(descriptor.rawValue, buffer.baseAddress, buffer.count, flags)
    }
    return count
  }
}

/// One netlink message inside a receive buffer; valid only during the callback that got it.
package struct NetlinkMessage {
  package let type: UInt16
  package let flags: UInt16
  package let sequence: UInt32
  /// The bytes after the netlink header.
  package let payload: UnsafeRawBufferPointer

  static func forEach(
    in buffer: UnsafeRawBufferPointer, _ body: (NetlinkMessage) throws -> Void
  ) rethrows {
    let headerLength = Int(clinux_nlmsg_hdrlen())
    var offset = 0
    while offset + headerLength <= buffer.count {
      let length = Int(buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
      guard length >= headerLength, offset + length <= buffer.count else { return }
      let message = NetlinkMessage(
        type: buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self),
        flags: buffer.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self),
        sequence: buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self),
        payload: UnsafeRawBufferPointer(rebasing: buffer[(offset + headerLength)..<(offset + length)]))
      try body(message)
      offset += Int(clinux_nlmsg_align(UInt32(length)))
    }
  }
}
