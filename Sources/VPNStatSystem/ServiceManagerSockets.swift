import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// An AF_UNIX datagram socket that sends to one of systemd's: the readiness protocol's
/// (`NOTIFY_SOCKET`, sd_notify(3)) or the journal's native one (`/run/systemd/journal/socket`,
/// systemd-journald.socket(8)). The documented datagrams, written here rather than through
/// libsystemd: a few lines of protocol against a library linked into a static binary.
/// Non-blocking: a service manager or journal that does not read never holds up root; a datagram
/// it would not take is an error the caller falls back from.
package final class ServiceManagerSocket: @unchecked Sendable {
  let descriptor: FileDescriptor
  package let destination: UnixSocketName

  package init(to destination: UnixSocketName) throws(Errno) {
    descriptor = FileDescriptor(
      rawValue: try Errno.retrying {
        socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
      })
    self.destination = destination
  }

  deinit { descriptor.close() }

  /// `NOTIFY_SOCKET`'s value as a name: a path, or `@name` in the abstract namespace.
  package static func name(notifySocket value: String) -> UnixSocketName? {
    if value.hasPrefix("@") { return .abstract(Array(value.utf8.dropFirst())) }
    guard value.hasPrefix("/") else { return nil }
    return .path(SystemPath(value))
  }

  /// One datagram, whole or not at all (EAGAIN when the receiver's queue is full, EMSGSIZE when
  /// it is too large, ENOENT/ECONNREFUSED when nobody listens).
  package func send(_ bytes: [UInt8]) throws(Errno) {
    let fd = descriptor.rawValue
    try destination.withSocketAddress { (address, length) throws(Errno) in
      let failure = bytes.withUnsafeBytes { (raw) -> Errno? in
        do throws(Errno) {
          _ = try Errno.retrying { sendto(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL), address, length) }
          return nil
        } catch {
          return error
        }
      }
      if let failure { throw failure }
    }
  }
}

/// The journal's native protocol: fields `NAME=value\n`; a value with a newline as `NAME\n`, its
/// length as 64-bit little-endian, the bytes and `\n` (systemd's JOURNAL_NATIVE_PROTOCOL).
package enum JournalEntry {
  package static func encode(_ fields: [(name: String, value: String)]) -> [UInt8] {
    var bytes: [UInt8] = []
    for (name, value) in fields {
      let data = Array(value.utf8)
      bytes += Array(name.utf8)
      if data.contains(0x0A) {
        bytes.append(0x0A)
        var length = UInt64(data.count).littleEndian
        withUnsafeBytes(of: &length) { bytes += $0 }
        bytes += data
      } else {
        bytes.append(0x3D)
        bytes += data
      }
      bytes.append(0x0A)
    }
    return bytes
  }

  /// Whether `descriptor` (stderr) is the journal's stream, as systemd says in `JOURNAL_STREAM`
  /// ("DEVICE:INODE" of the socket it connected stderr to): then entries go to the journal
  /// natively instead. A process whose stderr was redirected since is not.
  package static func isJournalStream(_ descriptor: FileDescriptor, journalStream value: String?) -> Bool {
    guard let value, let colon = value.firstIndex(of: ":"),
      let device = UInt64(value[..<colon]), let inode = UInt64(value[value.index(after: colon)...])
    else { return false }
    var info = stat()
    guard (try? Errno.retrying({ fstat(descriptor.rawValue, &info) })) != nil else { return false }
    return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
  }
}
