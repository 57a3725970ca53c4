import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// What a `flows` run was asked to do, from the command line.
package struct FlowCaptureOptions: Sendable {
  /// A BPF filter expression (libpcap syntax).
  package var filter: String?
  /// Bytes kept of each packet: headers are all vpnstat needs, and lengths come from the IP header.
  package var snapshotLength: Int32 = 256
  /// Time between reports; files: slices of packet time (nil: one report for the whole file).
  package var interval: Duration?
  /// Stop after this many reports.
  package var count: Int?
  /// Addresses to treat as this host's (besides the interfaces' own, for live captures).
  package var localAddresses: [IPAddress] = []
  /// Look up processes (live only).
  package var processes = true
  package var procRoot: SystemPath = "/proc"
  /// At most one /proc walk per this time, to find owners of new flows.
  package var lookupInterval: Duration = .milliseconds(200)
  /// Flows without packets for this long leave the flow list (their traffic stays in the totals).
  package var idleTimeout: Duration = .seconds(300)
  /// Save what is captured to this pcap file.
  package var writePath: String?

  package init() {}
}

/// Addresses of this host's interfaces (getifaddrs): a packet from one of them is outgoing.
package enum LocalAddresses {
  package static func current() -> Set<IPAddress> {
    Set(((try? LinkAddresses.ipAddresses()) ?? []).compactMap(IPAddress.init(networkOrder:)))
  }
}

/// The interface's kernel counters over the capture's lifetime, instance by instance, so that
/// coverage compares like with like across a recreated tunnel. `name` nil sums every interface
/// (for `any`).
struct InterfaceCounterWindow {
  private var reader: CounterReader
  let name: InterfaceName?
  private var last: [InterfaceName: LedgerBaseline] = [:]
  private(set) var total = TrafficCounts()
  private(set) var working = true

  init(name: InterfaceName?) {
    reader = CounterReader(.netlink)
    self.name = name
  }

  /// The first call takes the baseline; each later one adds the traffic since the one before.
  mutating func sample(clock: any TimeSource) {
    guard working else { return }
    guard let sample = try? reader.sample(at: clock) else {
      working = false
      return
    }
    for interface in sample.interfaces where name == nil || interface.name == name {
      let reading = LedgerBaseline(interface, taken: sample.taken)
      if let old = last[interface.name] {
        if let delta = CounterDelta.between(old, reading) { total += delta.traffic }
      } else if baselineTaken {
        // A name that appeared during the capture: all of its traffic is new.
        total += interface.counters.traffic
      }
      last[interface.name] = reading
    }
    baselineTaken = true
  }
  private var baselineTaken = false
}

/// `vpnstat flows IFACE`: captures live, reports every interval, and follows the interface when
/// it is recreated (a new tunnel instance is captured as soon as it exists).
package final class LiveFlowCapture {
  package let interface: InterfaceName
  package let options: FlowCaptureOptions
  let clock: any TimeSource
  let open: (InterfaceName) throws -> any LivePacketSource
  private let aggregator: FlowAggregator
  private var source: (any LivePacketSource)?
  private var writer: CaptureFileWriter?
  private var linkType: CaptureLinkType
  private var closedDrops = CaptureDrops()
  private var restarts = 0
  private var warnings: [String] = []
  private var lostSince: Timestamp?
  private var lostReason = ""
  private var lastReopenAttempt: Int64 = 0
  private var counters: InterfaceCounterWindow

  /// Opens the capture (errors here end the command: 77, 69, 64) and the capture file.
  package init(
    interface: InterfaceName, options: FlowCaptureOptions,
    clock: any TimeSource = SystemTimeSource(),
    open: ((InterfaceName) throws -> any LivePacketSource)? = nil
  ) throws {
    self.interface = interface
    self.options = options
    self.clock = clock
    let snapshotLength = options.snapshotLength
    let filter = options.filter
    if let open {
      self.open = open
    } else {
      self.open = { name in
        try PcapLiveSource(interface: name, snapshotLength: snapshotLength, filter: filter)
      }
    }
    let first = try self.open(interface)
    source = first
    linkType = first.linkType
    if let path = options.writePath {
      writer = try CaptureFileWriter(
        path: path, linkType: first.linkType, snapshotLength: snapshotLength)
    }
    let resolver =
      options.processes
      ? SocketOwnerResolver(procRoot: options.procRoot, minimumInterval: options.lookupInterval)
      : nil
    aggregator = FlowAggregator(
      localAddresses: LocalAddresses.current().union(options.localAddresses), resolver: resolver,
      idleTimeout: options.idleTimeout)
    counters = InterfaceCounterWindow(name: interface.bytes == Array("any".utf8) ? nil : interface)
    // The owners of every socket there is now, learnt before the command says it listens: a
    // socket made after that line is one the capture may have to look for, never one it
    // happened to find at its start (a walk that began late found a sender's socket the line
    // had said was made after the capture started).
    aggregator.resolver?.rescan(for: [], at: clock.now().boottime)
  }

  /// The line tcpdump also prints, for stderr: the capture is running, and the sockets that
  /// existed when it opened are known, from here on.
  package var listeningMessage: String {
    "listening on \(interface.terminalText), link-type \(linkType.name), snapshot length \(options.snapshotLength) bytes"
  }

  /// Captures until `options.count` reports were made or SIGINT/SIGTERM arrives (the interval
  /// in progress is then reported too). `emit` gets every report.
  package func run(emit: (FlowSnapshot) throws -> Void) throws {
    // SIGINT and SIGTERM as a readable descriptor, so the loop can stop cleanly (report the
    // interval in progress, flush the file) instead of dying mid-write.
    let signals = try SignalChannel.stopping()
    let interval = options.interval ?? .seconds(1)
    let startedAt = clock.now()
    counters.sample(clock: clock)
    var previousReport = startedAt.boottime
    var nextReport = startedAt.boottime + interval.nanoseconds
    var reports = 0
    var stopping = false
    defer {
      source?.close()
      writer?.close()
    }
    while true {
      var now = clock.now().boottime
      var wake = nextReport
      if aggregator.table.pendingCount > 0, let next = aggregator.resolver?.nextRescan() {
        wake = min(wake, next)
      }
      if source == nil { wake = min(wake, now + 100_000_000) }
      var descriptors = [signals.descriptor]
      if let source { descriptors.append(FileDescriptor(rawValue: source.selectableDescriptor)) }
      _ = try waitForReadable(descriptors, timeout: .nanoseconds(max(0, wake - now)))
      if !signals.received().isEmpty { stopping = true }
      if drain() > 0, !stopping {
        // Let packets gather: one wakeup per packet costs more CPU than the capture itself
        // at high rates, and 5 ms is far below the report and lookup times.
        clock.sleep(for: .milliseconds(5))
      }
      now = clock.now().boottime
      if let resolver = aggregator.resolver, aggregator.table.pendingCount > 0,
        resolver.mayRescan(at: now)
      {
        resolver.resolve(&aggregator.table, at: now, wall: clock.now().wall, force: false)
      }
      if source == nil, now - lastReopenAttempt >= 100_000_000 { reopen(at: now) }
      guard now >= nextReport || stopping else { continue }

      // Report: counters first, then what the capture already holds, so captured ≥ counted.
      counters.sample(clock: clock)
      drain()
      checkInstance(at: now)
      let reading = clock.now()
      aggregator.resolver?.resolve(
        &aggregator.table, at: reading.boottime, wall: reading.wall, force: true)
      var drops = closedDrops
      if let current = source?.drops() { drops = drops + current }
      var notes = warnings
      if let lostSince {
        notes.append(
          "\(lostReason) at \(lostSince.rfc3339); waiting for '\(interface.terminalText)' to come back"
        )
      }
      let snapshot = aggregator.report(
        origin: .interface(interface, index: source.map { $0.interfaceIndex }), linkType: linkType,
        generatedAt: reading.wall, startedAt: startedAt.wall,
        intervalSeconds: Double(reading.boottime - previousReport) / 1e9,
        elapsedSeconds: Double(reading.boottime - startedAt.boottime) / 1e9, drops: drops,
        interfaceCounters: counters.working ? counters.total : nil, restarts: restarts,
        warnings: notes,
        captureTime: reading.wall)
      try writer?.flush()
      try emit(snapshot)
      reports += 1
      previousReport = reading.boottime
      if stopping || reports >= options.count ?? Int.max { return }
      aggregator.table.localAddresses = LocalAddresses.current().union(options.localAddresses)
      while nextReport <= reading.boottime { nextReport += interval.nanoseconds }
    }
  }

  /// Reads every packet waiting (bounded, so timers stay on time under load); returns how many.
  @discardableResult
  private func drain() -> Int {
    guard let current = source else { return 0 }
    let writer = writer
    var count = 0
    var failure: CaptureError?
    aggregator.table.add(link: current.linkType) { add in
      do throws(CaptureError) {
        while count < 100_000 {
          guard let packet = try current.next() else { return }
          add(packet.bytes, packet.wireLength, packet.timestamp)
          writer?.write(packet)
          count += 1
        }
      } catch {
        failure = error
      }
    }
    if let failure { lose(current, because: "\(failure)") }
    return count
  }

  /// The capture failed (the interface went down or away): keep its drop counts, close it, and
  /// try to open the interface again at once.
  private func lose(_ current: any LivePacketSource, because reason: String) {
    if let drops = current.drops() { closedDrops = closedDrops + drops }
    current.close()
    source = nil
    lostSince = clock.now().wall
    lostReason = reason
    reopen(at: clock.now().boottime)
  }

  /// Reopens when the interface exists again (a recreated tunnel has a new ifindex).
  private func reopen(at now: Int64) {
    lastReopenAttempt = now
    guard (try? LinkAddresses.index(of: interface)) != nil || interface.bytes == Array("any".utf8) else { return }
    guard let fresh = try? open(interface) else { return }
    if let writer, writer.linkType != fresh.linkType {
      writer.close()
      self.writer = nil
      warnings.append(
        "the new instance has link type \(fresh.linkType.name) (was \(writer.linkType.name)); stopped writing the capture file"
      )
    }
    source = fresh
    linkType = fresh.linkType
    restarts += 1
    lostSince = nil
  }

  /// A recreated interface whose old capture did not fail (no packets since) is noticed here:
  /// the name now has another ifindex.
  private func checkInstance(at now: Int64) {
    guard let current = source, current.interfaceIndex != 0 else { return }
    let index = (try? LinkAddresses.index(of: interface)) ?? 0
    guard index != current.interfaceIndex else { return }
    lose(current, because: "'\(interface.terminalText)' has a new ifindex")
  }
}

/// `vpnstat flows --read FILE`: the same accounting over a capture file, reported once for the
/// whole file or per slice of packet time with `--interval`.
package final class FileFlowCapture {
  package let source: PcapFileSource
  package let options: FlowCaptureOptions
  let clock: any TimeSource

  package init(path: String, options: FlowCaptureOptions, clock: any TimeSource = SystemTimeSource())
    throws(CaptureError)
  {
    source = try PcapFileSource(path: path, filter: options.filter)
    self.options = options
    self.clock = clock
  }

  /// Reads the whole file. A truncated or corrupt file still reports what was read before the
  /// damage, then fails with 65.
  package func run(emit: (FlowSnapshot) throws -> Void) throws {
    let aggregator = FlowAggregator(
      localAddresses: Set(options.localAddresses), resolver: nil, idleTimeout: options.idleTimeout)
    let writer = try options.writePath.map { (path) throws(CaptureError) in
      try CaptureFileWriter(
        path: path, linkType: source.linkType, snapshotLength: source.snapshotLength)
    }
    defer { writer?.close() }
    let link = source.linkType
    let interval = options.interval?.nanoseconds
    var first: Timestamp?
    var sliceStart = Timestamp(nanoseconds: 0)
    var last = Timestamp(nanoseconds: 0)
    var reports = 0
    let origin = FlowSnapshot.Origin.file(source.path)

    // Packet times are 1970…2262 (PcapFileSource checks), so their differences cannot overflow;
    // a slice may end after 2262, and then ends there.
    func sliceEnd(_ start: Timestamp, _ interval: Int64) -> Int64 {
      let (end, overflow) = start.nanoseconds.addingReportingOverflow(interval)
      return overflow ? .max : end
    }

    func report(until end: Timestamp) throws {
      let start = first ?? end
      let snapshot = aggregator.report(
        origin: origin, linkType: link, generatedAt: clock.now().wall, startedAt: start,
        intervalSeconds: Double((end - sliceStart).nanoseconds) / 1e9,
        elapsedSeconds: Double((end - start).nanoseconds) / 1e9, drops: nil, interfaceCounters: nil,
        restarts: 0,
        warnings: [], captureTime: end)
      try writer?.flush()
      try emit(snapshot)
      reports += 1
    }

    // Packets are added a slice at a time (the table borrowed once for each); the packet that
    // ends a slice is added after the report, still in libpcap's buffer as no read came since.
    while true {
      var ending: CapturedPacket?
      var failure: CaptureError?
      aggregator.table.add(link: link) { add in
        do throws(CaptureError) {
          while let packet = try source.next() {
            if first == nil {
              first = packet.timestamp
              sliceStart = packet.timestamp
            }
            if let interval, packet.timestamp.nanoseconds >= sliceEnd(sliceStart, interval) {
              ending = packet
              return
            }
            add(packet.bytes, packet.wireLength, packet.timestamp)
            writer?.write(packet)
            last = packet.timestamp
          }
        } catch {
          failure = error
        }
      }
      if let failure {
        try report(until: last)
        throw failure
      }
      guard let packet = ending, let interval else { break }
      try report(until: Timestamp(nanoseconds: sliceEnd(sliceStart, interval)))
      if reports >= options.count ?? Int.max { return }
      // Slices without packets are skipped: the next one starts where this packet falls.
      let skipped = (packet.timestamp.nanoseconds - sliceStart.nanoseconds) / interval
      sliceStart = Timestamp(nanoseconds: sliceStart.nanoseconds + skipped * interval)
      aggregator.add(packet, link: link)
      writer?.write(packet)
      last = packet.timestamp
    }
    try report(until: first == nil ? clock.now().wall : last)
  }
}
