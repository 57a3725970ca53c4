import CLinux
import VPNStatModel
import VPNStatSystem

#if canImport(Glibc)
  import Glibc
#endif

/// One link as an `RTM_NEWLINK` or `RTM_DELLINK` message describes it.
public struct LinkRecord: Hashable, Sendable {
  public var index: Int32
  public var name: InterfaceName
  public var attributes: LinkAttributes
  /// `IFLA_STATS64`, present in dumps without RTEXT_FILTER_SKIP_STATS and in notifications
  /// (a `RTM_DELLINK` carries the dying link's final counters).
  public var counters: InterfaceCounters?
  /// Set on the `RTM_DELLINK` of a link moved to another network namespace
  /// (`IFLA_NEW_NETNSID`): it lives on, out of this namespace's reach.
  public var movedToNamespace: Int32?

  public init(
    index: Int32, name: InterfaceName, attributes: LinkAttributes, counters: InterfaceCounters? = nil,
    movedToNamespace: Int32? = nil
  ) {
    self.index = index
    self.name = name
    self.attributes = attributes
    self.counters = counters
    self.movedToNamespace = movedToNamespace
  }
}

/// Building and reading the rtnetlink link and stats messages vpnstat uses.
public enum RouteLinkMessages {
  static let newLink = UInt16(RTM_NEWLINK)
  static let deleteLink = UInt16(RTM_DELLINK)
  static let getLink = UInt16(RTM_GETLINK)
  static let newStats = UInt16(RTM_NEWSTATS)
  static let getStats = UInt16(RTM_GETSTATS)
  static let interfaceInfoLength = MemoryLayout<ifinfomsg>.size
  static let statsHeaderLength = MemoryLayout<if_stats_msg>.size

  /// An `RTM_GETLINK` dump request; `withStats: false` asks the kernel to leave the counters
  /// out (RTEXT_FILTER_SKIP_STATS: `IFLA_STATS`, `IFLA_STATS64` and IPv6's statistics, a third
  /// of each message). No RTEXT_FILTER_VF: the SR-IOV virtual functions of a NIC are nothing
  /// vpnstat reads.
  static func linkDumpRequest(withStats: Bool) -> [UInt8] {
    var payload = [UInt8](repeating: 0, count: interfaceInfoLength)
    payload[0] = UInt8(AF_UNSPEC)
    var mask: UInt32 = 0
    if !withStats { mask |= UInt32(RTEXT_FILTER_SKIP_STATS) }
    payload += RouteAttributes.encode(
      type: UInt16(IFLA_EXT_MASK), value: withUnsafeBytes(of: mask) { Array($0) })
    return payload
  }

  /// An `RTM_GETSTATS` dump request for the 64-bit link counters only.
  static func statsDumpRequest() -> [UInt8] {
    var payload = [UInt8](repeating: 0, count: statsHeaderLength)
    payload[0] = UInt8(AF_UNSPEC)
    let mask = clinux_stats_filter_bit(UInt32(IFLA_STATS_LINK_64))
    withUnsafeBytes(of: mask) { payload.replaceSubrange(8..<12, with: $0) }
    return payload
  }

  /// A request that sets or clears IFF_UP on the link with `index`.
  static func setUpRequest(index: Int32, up: Bool) -> [UInt8] {
    var payload = [UInt8](repeating: 0, count: interfaceInfoLength)
    payload.withUnsafeMutableBytes { raw in
      raw.storeBytes(of: UInt8(AF_UNSPEC), toByteOffset: 0, as: UInt8.self)
      raw.storeBytes(of: index, toByteOffset: 4, as: Int32.self)
      raw.storeBytes(of: up ? UInt32(IFF_UP.rawValue) : 0, toByteOffset: 8, as: UInt32.self)
      raw.storeBytes(of: UInt32(IFF_UP.rawValue), toByteOffset: 12, as: UInt32.self)
    }
    return payload
  }

  /// Parses the payload of an `RTM_NEWLINK`/`RTM_DELLINK` message.
  public static func parseLink(_ payload: UnsafeRawBufferPointer) -> LinkRecord? {
    guard payload.count >= interfaceInfoLength else { return nil }
    let arpType = payload.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
    let index = payload.loadUnaligned(fromByteOffset: 4, as: Int32.self)
    let flags = payload.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
    var name: InterfaceName?
    var attributes = LinkAttributes(arpType: arpType, flags: flags)
    var counters: InterfaceCounters?
    var movedTo: Int32?
    let attributeBytes = UnsafeRawBufferPointer(rebasing: payload[interfaceInfoLength...])
    for (type, value) in RouteAttributes(attributeBytes) {
      switch Int(type) {
      case Int(IFLA_IFNAME):
        name = InterfaceName(bytes: value.cStringBytes)
      case Int(IFLA_OPERSTATE):
        if let byte = value.first { attributes.operState = OperState(rawValue: byte) ?? .unknown }
      case Int(IFLA_CARRIER):
        if let byte = value.first { attributes.carrier = byte != 0 }
      case Int(IFLA_STATS64):
        counters = stats64(value)
      case Int(IFLA_NEW_NETNSID):
        if value.count >= 4 { movedTo = value.loadUnaligned(as: Int32.self) }
      case Int(IFLA_LINKINFO):
        for (infoType, infoValue) in RouteAttributes(value)
        where infoType == UInt16(IFLA_INFO_KIND) {
          attributes.kind = String(decoding: infoValue.cStringBytes, as: UTF8.self)
        }
      default:
        break
      }
    }
    guard let name else { return nil }
    return LinkRecord(
      index: index, name: name, attributes: attributes, counters: counters, movedToNamespace: movedTo)
  }

  /// Parses the payload of an `RTM_NEWSTATS` message: the ifindex and its 64-bit counters.
  static func parseStats(_ payload: UnsafeRawBufferPointer) -> (Int32, InterfaceCounters)? {
    guard payload.count >= statsHeaderLength else { return nil }
    let index = payload.loadUnaligned(fromByteOffset: 4, as: Int32.self)
    let attributeBytes = UnsafeRawBufferPointer(rebasing: payload[statsHeaderLength...])
    for (type, value) in RouteAttributes(attributeBytes)
    where type == UInt16(IFLA_STATS_LINK_64) {
      if let counters = stats64(value) { return (index, counters) }
    }
    return nil
  }

  /// Reads the leading fields of a `struct rtnl_link_stats64`.
  static func stats64(_ value: UnsafeRawBufferPointer) -> InterfaceCounters? {
    guard value.count >= 64 else { return nil }
    func field(_ i: Int) -> UInt64 { value.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self) }
    return InterfaceCounters(
      TrafficCounts(rxBytes: field(2), txBytes: field(3), rxPackets: field(0), txPackets: field(1)),
      rxErrors: field(4), txErrors: field(5), rxDropped: field(6), txDropped: field(7))
  }
}

/// The default reader: one `RTM_GETSTATS` dump (64-bit counters, by ifindex) per sample, with names
/// and link attributes from an `RTM_GETLINK` dump that is repeated only when an unknown ifindex
/// shows up, or kept current by `apply(_:)` from link notifications.
public struct NetlinkCounterSource: CounterSource {
  public var kind: CounterSourceKind { .netlink }
  let socket: NetlinkSocket
  /// What is known about each link, by ifindex.
  public private(set) var links: [Int32: LinkRecord] = [:]

  public init() throws {
    socket = try NetlinkSocket()
  }

  /// Replaces the link table with a fresh `RTM_GETLINK` dump.
  public mutating func refreshLinks() throws {
    var fresh: [Int32: LinkRecord] = [:]
    fresh.reserveCapacity(links.count)
    try socket.dump(
      type: RouteLinkMessages.getLink, payload: RouteLinkMessages.linkDumpRequest(withStats: false)
    ) { message in
      guard message.type == RouteLinkMessages.newLink,
        let record = RouteLinkMessages.parseLink(message.payload)
      else { return }
      fresh[record.index] = record
    }
    links = fresh
  }

  /// Updates the link table from a link notification (`RTM_NEWLINK` or `RTM_DELLINK`).
  public mutating func apply(_ record: LinkRecord, deleted: Bool) {
    if deleted {
      links[record.index] = nil
    } else {
      var kept = record
      kept.counters = nil
      links[record.index] = kept
    }
  }

  public mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
    do {
      if links.isEmpty { try refreshLinks() }
      var counters: [(Int32, InterfaceCounters)] = []
      counters.reserveCapacity(links.count)
      // Stamped before the dump: a sample's time never lies after its counters.
      let taken = clock.now()
      try socket.dump(
        type: RouteLinkMessages.getStats, payload: RouteLinkMessages.statsDumpRequest()
      ) { message in
        guard message.type == RouteLinkMessages.newStats,
          let entry = RouteLinkMessages.parseStats(message.payload)
        else { return }
        counters.append(entry)
      }
      if counters.contains(where: { links[$0.0] == nil }) { try refreshLinks() }
      var interfaces: [InterfaceSample] = []
      interfaces.reserveCapacity(counters.count)
      for (index, value) in counters {
        // An ifindex that is still unknown vanished between the two dumps: leave it out.
        guard let link = links[index] else { continue }
        interfaces.append(
          InterfaceSample(
            name: link.name, index: index, counters: value, width: .bits64, link: link.attributes))
      }
      return CounterSample(interfaces: interfaces, source: .netlink, taken: taken)
    } catch let error as Errno {
      throw error.meansNotPermitted
        ? .notPermitted(.netlink, error.description) : .unavailable(.netlink, error.description)
    } catch {
      throw .unavailable(.netlink, "\(error)")
    }
  }
}
