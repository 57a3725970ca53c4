import VPNStatModel

/// The JSON contract (ARCHITECTURE.md, "The JSON contract"), schema version 1: one compact object.
/// `status --json` prints one; `watch --json` one per line.
package enum StatusJSON {
  package static let schemaVersion = 1

  package static func render(_ snapshot: StatusSnapshot) -> [UInt8] {
    var json = JSONWriter(capacity: 4096 + snapshot.interfaces.count * 600)
    write(snapshot, into: &json)
    return json.bytes
  }

  /// The document and a newline, as `watch --json` prints it: written once and copied once out
  /// of the writer (a thousand interfaces make half a megabyte, which a newline appended
  /// afterwards would copy again).
  package static func line(_ snapshot: StatusSnapshot) -> [UInt8] {
    var json = JSONWriter(capacity: 4096 + snapshot.interfaces.count * 600)
    write(snapshot, into: &json)
    json.newline()
    return json.bytes
  }

  /// The document and a newline handed to `output` in pieces as they are written, from one
  /// buffer used again for each: what a one-off `status --json` prints.
  package static func writeLine(_ snapshot: StatusSnapshot, to output: (UnsafeRawBufferPointer) -> Void) {
    withoutActuallyEscaping(output) { output in
      var json = JSONWriter(capacity: min(4096 + snapshot.interfaces.count * 600, JSONWriter.piece * 2))
      json.sink = output
      write(snapshot, into: &json)
      json.newline()
      json.passOn()
    }
  }

  package static func write(_ snapshot: StatusSnapshot, into json: inout JSONWriter) {
    json.beginObject()
    json.envelope(generatedAt: snapshot.generatedAt, estimateNotes: StatusSnapshot.estimateNotes)
    json.field("source", snapshot.source.rawValue)
    json.field("source_fallback", snapshot.fallbackReason)
    json.key("interfaces")
    json.beginArray()
    snapshot.interfaces.withUnsafeBufferPointer { reports in
      for index in reports.indices {
        write(reports.baseAddress! + index, at: snapshot.generatedAt, into: &json)
        json.passOnIfFull()
      }
    }
    json.endArray()
    json.key("classes")
    json.beginObject()
    let hasLedger = snapshot.interfaces.indices.contains { snapshot.interfaces[$0].ledger != nil }
    for (interfaceClass, summary) in zip(InterfaceClass.allCases, snapshot.classSummaries) {
      json.key(interfaceClass.rawValue)
      json.beginObject()
      json.field("interfaces", summary.interfaces)
      json.trafficCounts(summary.counters)
      let totals = summary.totals ?? (hasLedger ? LedgerTotals(firstSeenAt: snapshot.generatedAt) : nil)
      json.withRoom(ledgerRoom) { writeLedger(totals, into: &$0) }
      json.field("rx_bytes_per_second", summary.rate?.rxBytesPerSecond)
      json.field("tx_bytes_per_second", summary.rate?.txBytesPerSecond)
      json.endObject()
    }
    json.endObject()
    json.key("problems")
    json.beginArray()
    for problem in snapshot.problems {
      json.beginObject()
      json.name(problem.name, key: "name", encodingKey: "name_encoding")
      json.field("message", problem.message)
      json.endObject()
    }
    json.endArray()
    json.field("warnings", snapshot.warnings)
    json.key("session")
    if let session = snapshot.session {
      SessionJSON.write(session, into: &json)
    } else {
      json.null()
    }
    json.endObject()
  }

  /// One report held as a value (a test's).
  static func write(_ report: InterfaceReport, at now: Timestamp, into json: inout JSONWriter) {
    withUnsafePointer(to: report) { write($0, at: now, into: &json) }
  }

  /// One report, read through its address where it lies in the snapshot: passed by value from
  /// the array, each of a thousand reports was copied whole first (an outlined copy and its
  /// release, every reference in it counted up and down) to write a few of its fields.
  static func write(_ report: UnsafePointer<InterfaceReport>, at now: Timestamp, into json: inout JSONWriter) {
    json.beginObject()
    json.name(report.pointee.name, key: "name", encodingKey: "name_encoding")
    // A report with no ledger, rate, WireGuard or manager (every one of a `status --json` without
    // a database but its tunnels') ends in its runs of nulls, written with the rest.
    let plainEnd =
      report.pointee.ledger == nil && report.pointee.rate == nil && report.pointee.wireguard == nil
      && !report.pointee.hasManager
    json.withRoom(reportRoom) { room in
      room.field("index", Int64(report.pointee.index))
      room.field("class", word: report.pointee.interfaceClass.word)
      room.field("class_by", word: report.pointee.classBy.word)
      room.field("state", word: report.pointee.state.word)
      room.field("rx_bytes", report.pointee.counters.traffic.rxBytes)
      room.field("tx_bytes", report.pointee.counters.traffic.txBytes)
      room.field("rx_packets", report.pointee.counters.traffic.rxPackets)
      room.field("tx_packets", report.pointee.counters.traffic.txPackets)
      room.field("rx_errors", report.pointee.counters.rxErrors)
      room.field("tx_errors", report.pointee.counters.txErrors)
      room.field("rx_dropped", report.pointee.counters.rxDropped)
      room.field("tx_dropped", report.pointee.counters.txDropped)
      room.field("counter_width", UInt64(report.pointee.width.rawValue))
      writeLedger(report.pointee.ledger, into: &room)
      if plainEnd {
        room.fields(Self.nullRates)
        room.fields(Self.nullExtras)
        room.endObject()
      }
    }
    guard !plainEnd else { return }
    if let rate = report.pointee.rate {
      json.field("rx_bytes_per_second", rate.rxBytesPerSecond)
      json.field("tx_bytes_per_second", rate.txBytesPerSecond)
    } else {
      json.fields(nullRates)
    }
    if report.pointee.wireguard == nil && !report.pointee.hasManager {
      json.fields(nullExtras)
    } else {
      json.key("wireguard")
      WireGuardJSON.write(report.pointee.wireguard, at: now, into: &json)
      json.key("manager")
      TunnelManagerJSON.write(report.pointee.manager, into: &json)
    }
    json.endObject()
  }

  // A report's fields that are null together, as runs of text (`JSONWriter.fields`): the
  // ledger's (two runs), the rate's, and WireGuard's with the manager's.
  static let nullTotals: StaticString =
    #""total_rx_bytes":null,"total_tx_bytes":null,"total_rx_packets":null,"total_tx_packets":null"#
  static let nullLedgerCounts: StaticString = #""resets":null,"wraps":null,"discarded":null,"first_seen_at":null"#
  static let nullRates: StaticString = #""rx_bytes_per_second":null,"tx_bytes_per_second":null"#
  static let nullExtras: StaticString = #""wireguard":null,"manager":null"#

  /// The most a report's fields from `index` to its ledger's and the runs of nulls after them
  /// take: keys, quotes and commas, twenty digits a count, a time's text (`JSONWriterTests`
  /// writes the largest).
  static let reportRoom = 1024

  /// The most the ledger's fields take (`writeLedger`).
  static let ledgerRoom = 512

  /// The ledger's fields; all `null` when there is no store to keep a ledger in.
  static func writeLedger(_ ledger: LedgerTotals?, into room: inout JSONRoom) {
    guard let ledger else {
      room.fields(nullTotals)
      return room.fields(nullLedgerCounts)
    }
    room.field("total_rx_bytes", ledger.traffic.rxBytes)
    room.field("total_tx_bytes", ledger.traffic.txBytes)
    room.field("total_rx_packets", ledger.traffic.rxPackets)
    room.field("total_tx_packets", ledger.traffic.txPackets)
    room.field("resets", ledger.resets)
    room.field("wraps", ledger.wraps)
    room.field("discarded", ledger.discarded)
    room.field("first_seen_at", rfc3339: ledger.firstSeenAt)
  }
}

// Each value's raw value as a literal, for `JSONWriter.field(_:word:)`: a report writes three of
// them, and reading a String's bytes cost more than writing the field (`JSONWriterTests` checks
// each against `rawValue`).
extension InterfaceClass {
  package var word: StaticString {
    switch self {
    case .tunnel: "tunnel"
    case .wifi: "wifi"
    case .cellular: "cellular"
    case .ethernet: "ethernet"
    case .loopback: "loopback"
    case .other: "other"
    }
  }
}

extension ClassEvidence {
  package var word: StaticString {
    switch self {
    case .override: "override"
    case .kind: "kind"
    case .devtype: "devtype"
    case .wireless: "wireless"
    case .tunFlags: "tun_flags"
    case .type: "type"
    case .name: "name"
    case .none: "none"
    }
  }
}

extension LinkState {
  package var word: StaticString {
    switch self {
    case .up: "up"
    case .down: "down"
    case .dormant: "dormant"
    case .lowerLayerDown: "lowerlayerdown"
    case .notPresent: "notpresent"
    case .testing: "testing"
    case .unknown: "unknown"
    }
  }
}
