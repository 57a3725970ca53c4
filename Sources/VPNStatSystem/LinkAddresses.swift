import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// One link as glibc's `getifaddrs` lists it: the name, the ifindex, the ARPHRD type where
/// known, the flags, and the AF_PACKET entry's `struct rtnl_link_stats` (24 × u32: the kernel
/// truncates its 64-bit counters into it, so they wrap at 2³²).
package struct LinkAddressEntry: Sendable {
  package var name: [UInt8]
  package var index: Int32
  package var arpType: UInt16?
  package var flags: UInt32
  /// rx_packets, tx_packets, rx_bytes, tx_bytes, rx_errors, tx_errors, rx_dropped, tx_dropped.
  package var statistics: [UInt32]
}

/// glibc's `getifaddrs`, the call Apple platforms use: every link that carries statistics.
package enum LinkAddresses {
  package static func links() throws -> [LinkAddressEntry] {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { throw Errno.current }
    defer { freeifaddrs(list) }
    var result: [LinkAddressEntry] = []
    var entry = list
    while let current = entry {
      defer { entry = current.pointee.ifa_next }
      // Link entries are the ones carrying statistics. glibc fills their AF_PACKET address only
      // when the link has a hardware address: a tun or wireguard device has none, so its entry
      // comes with `ifa_addr == NULL` and the ifindex must be looked up by name.
      guard let data = current.pointee.ifa_data, let cName = current.pointee.ifa_name else { continue }
      let index: Int32
      var arpType: UInt16?
      if let address = current.pointee.ifa_addr {
        guard Int32(address.pointee.sa_family) == AF_PACKET else { continue }
        // struct sockaddr_ll: family u16, protocol u16, ifindex i32, hatype u16 …
        let raw = UnsafeRawPointer(address)
        index = raw.loadUnaligned(fromByteOffset: 4, as: Int32.self)
        arpType = raw.loadUnaligned(fromByteOffset: 8, as: UInt16.self)
      } else {
        let found = if_nametoindex(cName)
        // Gone since getifaddrs listed it: leave it out.
        guard found != 0 else { continue }
        index = Int32(bitPattern: found)
      }
      let stats = UnsafeRawPointer(data)
      result.append(
        LinkAddressEntry(
          name: Array(UnsafeRawBufferPointer(start: cName, count: strlen(cName))), index: index, arpType: arpType,
          flags: current.pointee.ifa_flags,
          statistics: (0..<8).map { stats.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self) }))
    }
    return result
  }
}

extension LinkAddresses {
  /// The ifindex of the link named `name` (`if_nametoindex`). Throws ENODEV when there is none.
  package static func index(of name: InterfaceName) throws(Errno) -> Int32 {
    while true {
      let index = SystemPath(bytes: name.bytes).withCString { if_nametoindex($0) }
      if index != 0 { return Int32(bitPattern: index) }
      let error = Errno.current
      if !error.meansInterrupted { throw error }
    }
  }

  /// The IPv4 and IPv6 addresses of the link named `name` (4 or 16 bytes each).
  package static func ipAddresses(of name: InterfaceName) throws -> [[UInt8]] {
    try ipAddresses(ofLinks: { UnsafeRawBufferPointer(start: $0, count: strlen($0)).elementsEqual(name.bytes) })
  }

  /// The IPv4 and IPv6 addresses of every link (4 or 16 bytes each): this host's own.
  package static func ipAddresses() throws -> [[UInt8]] {
    try ipAddresses(ofLinks: { _ in true })
  }

  private static func ipAddresses(ofLinks named: (UnsafePointer<CChar>) -> Bool) throws -> [[UInt8]] {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { throw Errno.current }
    defer { freeifaddrs(list) }
    var result: [[UInt8]] = []
    var entry = list
    while let current = entry {
      defer { entry = current.pointee.ifa_next }
      guard let cName = current.pointee.ifa_name, let address = current.pointee.ifa_addr, named(cName) else {
        continue
      }
      let raw = UnsafeRawPointer(address)
      switch Int32(address.pointee.sa_family) {
      case AF_INET:
        // struct sockaddr_in: family, port, then the address.
        result.append(Array(UnsafeRawBufferPointer(start: raw + 4, count: 4)))
      case AF_INET6:
        // struct sockaddr_in6: family, port, flow info, then the address.
        result.append(Array(UnsafeRawBufferPointer(start: raw + 8, count: 16)))
      default: continue
      }
    }
    return result
  }
}
