import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// `flows --json`: one compact object per report (NDJSON), schema version 1. The fields are
/// listed in vpnstat(1); `null` where a value is unknown.
public enum FlowJSON {

  /// The report as one JSON object (no trailing newline). `top` limits the flow, host and
  /// process lists to the most active.
  public static func render(_ snapshot: FlowSnapshot, top: Int? = nil) -> [UInt8] {
    let limit = top ?? Int.max
    var json = JSONWriter(capacity: 1024 + min(snapshot.flows.count, limit) * 400)
    json.beginObject()
    json.envelope(generatedAt: snapshot.generatedAt, estimateNotes: snapshot.estimateNotes)
    switch snapshot.origin {
    case .interface(let name, let index):
      json.name(name, key: "interface", encodingKey: "name_encoding")
      json.key("interface_index")
      if let index { json.number(Int(index)) } else { json.null() }
      json.key("file")
      json.null()
    case .file(let path):
      json.name(nil, key: "interface", encodingKey: "name_encoding")
      json.key("interface_index")
      json.null()
      json.key("file")
      json.string(path)
    }
    json.key("link_type")
    json.string(snapshot.linkType.name)
    json.key("started_at")
    json.string(snapshot.startedAt.rfc3339(fractionDigits: 3))
    json.key("interval_seconds")
    json.number(snapshot.intervalSeconds)
    json.key("elapsed_seconds")
    json.number(snapshot.elapsedSeconds)
    json.key("captured")
    json.beginObject()
    json.key("packets")
    json.number(snapshot.captured.packets)
    json.key("bytes")
    json.number(snapshot.captured.bytes)
    json.key("link_bytes")
    json.number(snapshot.captured.linkBytes)
    json.key("non_ip_packets")
    json.number(snapshot.captured.nonIPPackets)
    json.key("interval_packets")
    json.number(snapshot.capturedInterval.packets)
    json.key("interval_bytes")
    json.number(snapshot.capturedInterval.bytes)
    json.key("dropped")
    json.number(snapshot.drops?.dropped)
    json.key("if_dropped")
    json.number(snapshot.drops?.interfaceDropped)
    json.endObject()
    json.key("interface_counters")
    if let counters = snapshot.interfaceCounters {
      json.beginObject()
      json.trafficCounts(counters)
      json.endObject()
    } else {
      json.null()
    }
    json.key("coverage")
    json.number(snapshot.coverage)
    json.key("capture_restarts")
    json.number(snapshot.restarts)
    let seconds = snapshot.intervalSeconds

    json.key("flows")
    json.beginArray()
    for report in snapshot.flows.prefix(limit) {
      let flow = report.flow
      json.beginObject()
      json.key("protocol")
      json.string(PacketParser.protocolName(flow.ipProtocol))
      json.key("ip_version")
      json.number(flow.localAddress.isIPv4 ? 4 : 6)
      json.key("local_address")
      json.string(flow.localAddress.description)
      json.key("local_port")
      if flow.portsKnown { json.number(Int(flow.localPort)) } else { json.null() }
      json.key("remote_address")
      json.string(flow.remoteAddress.description)
      json.key("remote_port")
      if flow.portsKnown { json.number(Int(flow.remotePort)) } else { json.null() }
      json.trafficCounts(flow.counts)
      writeRates(report.interval, seconds: seconds, into: &json)
      json.key("first_seen_at")
      json.string(flow.firstSeen.rfc3339(fractionDigits: 3))
      json.key("last_seen_at")
      json.string(flow.lastSeen.rfc3339(fractionDigits: 3))
      json.key("local_by")
      json.string(flow.localBy.rawValue)
      json.key("pid")
      if let owner = flow.owner { json.number(Int(owner.pid)) } else { json.null() }
      json.key("command")
      json.string(flow.owner?.command)
      json.key("attribution")
      json.string(attributionName(flow.attribution))
      json.key("unknown_bytes")
      json.number(flow.unknownCounts.bytes)
      json.endObject()
    }
    json.endArray()

    json.key("hosts")
    json.beginArray()
    for host in snapshot.hosts.prefix(limit) {
      json.beginObject()
      json.key("address")
      json.string(host.key.description)
      json.trafficCounts(host.total)
      writeRates(host.interval, seconds: seconds, into: &json)
      json.key("flows")
      json.number(host.flows)
      json.endObject()
    }
    json.endArray()

    json.key("processes")
    json.beginArray()
    for process in snapshot.processes.prefix(limit) {
      json.beginObject()
      json.key("pid")
      if let owner = process.key { json.number(Int(owner.pid)) } else { json.null() }
      json.key("command")
      json.string(process.key?.command)
      json.trafficCounts(process.total)
      writeRates(process.interval, seconds: seconds, into: &json)
      json.key("flows")
      json.number(process.flows)
      json.endObject()
    }
    json.endArray()

    json.key("warnings")
    json.strings(snapshot.warnings)
    json.endObject()
    return json.bytes
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
    json.key("rx_bytes_per_second")
    json.number(seconds > 0 ? Double(interval.rxBytes) / seconds : nil)
    json.key("tx_bytes_per_second")
    json.number(seconds > 0 ? Double(interval.txBytes) / seconds : nil)
  }
}
