import CLinux
import VPNStatModel
import VPNStatSystem

/// One link as an `RTM_NEWLINK` or `RTM_DELLINK` message describes it.
package struct LinkRecord: Hashable, Sendable {
  package var index: Int32
  package var name: InterfaceName
  package var attributes: LinkAttributes
  /// `IFLA_STATS64`: in every link dump (RTEXT_FILTER_SKIP_STATS leaves out only IPv6's
  /// statistics) and notification (a `RTM_DELLINK` carries the dying link's final counters).
  package var counters: InterfaceCounters?
  /// Set on the `RTM_DELLINK` of a link moved to another network namespace
  /// (`IFLA_NEW_NETNSID`): it lives on, out of this namespace's reach.
  package var movedToNamespace: Int32?
  /// `IFLA_CARRIER_CHANGES`: how many times the carrier came or went since the device was made.
  /// A tun gains its carrier when a process attaches its first queue and loses it when the last
  /// detaches, so a count that did not move means the tun's holders did not come or all go.
  package var carrierChanges: UInt32?

  package init(
    index: Int32, name: InterfaceName, attributes: LinkAttributes, counters: InterfaceCounters? = nil,
    movedToNamespace: Int32? = nil, carrierChanges: UInt32? = nil
  ) {
    self.index = index
    self.name = name
    self.attributes = attributes
    self.counters = counters
    self.movedToNamespace = movedToNamespace
    self.carrierChanges = carrierChanges
  }
}

/// Building and reading the rtnetlink link and stats messages vpnstat uses.
package enum RouteLinkMessages {
  static let newLink = UInt16(RTM_NEWLINK)
  static let deleteLink = UInt16(RTM_DELLINK)
  static let getLink = UInt16(RTM_GETLINK)
  static let newStats = UInt16(RTM_NEWSTATS)
  static let getStats = UInt16(RTM_GETSTATS)
  static let interfaceInfoLength = MemoryLayout<ifinfomsg>.size
  static let statsHeaderLength = MemoryLayout<if_stats_msg>.size

  /// An `RTM_GETLINK` dump request; `withStats: false` asks the kernel to leave IPv6's
  /// statistics out (RTEXT_FILTER_SKIP_STATS: `IFLA_INET6_STATS` and `IFLA_INET6_ICMP6STATS`,
  /// summed over every CPU for each link; the link's own `IFLA_STATS64` stays, on this kernel
  /// as on every one since the filter exists). No RTEXT_FILTER_VF: the SR-IOV virtual functions
  /// of a NIC are nothing vpnstat reads.
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
  static func statsDumpRequest() -> [UInt8] { statsDumpPayload }

  /// The same every time: made once, not for every sample (a recorder's every second).
  private static let statsDumpPayload: [UInt8] = {
    var payload = [UInt8](repeating: 0, count: statsHeaderLength)
    payload[0] = UInt8(AF_UNSPEC)
    let mask = clinux_stats_filter_bit(UInt32(IFLA_STATS_LINK_64))
    withUnsafeBytes(of: mask) { payload.replaceSubrange(8..<12, with: $0) }
    return payload
  }()

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
  package static func parseLink(_ payload: UnsafeRawBufferPointer) -> LinkRecord? {
    guard payload.count >= interfaceInfoLength else { return nil }
    let arpType = payload.loadUnaligned(fromByteOffset: 2, as: UInt16.self)
    let index = payload.loadUnaligned(fromByteOffset: 4, as: Int32.self)
    let flags = payload.loadUnaligned(fromByteOffset: 8, as: UInt32.self)
    var name: InterfaceName?
    var attributes = LinkAttributes(arpType: arpType, flags: flags)
    var counters: InterfaceCounters?
    var movedTo: Int32?
    var carrierChanges: UInt32?
    let attributeBytes = UnsafeRawBufferPointer(rebasing: payload[interfaceInfoLength...])
    // The attributes read below, as a mask of their types (all below 64).
    let wantedAttributes: UInt64 =
      1 << UInt64(IFLA_IFNAME) | 1 << UInt64(IFLA_OPERSTATE) | 1 << UInt64(IFLA_CARRIER)
      | 1 << UInt64(IFLA_CARRIER_CHANGES) | 1 << UInt64(IFLA_STATS64) | 1 << UInt64(IFLA_NEW_NETNSID)
      | 1 << UInt64(IFLA_LINKINFO)
    for (type, value) in RouteAttributes(attributeBytes) {
      // Seven of a link's some forty attributes are read: the rest are passed over on one test.
      guard type < 64, wantedAttributes & (1 &<< UInt64(type)) != 0 else { continue }
      switch Int(type) {
      case Int(IFLA_IFNAME):
        name = InterfaceName(bytes: value.cStringBytes)
      case Int(IFLA_OPERSTATE):
        if let byte = value.first { attributes.operState = OperState(rawValue: byte) ?? .unknown }
      case Int(IFLA_CARRIER):
        if let byte = value.first { attributes.carrier = byte != 0 }
      case Int(IFLA_CARRIER_CHANGES):
        if value.count >= 4 { carrierChanges = value.loadUnaligned(as: UInt32.self) }
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
      index: index, name: name, attributes: attributes, counters: counters, movedToNamespace: movedTo,
      carrierChanges: carrierChanges)
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
/// shows up, or kept current by `apply(_:)` from link notifications. The first sample is that
/// link dump itself (`IFLA_STATS64` is in every link message): a one-off command (`status`,
/// `export`) asks the kernel for one dump, as `ip -s link` does, and never builds the table.
package struct NetlinkCounterSource: CounterSource {
  package var kind: CounterSourceKind { .netlink }
  let socket: NetlinkSocket
  /// What is known about each link, by ifindex (made from the first sample's interfaces when a
  /// second sample or a notification needs it).
  package var links: [Int32: LinkRecord] {
    mutating get {
      tableFromFirstSample()
      return Dictionary(
        uniqueKeysWithValues: table.links.map {
          ($0.index, LinkRecord(index: $0.index, name: $0.name, attributes: $0.attributes))
        })
    }
  }
  /// A link as the table keeps it: what a sample takes from it, no counters (the stats dump
  /// brings those), so each of a thousand entries is an ifindex, a name and a few attributes.
  private struct KnownLink {
    var index: Int32
    var name: InterfaceName
    var attributes: LinkAttributes
  }
  /// The known links sorted by ifindex. A sorted array rather than a Dictionary: the kernel
  /// dumps links in ifindex order, so a sample finds each one just after the last (no hashing),
  /// and reads its name and attributes where they lie (a Dictionary's value is read as a copy).
  private struct KnownLinks {
    var links: [KnownLink] = []

    var isEmpty: Bool { links.isEmpty }

    /// Where `index` is, or would go; `hint` is where the search starts (the position after the
    /// last link found, in a dump).
    func position(of index: Int32, hint: Int = 0) -> (at: Int, found: Bool) {
      if hint < links.count, links[hint].index == index { return (hint, true) }
      var low = 0
      var high = links.count
      while low < high {
        let middle = (low + high) / 2
        if links[middle].index < index { low = middle + 1 } else { high = middle }
      }
      return (low, low < links.count && links[low].index == index)
    }

    mutating func set(_ link: KnownLink) {
      let (at, found) = position(of: link.index)
      if found { links[at] = link } else { links.insert(link, at: at) }
    }

    mutating func remove(_ index: Int32) {
      let (at, found) = position(of: index)
      if found { links.remove(at: at) }
    }

    /// A table of `links` in any order.
    init(_ links: [KnownLink] = []) {
      self.links = links
      // Already in order from a dump; sorted anyway, since nothing promises it.
      if !self.links.isEmpty { self.links.sort { $0.index < $1.index } }
    }
  }
  private var table = KnownLinks() {
    didSet { tableGeneration &+= 1 }
  }
  /// Counts the link table's changes: a position in it (`forEachKnownLink`, `dumpCounters`) names
  /// the same link while this stays the same.
  package private(set) var tableGeneration = 0
  /// The first sample's interfaces, until the table is made from them.
  private var firstInterfaces: [InterfaceSample]?
  /// How many dumps the kernel was asked for: what tests check ("a one-off sample is one dump").
  package private(set) var dumps = 0

  package init() throws {
    socket = try NetlinkSocket()
  }

  /// How many links the first sample makes room for before it grows.
  static let expectedLinks = 4096

  /// Replaces the link table with a fresh `RTM_GETLINK` dump.
  package mutating func refreshLinks() throws {
    firstInterfaces = nil
    var fresh: [KnownLink] = []
    fresh.reserveCapacity(table.links.count)
    try dumpLinks { fresh.append(KnownLink(index: $0.index, name: $0.name, attributes: $0.attributes)) }
    table = KnownLinks(fresh)
  }

  /// One `RTM_GETLINK` dump, each link handed to `body` as it is read: given, not lent (lent,
  /// each record was destroyed after `body` through a merged outlined destroy that reaches
  /// Optional's generic value witnesses, ~100 instructions a link).
  private mutating func dumpLinks(_ body: (consuming LinkRecord) -> Void) throws {
    dumps += 1
    try socket.dump(
      type: RouteLinkMessages.getLink, payload: RouteLinkMessages.linkDumpRequest(withStats: false)
    ) { message in
      guard message.type == RouteLinkMessages.newLink, let record = RouteLinkMessages.parseLink(message.payload)
      else { return }
      body(record)
    }
  }

  private mutating func tableFromFirstSample() {
    guard let first = firstInterfaces else { return }
    firstInterfaces = nil
    table = KnownLinks(first.map { KnownLink(index: $0.index, name: $0.name, attributes: $0.link) })
  }

  /// Each link of the table (made from the first sample first, if it is still to be made), in
  /// the order of its positions, as its ifindex and name.
  package mutating func forEachKnownLink(_ body: (_ index: Int32, _ name: borrowing InterfaceName) -> Void) {
    tableFromFirstSample()
    table.links.withUnsafeBufferPointer { links in
      for position in links.indices { body(links[position].index, links[position].name) }
    }
  }

  /// One `RTM_GETSTATS` dump handed to `body` link by link, each as its position in the table,
  /// its ifindex and its traffic, with nothing made for it: the recorder's steady state, where
  /// the table and what each position means to the ledger stay put between link changes. False
  /// (the rest of the dump not handed over) at an ifindex the table lacks, or when `body` returns
  /// false; the caller then takes a whole sample (`sample(at:)`, which makes the table anew).
  package mutating func dumpCounters(
    _ body: (_ position: Int, _ index: Int32, _ traffic: TrafficCounts) -> Bool
  ) throws(CounterSourceError) -> Bool {
    tableFromFirstSample()
    var next = 0
    var complete = true
    dumps += 1
    do {
      try socket.dump(type: RouteLinkMessages.getStats, payload: RouteLinkMessages.statsDumpRequest()) { message in
        guard complete, message.type == RouteLinkMessages.newStats,
          let (index, counters) = RouteLinkMessages.parseStats(message.payload)
        else { return }
        let (at, known) = table.position(of: index, hint: next)
        guard known else {
          complete = false
          return
        }
        next = at + 1
        if !body(at, index, counters.traffic) { complete = false }
      }
    } catch {
      throw Self.sourceError(error)
    }
    return complete
  }

  /// What a failed dump means to a caller of a `CounterSource`.
  private static func sourceError(_ error: any Error) -> CounterSourceError {
    guard let error = error as? Errno else { return .unavailable(.netlink, "\(error)") }
    return error.meansNotPermitted
      ? .notPermitted(.netlink, error.description) : .unavailable(.netlink, error.description)
  }

  /// Updates the link table from a link notification (`RTM_NEWLINK` or `RTM_DELLINK`).
  package mutating func apply(_ record: LinkRecord, deleted: Bool) {
    tableFromFirstSample()
    if deleted {
      table.remove(record.index)
    } else {
      table.set(KnownLink(index: record.index, name: record.name, attributes: record.attributes))
    }
  }

  package mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
    do {
      tableFromFirstSample()
      if table.isEmpty, let first = try firstSample(clock) { return first }
      var interfaces: [InterfaceSample] = []
      interfaces.reserveCapacity(table.links.count)
      var next = 0
      // Once an ifindex is not in the table, every pair waits for a fresh link dump.
      var unresolved: [(Int32, InterfaceCounters)]?
      // Stamped before the dump: a sample's time never lies after its counters.
      let taken = clock.now()
      dumps += 1
      // Each message is matched as it is read: one lookup per link, its name and attributes
      // taken where they lie in the table, no list of pairs in between.
      try socket.dump(
        type: RouteLinkMessages.getStats, payload: RouteLinkMessages.statsDumpRequest()
      ) { message in
        guard message.type == RouteLinkMessages.newStats,
          let (index, counters) = RouteLinkMessages.parseStats(message.payload)
        else { return }
        let (at, found) = table.position(of: index, hint: next)
        if unresolved == nil, found {
          next = at + 1
          interfaces.append(
            InterfaceSample(
              name: table.links[at].name, index: index, counters: counters, width: .bits64,
              link: table.links[at].attributes))
        } else {
          if unresolved == nil { unresolved = interfaces.map { ($0.index, $0.counters) } }
          unresolved?.append((index, counters))
        }
      }
      if let unresolved {
        try refreshLinks()
        interfaces.removeAll(keepingCapacity: true)
        for (index, counters) in unresolved {
          // An ifindex that is still unknown vanished between the two dumps: leave it out.
          let (at, found) = table.position(of: index)
          guard found else { continue }
          interfaces.append(
            InterfaceSample(
              name: table.links[at].name, index: index, counters: counters, width: .bits64,
              link: table.links[at].attributes))
        }
      }
      return CounterSample(interfaces: interfaces, source: .netlink, taken: taken)
    } catch {
      throw Self.sourceError(error)
    }
  }

  /// The first sample: one link dump, its counters taken from `IFLA_STATS64`, kept as the
  /// link table's source. Nil when a link came without them (an old kernel: the table is made
  /// from the dump at once, and the stats dump reads the counters).
  private mutating func firstSample(_ clock: any TimeSource) throws -> CounterSample? {
    // Stamped before the dump: a sample's time never lies after its counters.
    let taken = clock.now()
    // Room for more links than a machine has, reserved not touched: the pages a smaller dump
    // never fills are never faulted in, and a thousand links are never copied to grow.
    var interfaces: [InterfaceSample] = []
    interfaces.reserveCapacity(Self.expectedLinks)
    var complete = true
    try dumpLinks { record in
      if record.counters == nil { complete = false }
      interfaces.append(
        InterfaceSample(
          name: record.name, index: record.index, counters: record.counters ?? InterfaceCounters(.zero),
          width: .bits64, link: record.attributes))
    }
    guard !interfaces.isEmpty else { return nil }
    firstInterfaces = interfaces
    guard complete else {
      tableFromFirstSample()
      return nil
    }
    return CounterSample(interfaces: interfaces, source: .netlink, taken: taken)
  }
}
