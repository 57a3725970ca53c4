import VPNStatModel
import VPNStatSystem

/// glibc's `getifaddrs`, the call Apple platforms use. Its AF_PACKET entries carry
/// `struct rtnl_link_stats`, 24 × u32, into which the kernel truncates the 64-bit counters:
/// they wrap at 2³², and every sample says so with `width: .bits32`.
package struct GetifaddrsCounterSource: CounterSource {
  package var kind: CounterSourceKind { .getifaddrs }

  package init() {}

  package mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
    // Stamped before reading: a sample's time never lies after its counters (the ledger orders
    // readings by it).
    let taken = clock.now()
    let links: [LinkAddressEntry]
    do {
      links = try LinkAddresses.links()
    } catch let error as Errno {
      throw error.meansNotPermitted
        ? .notPermitted(.getifaddrs, error.description) : .unavailable(.getifaddrs, error.description)
    } catch {
      throw .unavailable(.getifaddrs, "\(error)")
    }
    let interfaces = links.map { link in
      func field(_ i: Int) -> UInt64 { UInt64(link.statistics[i]) }
      return InterfaceSample(
        name: InterfaceName(bytes: link.name), index: link.index,
        counters: InterfaceCounters(
          TrafficCounts(rxBytes: field(2), txBytes: field(3), rxPackets: field(0), txPackets: field(1)),
          rxErrors: field(4), txErrors: field(5), rxDropped: field(6), txDropped: field(7)),
        width: .bits32, link: LinkAttributes(arpType: link.arpType, flags: link.flags))
    }
    return CounterSample(interfaces: interfaces, source: .getifaddrs, taken: taken)
  }
}
