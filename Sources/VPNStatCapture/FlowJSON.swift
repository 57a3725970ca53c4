import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// `flows --json`: one compact object per report (NDJSON), schema version 1. The fields are
/// listed in vpnstat-json(7); `null` where a value is unknown.
package enum FlowJSON {

  /// The report as one JSON object (no trailing newline). `top` limits the flow, host and
  /// process lists to the most active.
  package static func render(_ snapshot: FlowSnapshot, top: Int? = nil) -> [UInt8] {
    let limit = top ?? Int.max
    var json = JSONWriter(capacity: 1024 + min(snapshot.flows.count, limit) * 400)
    json.beginObject()
    json.envelope(generatedAt: snapshot.generatedAt, estimateNotes: snapshot.estimateNotes)
    writeOrigin(snapshot, into: &json)
    writeCapture(snapshot, into: &json)
    let seconds = snapshot.intervalSeconds
    json.key("flows")
    json.beginArray()
    for report in snapshot.flows.prefix(limit) { write(report, seconds: seconds, into: &json) }
    json.endArray()
    json.key("hosts")
    json.beginArray()
    for host in snapshot.hosts.prefix(limit) {
      json.beginObject()
      json.field("address", word: host.key.description)
      writeGroup(host, seconds: seconds, into: &json)
      json.endObject()
    }
    json.endArray()
    json.key("processes")
    json.beginArray()
    for process in snapshot.processes.prefix(limit) {
      json.beginObject()
      json.field("pid", process.key.map { Int($0.pid) })
      json.field("command", process.key?.command)
      writeGroup(process, seconds: seconds, into: &json)
      json.endObject()
    }
    json.endArray()
    json.field("warnings", snapshot.warnings)
    json.endObject()
    return json.bytes
  }

  /// Where the packets came from: an interface (and its index, when known) or a file.
  static func writeOrigin(_ snapshot: FlowSnapshot, into json: inout JSONWriter) {
    let (name, index, file): (InterfaceName?, Int?, String?) =
      switch snapshot.origin {
      case .interface(let name, let index): (name, index.map { Int($0) }, nil)
      case .file(let path): (nil, nil, path)
      }
    json.name(name, key: "interface", encodingKey: "name_encoding")
    json.field("interface_index", index)
    json.field("file", file)
    json.field("link_type", snapshot.linkType.name)
  }

  /// The capture itself: when and for how long, what it caught and dropped, against what the
  /// interface counted.
  static func writeCapture(_ snapshot: FlowSnapshot, into json: inout JSONWriter) {
    json.field("started_at", rfc3339: snapshot.startedAt, fractionDigits: 3)
    json.field("interval_seconds", snapshot.intervalSeconds)
    json.field("elapsed_seconds", snapshot.elapsedSeconds)
    json.key("captured")
    json.beginObject()
    json.field("packets", snapshot.captured.packets)
    json.field("bytes", snapshot.captured.bytes)
    json.field("link_bytes", snapshot.captured.linkBytes)
    json.field("non_ip_packets", snapshot.captured.nonIPPackets)
    json.field("interval_packets", snapshot.capturedInterval.packets)
    json.field("interval_bytes", snapshot.capturedInterval.bytes)
    json.field("dropped", snapshot.drops?.dropped)
    json.field("if_dropped", snapshot.drops?.interfaceDropped)
    json.endObject()
    json.key("interface_counters")
    if let counters = snapshot.interfaceCounters {
      json.beginObject()
      json.trafficCounts(counters)
      json.endObject()
    } else {
      json.null()
    }
    json.field("coverage", snapshot.coverage)
    json.field("capture_restarts", snapshot.restarts)
  }

  /// One flow: its ends, its traffic and rates, when it was seen, and whose it is.
  static func write(_ report: FlowSnapshot.FlowReport, seconds: Double, into json: inout JSONWriter) {
    let flow = report.flow
    json.beginObject()
    json.field("protocol", word: PacketParser.protocolName(flow.ipProtocol))
    json.field("ip_version", flow.localAddress.isIPv4 ? 4 : 6)
    json.field("local_address", word: flow.localAddress.description)
    json.field("local_port", flow.portsKnown ? Int(flow.localPort) : nil)
    json.field("remote_address", word: flow.remoteAddress.description)
    json.field("remote_port", flow.portsKnown ? Int(flow.remotePort) : nil)
    json.trafficCounts(flow.counts)
    writeRates(report.interval, seconds: seconds, into: &json)
    json.field("first_seen_at", rfc3339: flow.firstSeen, fractionDigits: 3)
    json.field("last_seen_at", rfc3339: flow.lastSeen, fractionDigits: 3)
    json.field("local_by", word: flow.localBy.rawValue)
    json.field("pid", flow.owner.map { Int($0.pid) })
    json.field("command", flow.owner?.command)
    json.field("attribution", word: attributionName(flow.attribution))
    json.field("unknown_bytes", flow.unknownCounts.bytes)
    json.endObject()
  }

  /// A host's or a process's totals, rates and number of flows.
  static func writeGroup<Key>(_ group: FlowSnapshot.GroupReport<Key>, seconds: Double, into json: inout JSONWriter) {
    json.trafficCounts(group.total)
    writeRates(group.interval, seconds: seconds, into: &json)
    json.field("flows", group.flows)
  }

  static func attributionName(_ attribution: Attribution) -> String {
    switch attribution {
    case .owned: "process"
    case .pending: "pending"
    case .unmatched: "no_socket"
    case .notLookedUp: "not_looked_up"
    }
  }

  static func writeRates(_ interval: TrafficCounts, seconds: Double, into json: inout JSONWriter) {
    json.field("rx_bytes_per_second", seconds > 0 ? Double(interval.rxBytes) / seconds : nil)
    json.field("tx_bytes_per_second", seconds > 0 ? Double(interval.txBytes) / seconds : nil)
  }
}
