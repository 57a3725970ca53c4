import VPNStatKernel
import VPNStatModel
import VPNStatRender

/// A conversation's 5-tuple in canonical order (the lower endpoint first), so that both
/// directions of one conversation find the same entry with a single look-up (`FlowIndex`).
package struct FlowKey: Equatable, Sendable {
  var a: IPAddress
  var b: IPAddress
  /// Port of `a` in the high half, of `b` in the low half.
  var ports: UInt32
  var ipProtocol: UInt8
  var portsKnown: Bool

  /// The key of a packet, and whether its source is the key's first endpoint.
  @inline(__always)
  static func of(_ packet: PacketSummary) -> (FlowKey, sourceIsA: Bool) {
    let sourcePort = packet.portsKnown ? packet.sourcePort : 0
    let destinationPort = packet.portsKnown ? packet.destinationPort : 0
    let sourceFirst =
      packet.source < packet.destination
      || (packet.source == packet.destination && sourcePort <= destinationPort)
    if sourceFirst {
      return (
        FlowKey(
          a: packet.source, b: packet.destination,
          ports: UInt32(sourcePort) << 16 | UInt32(destinationPort), ipProtocol: packet.ipProtocol,
          portsKnown: packet.portsKnown), true
      )
    }
    return (
      FlowKey(
        a: packet.destination, b: packet.source,
        ports: UInt32(destinationPort) << 16 | UInt32(sourcePort), ipProtocol: packet.ipProtocol,
        portsKnown: packet.portsKnown), false
    )
  }
}

/// Why one endpoint of a flow was taken to be this host's.
package enum LocalEvidence: String, Sendable, Hashable {
  /// The Linux cooked header said the packet was outgoing or incoming (`any`).
  case packetType = "packet_type"
  /// One endpoint is an address of this host (or given with `--local`).
  case localAddress = "local_address"
  /// The destination is a multicast or broadcast group and the source is no local address:
  /// the packet was received from that source.
  case multicast
  /// A socket of this host owns the endpoint (/proc/net).
  case socket
  /// Nothing else decided: the endpoint that sent the flow's first packet.
  case firstPacket = "first_packet"
}

/// Who holds a socket: the process, and its command name from /proc/PID/comm.
package struct SocketOwner: Hashable, Sendable {
  package var pid: Int32
  /// nil when the process ended before its name could be read.
  package var command: String?
  package init(pid: Int32, command: String?) {
    self.pid = pid
    self.command = command
  }
}

/// Where a flow stands in finding its process.
package enum Attribution: Hashable, Sendable {
  /// Not looked up yet (it will be, at the latest when the interval ends).
  case pending
  /// A socket of this process carries the flow.
  case owned(SocketOwner)
  /// Looked up and no socket matched (closed before the lookup, forwarded, or kernel-made);
  /// `since` is when, so only flows with newer traffic are tried again.
  case unmatched(since: Timestamp)
  /// Never looked up: attribution is off (files, `--no-processes`) or the protocol has no
  /// sockets in /proc/net/{tcp,udp} (ICMP, GRE …).
  case notLookedUp
}

/// What every packet of a flow reads and writes: the key the index compares, and the counters.
/// The table keeps these apart from the rest of each flow (`FlowDetails`): 10,000 flows' tallies
/// are some 880 KB, which this machine's L2 cache holds beside the index, where whole flows
/// (about 240 bytes each, 2.4 MB) were not, and each packet missed the cache on its flow.
struct FlowTally: Sendable {
  let key: FlowKey
  /// Whether the key's first endpoint is the local one.
  var localIsA: Bool
  var counts = TrafficCounts()
  var lastSeen: Timestamp
}

/// The rest of a flow: what its creation, its owner's lookup and its reports read and write.
struct FlowDetails: Sendable {
  var ipProtocol: UInt8
  var portsKnown: Bool
  var localAddress: IPAddress
  var localPort: UInt16
  var remoteAddress: IPAddress
  var remotePort: UInt16
  var localBy: LocalEvidence
  var firstSeen: Timestamp
  var attribution: Attribution
  /// The traffic counted before an owner was found after a failed lookup: it stays with
  /// "unknown" (the earlier socket may not have been this one).
  var unattributed = TrafficCounts()
  /// The counts at the last report, for per-interval rates.
  var reported = TrafficCounts()

  mutating func swapEnds() {
    swap(&localAddress, &remoteAddress)
    swap(&localPort, &remotePort)
  }
}

/// One conversation: its endpoints seen from this host, its traffic, and its owner — a flow of
/// the table as its readers see it, both of its parts together.
package struct Flow: Sendable {
  var tally: FlowTally
  var details: FlowDetails

  var key: FlowKey { tally.key }
  package var counts: TrafficCounts { tally.counts }
  package var lastSeen: Timestamp { tally.lastSeen }
  package var ipProtocol: UInt8 { details.ipProtocol }
  package var portsKnown: Bool { details.portsKnown }
  package var localAddress: IPAddress { details.localAddress }
  package var localPort: UInt16 { details.localPort }
  package var remoteAddress: IPAddress { details.remoteAddress }
  package var remotePort: UInt16 { details.remotePort }
  package var localBy: LocalEvidence { details.localBy }
  package var firstSeen: Timestamp { details.firstSeen }
  package var attribution: Attribution {
    get { details.attribution }
    set { details.attribution = newValue }
  }
  package var unattributed: TrafficCounts { details.unattributed }
  var reported: TrafficCounts { details.reported }

  package var owner: SocketOwner? {
    if case .owned(let owner) = attribution { return owner }
    return nil
  }

  /// The part of the traffic that belongs to `owner` (all of it once owned, minus what was
  /// counted before a late match).
  package var attributedCounts: TrafficCounts {
    owner == nil ? TrafficCounts() : counts - unattributed
  }
  /// The part that belongs to "unknown".
  package var unknownCounts: TrafficCounts { owner == nil ? counts : unattributed }
}

/// What was captured as a whole, including what is not a flow.
package struct CaptureTotals: Hashable, Sendable {
  /// Every frame read.
  package var packets: UInt64 = 0
  /// IP bytes of IP packets (from the IP headers): what `flows` add up to.
  package var bytes: UInt64 = 0
  /// Original frame lengths as the capture reports them, link headers included.
  package var linkBytes: UInt64 = 0
  /// Frames that are not IPv4/IPv6 (ARP …) or whose IP header was cut short.
  package var nonIPPackets: UInt64 = 0
  package init() {}
}

/// Every flow seen, by key: the per-packet aggregation. Deciding which endpoint is local happens
/// once, when a flow is created; each later packet costs one hash lookup and four additions.
package struct FlowTable {
  /// Each flow's two parts, at the same position: the tallies every packet touches, and the rest.
  private(set) var tallies: [FlowTally] = []
  private var details: [FlowDetails] = []
  var index = FlowIndex()
  package private(set) var totals = CaptureTotals()
  /// Addresses of this host (interface addresses and `--local`): decide direction.
  package var localAddresses: Set<IPAddress>
  /// Whether new TCP/UDP flows should be looked up in /proc (live capture with processes).
  package var attributionEnabled: Bool
  /// Positions of the flows waiting for their first lookup: a lookup pass visits only these,
  /// not the whole table.
  private var pending: [Int] = []
  package var pendingCount: Int { pending.count }
  private var lastKey: FlowKey?
  private var lastIndex = 0

  /// Every flow, both parts together (a copy: for tests and the benchmark, not per packet).
  package var flows: [Flow] { tallies.indices.map(flow(at:)) }
  package var flowCount: Int { tallies.count }

  /// The flows `include` accepts, both parts together.
  func flows(where include: (Flow) -> Bool) -> [Flow] {
    tallies.indices.lazy.map(flow(at:)).filter(include)
  }

  func flow(at position: Int) -> Flow { Flow(tally: tallies[position], details: details[position]) }

  package init(localAddresses: Set<IPAddress> = [], attributionEnabled: Bool = false) {
    self.localAddresses = localAddresses
    self.attributionEnabled = attributionEnabled
  }

  /// Parses one frame and adds it.
  package mutating func add(
    frame bytes: UnsafeRawBufferPointer, wireLength: Int, link: CaptureLinkType, at time: Timestamp
  ) {
    add(
      PacketParser.parse(bytes, wireLength: wireLength, link: link),
      linkLength: max(0, wireLength - link.pseudoHeaderLength), at: time)
  }

  /// Adds a parsed frame; `linkLength` is its length as the interface counts it.
  package mutating func add(_ frame: ParsedFrame, linkLength: Int, at time: Timestamp) {
    guard let packet = total(frame, linkLength: linkLength) else { return }
    count(packet, at: time)
  }

  /// Adds the frames `feed` hands to its argument, in order, each as `add(frame:)` does. The
  /// table is borrowed once for them all: a table that a class holds (`FlowAggregator`) is
  /// otherwise checked for exclusive access at run time for every frame, a sixth of its cost.
  package mutating func add<Failure: Error>(
    link: CaptureLinkType,
    _ feed: (_ add: (_ frame: UnsafeRawBufferPointer, _ wireLength: Int, _ time: Timestamp) -> Void)
      throws(Failure) -> Void
  ) throws(Failure) {
    try feed { bytes, wireLength, time in add(frame: bytes, wireLength: wireLength, link: link, at: time) }
  }

  /// Counts a frame in the capture's totals; its packet, when it is IP.
  @inline(__always)
  private mutating func total(_ frame: ParsedFrame, linkLength: Int) -> PacketSummary? {
    totals.packets &+= 1
    totals.linkBytes &+= UInt64(linkLength)
    guard case .ip(let packet) = frame else {
      totals.nonIPPackets &+= 1
      return nil
    }
    totals.bytes &+= UInt64(packet.ipLength)
    return packet
  }

  /// Counts a packet in its flow, which it creates when it is the flow's first.
  @inline(__always)
  private mutating func count(_ packet: PacketSummary, at time: Timestamp) {
    let (key, sourceIsA) = FlowKey.of(packet)
    let position: Int
    if let lastKey, lastKey == key {
      position = lastIndex
    } else if let found = index.position(of: key, in: tallies) {
      position = found
    } else {
      position = insert(key, packet, sourceIsA: sourceIsA, at: time)
    }
    lastKey = key
    lastIndex = position
    tallies.withUnsafeMutableBufferPointer { buffer in
      let transmitted: Bool
      if let direction = packet.direction {
        transmitted = direction == .transmitted
      } else {
        transmitted = sourceIsA == buffer[position].localIsA
      }
      let length = UInt64(packet.ipLength)
      if transmitted {
        buffer[position].counts.txBytes &+= length
        buffer[position].counts.txPackets &+= 1
      } else {
        buffer[position].counts.rxBytes &+= length
        buffer[position].counts.rxPackets &+= 1
      }
      buffer[position].lastSeen = time
    }
  }

  private mutating func insert(
    _ key: FlowKey, _ packet: PacketSummary, sourceIsA: Bool, at time: Timestamp
  ) -> Int {
    let sourceIsLocal: Bool
    let evidence: LocalEvidence
    if let direction = packet.direction {
      sourceIsLocal = direction == .transmitted
      evidence = .packetType
    } else {
      let sourceLocal = localAddresses.contains(packet.source)
      let destinationLocal = localAddresses.contains(packet.destination)
      if sourceLocal != destinationLocal {
        sourceIsLocal = sourceLocal
        evidence = .localAddress
      } else if !sourceLocal, packet.destination.isMulticastOrBroadcast {
        // Group traffic from a stranger (neighbour discovery, mDNS …) was received.
        sourceIsLocal = false
        evidence = .multicast
      } else {
        sourceIsLocal = true
        evidence = .firstPacket
      }
    }
    let lookup =
      attributionEnabled && packet.portsKnown && (packet.ipProtocol == 6 || packet.ipProtocol == 17)
    let sourcePort = packet.portsKnown ? packet.sourcePort : 0
    let destinationPort = packet.portsKnown ? packet.destinationPort : 0
    if lookup { pending.append(tallies.count) }
    tallies.append(FlowTally(key: key, localIsA: sourceIsLocal == sourceIsA, lastSeen: time))
    details.append(
      FlowDetails(
        ipProtocol: packet.ipProtocol, portsKnown: packet.portsKnown,
        localAddress: sourceIsLocal ? packet.source : packet.destination,
        localPort: sourceIsLocal ? sourcePort : destinationPort,
        remoteAddress: sourceIsLocal ? packet.destination : packet.source,
        remotePort: sourceIsLocal ? destinationPort : sourcePort, localBy: evidence,
        firstSeen: time, attribution: lookup ? .pending : .notLookedUp))
    index.appended(to: tallies)
    return tallies.count - 1
  }

  /// Looks up owners for pending flows (and, with `retryUnmatched`, for unmatched flows that
  /// had traffic since their failed lookup). `lookup` answers for one flow and says whether the
  /// socket had the endpoints the other way round. With `final`, a pending flow that finds no
  /// owner becomes unmatched; without it, it stays pending for a fresher socket table.
  /// Returns how many flows are still pending.
  @discardableResult
  package mutating func attribute(
    final: Bool, retryUnmatched: Bool, now: Timestamp,
    _ lookup: (_ flow: Flow) -> (owner: SocketOwner, reversed: Bool)?
  ) -> Int {
    guard !pending.isEmpty || retryUnmatched else { return 0 }
    var stillPending: [Int] = []
    for i in pending {
      if let (owner, reversed) = lookup(flow(at: i)) {
        adopt(i, owner, reversed: reversed)
        details[i].attribution = .owned(owner)
      } else if final {
        details[i].attribution = .unmatched(since: now)
      } else {
        stillPending.append(i)
      }
    }
    pending = stillPending
    guard retryUnmatched else { return pending.count }
    for i in tallies.indices {
      guard case .unmatched(let since) = details[i].attribution, tallies[i].lastSeen > since else {
        continue
      }
      if let (owner, reversed) = lookup(flow(at: i)) {
        adopt(i, owner, reversed: reversed)
        details[i].unattributed = tallies[i].counts
        details[i].attribution = .owned(owner)
      } else {
        details[i].attribution = .unmatched(since: now)
      }
    }
    return pending.count
  }

  private mutating func adopt(_ i: Int, _ owner: SocketOwner, reversed: Bool) {
    if reversed { reorient(i) }
    if reversed || details[i].localBy == .firstPacket { details[i].localBy = .socket }
  }

  /// Swaps a flow's local and remote ends (a socket proved the other endpoint local).
  private mutating func reorient(_ i: Int) {
    details[i].swapEnds()
    tallies[i].counts = tallies[i].counts.swapped
    details[i].unattributed = details[i].unattributed.swapped
    details[i].reported = details[i].reported.swapped
    tallies[i].localIsA.toggle()
  }

  /// Marks the current counts as reported (the next interval's rates start here).
  mutating func markReported() {
    for i in tallies.indices { details[i].reported = tallies[i].counts }
  }

  /// Removes flows with no packet since `cutoff` and returns them (their traffic must still
  /// count in host and process totals).
  package mutating func removeIdle(before cutoff: Timestamp) -> [Flow] {
    guard tallies.contains(where: { $0.lastSeen < cutoff }) else { return [] }
    var keptTallies: [FlowTally] = []
    var keptDetails: [FlowDetails] = []
    var removed: [Flow] = []
    keptTallies.reserveCapacity(tallies.count)
    keptDetails.reserveCapacity(tallies.count)
    pending.removeAll()
    for i in tallies.indices {
      if tallies[i].lastSeen < cutoff {
        removed.append(flow(at: i))
      } else {
        if case .pending = details[i].attribution { pending.append(keptTallies.count) }
        keptTallies.append(tallies[i])
        keptDetails.append(details[i])
      }
    }
    tallies = keptTallies
    details = keptDetails
    index = FlowIndex(tallies)
    lastKey = nil
    return removed
  }
}
