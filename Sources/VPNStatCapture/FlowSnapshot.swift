import VPNStatKernel
import VPNStatModel
import VPNStatRender

/// One report of `vpnstat flows`: everything the renderers show, as plain values. Rendering is
/// a pure function of this (and display options).
package struct FlowSnapshot: Sendable {
  /// What was captured: a live interface (its current ifindex, nil while it is gone) or a file.
  package enum Origin: Sendable, Equatable {
    case interface(InterfaceName, index: Int32?)
    case file(String)
  }

  /// One flow as reported: totals since the capture began and the traffic of this interval.
  package struct FlowReport: Sendable {
    package var flow: Flow
    package var interval: TrafficCounts
  }

  /// A remote host (or a process): totals since the start, this interval, how many flows.
  package struct GroupReport<Key: Sendable>: Sendable {
    package var key: Key
    package var total: TrafficCounts
    package var interval: TrafficCounts
    package var flows: Int
  }

  package var origin: Origin
  package var linkType: CaptureLinkType
  package var generatedAt: Timestamp
  /// When the capture began (files: the first packet's time).
  package var startedAt: Timestamp
  /// The time this report covers: since the previous report (files: the packet-time slice).
  package var intervalSeconds: Double
  /// The time since the capture began.
  package var elapsedSeconds: Double
  package var captured: CaptureTotals
  /// Captured in this interval only.
  package var capturedInterval: CaptureTotals
  /// libpcap's drop counts (nil for files).
  package var drops: CaptureDrops?
  /// The interface's kernel counters over the same time as `captured` (nil for files, or when
  /// no counter reader worked).
  package var interfaceCounters: TrafficCounts?
  /// How many times the capture was reopened on a new instance of the interface.
  package var restarts: Int
  package var flows: [FlowReport]
  package var hosts: [GroupReport<IPAddress>]
  /// Processes by owner; the nil key is "unknown".
  package var processes: [GroupReport<SocketOwner?>]
  /// Whether processes were looked up at all (live capture without `--no-processes`).
  package var processesLookedUp: Bool
  package var warnings: [String]

  /// Captured frame bytes against the interface's counters over the same time: nil when the
  /// counters are unknown or did not move.
  package var coverage: Double? {
    guard let counters = interfaceCounters, counters.bytes > 0 else { return nil }
    return Double(captured.linkBytes) / Double(counters.bytes)
  }

  /// Why these figures are estimates; part of every report.
  package var estimateNotes: [String] {
    var notes = [
      "capture sees packets at one point of the stack, on this interface only: traffic the kernel drops before that point, and traffic of other interfaces, is not in it",
      "bytes are IP packet lengths from the IP header (what a tunnel's counters count); link_bytes and coverage use frame lengths as the interface counts them (Ethernet adds 14 bytes a frame)",
      "under load the capture can drop packets: captured.dropped and captured.if_dropped are libpcap's counts",
    ]
    switch origin {
    case .interface:
      if processesLookedUp {
        notes.append(
          "processes come from socket inodes in /proc/net/{tcp,tcp6,udp,udp6} mapped through /proc/PID/fd: traffic whose socket closed before the lookup, ICMP and forwarded traffic count as unknown"
        )
      }
    case .file:
      notes.append(
        "read from a file: no processes and no interface counters; a flow's local end is a --local address, else the endpoint that sent its first packet"
      )
    }
    return notes
  }
}

/// The accumulating state of one `flows` run: the flow table, process attribution, and the
/// totals of flows that went idle, turned into a `FlowSnapshot` at each report.
package final class FlowAggregator {
  package var table: FlowTable
  package let resolver: SocketOwnerResolver?
  package let idleTimeout: Duration
  /// The traffic of flows that went idle and left the table.
  private var retired = GroupTotals()
  private var reportedHosts: [IPAddress: TrafficCounts] = [:]
  private var reportedProcesses: [SocketOwner?: TrafficCounts] = [:]
  private var reportedTotals = CaptureTotals()

  package init(
    localAddresses: Set<IPAddress>, resolver: SocketOwnerResolver?,
    idleTimeout: Duration = .seconds(300)
  ) {
    table = FlowTable(localAddresses: localAddresses, attributionEnabled: resolver != nil)
    self.resolver = resolver
    self.idleTimeout = idleTimeout
  }

  /// Adds one captured frame.
  @inline(__always)
  package func add(_ packet: CapturedPacket, link: CaptureLinkType) {
    table.add(frame: packet.bytes, wireLength: packet.wireLength, link: link, at: packet.timestamp)
  }

  /// Builds the report and starts the next interval: rates restart, and flows idle for longer
  /// than `idleTimeout` (capture time, up to `captureTime`) leave the flow list, their traffic
  /// staying in the host and process totals.
  package func report(
    origin: FlowSnapshot.Origin, linkType: CaptureLinkType, generatedAt: Timestamp,
    startedAt: Timestamp,
    intervalSeconds: Double, elapsedSeconds: Double, drops: CaptureDrops?,
    interfaceCounters: TrafficCounts?,
    restarts: Int, warnings: [String], captureTime: Timestamp?
  ) -> FlowSnapshot {
    var groups = retired
    let flowReports = flowReports(adding: &groups)
    var capturedInterval = CaptureTotals()
    capturedInterval.packets = table.totals.packets - reportedTotals.packets
    capturedInterval.bytes = table.totals.bytes - reportedTotals.bytes
    capturedInterval.linkBytes = table.totals.linkBytes - reportedTotals.linkBytes
    capturedInterval.nonIPPackets = table.totals.nonIPPackets - reportedTotals.nonIPPackets
    let snapshot = FlowSnapshot(
      origin: origin, linkType: linkType, generatedAt: generatedAt, startedAt: startedAt,
      intervalSeconds: intervalSeconds, elapsedSeconds: elapsedSeconds, captured: table.totals,
      capturedInterval: capturedInterval, drops: drops, interfaceCounters: interfaceCounters,
      restarts: restarts, flows: flowReports, hosts: hostReports(groups), processes: processReports(groups),
      processesLookedUp: resolver != nil, warnings: warnings)
    startNextInterval(reported: groups, captureTime: captureTime)
    return snapshot
  }

  /// The flows, most active first (`FlowOrder`), each added to `groups`.
  private func flowReports(adding groups: inout GroupTotals) -> [FlowSnapshot.FlowReport] {
    // Sorted as plain integers, then gathered once: a flow holds its owner's strings, and a sort
    // of the reports themselves copied one (retains, outlined copies) at every move — at 10,000
    // flows it cost more than reading 200,000 packets did.
    // Each flow put together from the table's two arrays where it is read, not all of them
    // into one more array first.
    var order: [FlowOrder] = []
    order.reserveCapacity(table.flowCount)
    for index in 0..<table.flowCount {
      let flow = table.flow(at: index)
      order.append(FlowOrder(flow, interval: flow.counts - flow.reported, index: index))
      groups.add(flow)
    }
    order.sort(by: FlowOrder.precedes)
    var reports: [FlowSnapshot.FlowReport] = []
    reports.reserveCapacity(order.count)
    for entry in order {
      let flow = table.flow(at: entry.index)
      reports.append(FlowSnapshot.FlowReport(flow: flow, interval: flow.counts - flow.reported))
    }
    return reports
  }

  /// The hosts, most active first.
  private func hostReports(_ groups: GroupTotals) -> [FlowSnapshot.GroupReport<IPAddress>] {
    var reports = groups.hosts.map { address, value in
      FlowSnapshot.GroupReport(
        key: address, total: value.counts,
        interval: value.counts - (reportedHosts[address] ?? TrafficCounts()),
        flows: value.flows)
    }
    reports.sort {
      Self.byActivity(($0.interval, $0.total, $0.key), ($1.interval, $1.total, $1.key), <)
    }
    return reports
  }

  /// The processes, most active first; the unknown last among equals.
  private func processReports(_ groups: GroupTotals) -> [FlowSnapshot.GroupReport<SocketOwner?>] {
    var reports = groups.processes.map { owner, value in
      FlowSnapshot.GroupReport(
        key: owner, total: value.counts,
        interval: value.counts - (reportedProcesses[owner] ?? TrafficCounts()), flows: value.flows)
    }
    reports.sort {
      Self.byActivity(($0.interval, $0.total, $0.key), ($1.interval, $1.total, $1.key)) { a, b in
        // Unknown last among equals; then by pid.
        switch (a, b) {
        case (nil, _): false
        case (_, nil): true
        case (let x?, let y?):
          x.pid != y.pid ? x.pid < y.pid : (x.command ?? "") < (y.command ?? "")
        }
      }
    }
    return reports
  }

  /// Most bytes this interval first, then most bytes in all, then `tieLess`.
  private static func byActivity<T>(
    _ a: (interval: TrafficCounts, total: TrafficCounts, tie: T),
    _ b: (interval: TrafficCounts, total: TrafficCounts, tie: T), _ tieLess: (T, T) -> Bool
  ) -> Bool {
    if a.interval.bytes != b.interval.bytes { return a.interval.bytes > b.interval.bytes }
    if a.total.bytes != b.total.bytes { return a.total.bytes > b.total.bytes }
    return tieLess(a.tie, b.tie)
  }

  /// Where a flow goes in the report: most bytes this interval first, then most bytes in all,
  /// then by remote end, local port and protocol; the table's order among flows equal in all
  /// of these (so the order is the one a stable sort of the reports gave).
  private struct FlowOrder {
    let intervalBytes: UInt64
    let totalBytes: UInt64
    let remote: IPAddress
    let remotePort: UInt16
    let localPort: UInt16
    let ipProtocol: UInt8
    let index: Int

    init(_ flow: Flow, interval: TrafficCounts, index: Int) {
      intervalBytes = interval.bytes
      totalBytes = flow.counts.bytes
      remote = flow.remoteAddress
      remotePort = flow.remotePort
      localPort = flow.localPort
      ipProtocol = flow.ipProtocol
      self.index = index
    }

    static func precedes(_ a: FlowOrder, _ b: FlowOrder) -> Bool {
      if a.intervalBytes != b.intervalBytes { return a.intervalBytes > b.intervalBytes }
      if a.totalBytes != b.totalBytes { return a.totalBytes > b.totalBytes }
      return (a.remote, a.remotePort, a.localPort, a.ipProtocol, a.index)
        < (b.remote, b.remotePort, b.localPort, b.ipProtocol, b.index)
    }
  }

  /// Marks what was reported, and retires the flows idle since before `captureTime` less
  /// `idleTimeout` into the retired totals.
  private func startNextInterval(reported groups: GroupTotals, captureTime: Timestamp?) {
    reportedTotals = table.totals
    reportedHosts = groups.hosts.mapValues(\.counts)
    reportedProcesses = groups.processes.mapValues(\.counts)
    table.markReported()
    guard let captureTime else { return }
    for flow in table.removeIdle(before: captureTime - idleTimeout) { retired.add(flow) }
  }
}

/// Traffic summed per remote host and per owning process (nil: bytes no process was found
/// for), with the number of flows in each.
struct GroupTotals {
  var hosts: [IPAddress: (counts: TrafficCounts, flows: Int)] = [:]
  var processes: [SocketOwner?: (counts: TrafficCounts, flows: Int)] = [:]

  /// Counts `flow` in its host, and in its owner for what was attributed and in the unknown for
  /// the rest.
  mutating func add(_ flow: Flow) {
    hosts[flow.remoteAddress, default: (TrafficCounts(), 0)].counts += flow.counts
    hosts[flow.remoteAddress, default: (TrafficCounts(), 0)].flows += 1
    if let owner = flow.owner {
      processes[owner, default: (TrafficCounts(), 0)].counts += flow.attributedCounts
      processes[owner, default: (TrafficCounts(), 0)].flows += 1
    }
    let unknown = flow.unknownCounts
    if flow.owner == nil || unknown.packets > 0 {
      processes[nil, default: (TrafficCounts(), 0)].counts += unknown
      processes[nil, default: (TrafficCounts(), 0)].flows += 1
    }
  }
}
