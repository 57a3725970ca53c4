import VPNStatModel
import VPNStatSystem

#if canImport(Glibc)
  import Glibc
#endif

/// glibc's `getifaddrs`, the call Apple platforms use. Its AF_PACKET entries carry
/// `struct rtnl_link_stats`, 24 × u32, into which the kernel truncates the 64-bit counters:
/// they wrap at 2³², and every sample says so with `width: .bits32`.
public struct GetifaddrsCounterSource: CounterSource {
  public var kind: CounterSourceKind { .getifaddrs }

  public init() {}

  public mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
    // Stamped before reading: a sample's time never lies after its counters (the ledger orders
    // readings by it).
    let taken = clock.now()
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else {
      let error = Errno.current
      throw error.meansNotPermitted
        ? .notPermitted(.getifaddrs, error.description) : .unavailable(.getifaddrs, error.description)
    }
    defer { freeifaddrs(list) }
    var interfaces: [InterfaceSample] = []
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
      func field(_ i: Int) -> UInt64 { UInt64(stats.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)) }
      let name = InterfaceName(bytes: UnsafeRawBufferPointer(start: cName, count: strlen(cName)))
      let counters = InterfaceCounters(
        TrafficCounts(rxBytes: field(2), txBytes: field(3), rxPackets: field(0), txPackets: field(1)),
        rxErrors: field(4), txErrors: field(5), rxDropped: field(6), txDropped: field(7))
      interfaces.append(
        InterfaceSample(
          name: name, index: index, counters: counters, width: .bits32,
          link: LinkAttributes(arpType: arpType, flags: current.pointee.ifa_flags)))
    }
    return CounterSample(interfaces: interfaces, source: .getifaddrs, taken: taken)
  }
}
