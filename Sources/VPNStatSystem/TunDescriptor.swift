import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// Which device another process's tun descriptor is attached to, asked of the descriptor
/// itself. `/proc/PID/fdinfo`'s `iff:` line gives a name only, and any user may make a tun of
/// any name in a network namespace of their own (`unshare -Urn`) and hand its descriptor to a
/// process here: a name proves nothing. A copy of the descriptor (`pidfd_getfd`) answers
/// `TUNGETIFF` with the device's name and `TUNGETDEVNETNS` with its network namespace, which is
/// compared with this process's. Needs root (ptrace rights over the holder, CAP_NET_ADMIN).
package enum TunDescriptor {
  /// What the descriptor is attached to.
  package enum Attachment: Hashable, Sendable {
    /// The device of this name in this process's network namespace.
    case here(InterfaceName)
    /// A device in another network namespace (whatever its name).
    case elsewhere
    /// No device: the descriptor is not a tun, or not attached yet.
    case none
  }

  /// The attachment of descriptor `fd` of process `pid`; throws when it cannot be told (the
  /// process exited, or this process may not copy its descriptors: not root).
  package static func attachment(pid: Int32, fd: Int32) throws(Errno) -> Attachment {
    let pidfd: Int32
    let copy: Int32
    do {
      pidfd = try retryingInterrupts { clinux_pidfd_open(pid) }
    } catch {
      throw error as? Errno ?? .invalidArgument
    }
    defer { FileDescriptor(rawValue: pidfd).close() }
    do {
      copy = try retryingInterrupts { clinux_pidfd_getfd(pidfd, fd) }
    } catch {
      throw error as? Errno ?? .invalidArgument
    }
    defer { FileDescriptor(rawValue: copy).close() }
    // A struct ifreq (40 bytes; the name is its first IFNAMSIZ): Glibc's and the kernel's
    // headers both declare the type, and Swift will not take both.
    var request = [UInt8](repeating: 0, count: 64)
    let asked = request.withUnsafeMutableBytes { raw in
      Result { () throws(Errno) in try Errno.retrying { clinux_ioctl_ptr(copy, clinux_tungetiff(), raw.baseAddress) } }
    }
    if case .failure(let error) = asked {
      // EBADFD: a tun not attached to a device yet; ENOTTY/EINVAL: not a tun at all.
      if error.rawValue == EBADFD || error.rawValue == ENOTTY || error.rawValue == EINVAL { return .none }
      throw error
    }
    let namespace = try Errno.retrying { clinux_ioctl_int(copy, clinux_tungetdevnetns(), 0) }
    defer { FileDescriptor(rawValue: namespace).close() }
    var theirs = stat()
    var ours = stat()
    _ = try Errno.retrying { fstat(namespace, &theirs) }
    _ = try Errno.retrying { stat("/proc/self/ns/net", &ours) }
    guard theirs.st_dev == ours.st_dev, theirs.st_ino == ours.st_ino else { return .elsewhere }
    return .here(InterfaceName(bytes: request.prefix(16).prefix { $0 != 0 }))
  }
}
