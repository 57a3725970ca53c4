import VPNStatModel

/// `vpnstat connect` and `disconnect` in words: the line that says the start was accepted,
/// and the one that says how it ended.
package enum TunnelControlText {
  /// "accepted by wg-quick (/etc/wireguard/wg0.conf); waiting up to 30 s for a WireGuard
  /// handshake on wg0".
  package static func accepted(_ report: TunnelControlReport) -> String {
    let by = report.manager.map { "accepted by \(managerWords($0))" } ?? "accepted"
    guard !report.waitedFor.isEmpty else { return by }
    let limit = report.timeout.map { "up to \(Units.duration($0)) " } ?? ""
    return "\(by); waiting \(limit)for " + report.waitedFor.map(\.description).joined(separator: ", then ")
  }

  /// How it ended, one sentence: "connected: a WireGuard handshake on wg0, 0.31 s after the
  /// start", "accepted, but no WireGuard handshake on wg0 within 30 s (…)".
  package static func message(_ report: TunnelControlReport) -> String {
    let detail = report.detail.map(TerminalText.sanitize)
    let action: String
    switch report.command {
    case .connect: action = "start"
    case .disconnect: action = "stop"
    }
    switch report.outcome {
    case .connected:
      let took = report.elapsed.map { ", \(seconds($0)) after the start" } ?? ""
      return "connected: \(detail ?? "it is real")\(took)"
    case .timedOut:
      let missing = report.missing?.missing ?? "not real"
      let within = report.timeout.map { " within \(Units.duration($0))" } ?? ""
      let notes = [detail.map { "last seen: \($0)" }, report.missing?.hint].compactMap { $0 }
      return "accepted, but \(missing)\(within)" + (notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))")
    case .refused:
      return "the \(action) was refused: \(detail ?? "no reason given")"
    case .notPermitted:
      return "the \(action) was refused, not permitted: \(detail ?? "no reason given")"
    case .gaveUp:
      return "accepted, but \(detail ?? "the manager gave up")"
    case .notAllowed, .undecided:
      return "\(detail ?? "connecting is not allowed now"); nothing was started"
    case .disconnected:
      let took = report.elapsed.map { ", confirmed in \(seconds($0))" } ?? ""
      return "disconnected: \(detail ?? "stopped")\(took)"
    case .notConnected:
      return "not connected: \(detail ?? "nothing runs"); nothing was done"
    case .stillUp:
      let after = report.timeout.map { " after \(Units.duration($0))" } ?? ""
      return "asked to stop, but \(detail ?? "it is still up")\(after)"
    }
  }

  /// "wg-quick (/etc/wireguard/wg0.conf)", "networkmanager 'vpnt' (UUID)".
  static func managerWords(_ manager: TunnelManager) -> String {
    let id = manager.id.map(TerminalText.sanitize)
    if let name = manager.connectionName, let id {
      return "\(manager.kind.rawValue) '\(TerminalText.sanitize(name))' (\(id))"
    }
    return manager.kind.rawValue + (id.map { " (\($0))" } ?? "")
  }

  /// "0.31 s", "12.3 s", "123 s": a time taken, to three figures.
  static func seconds(_ duration: Duration) -> String {
    "\(Units.fixed(max(0, Double(duration.nanoseconds) / 1e9))) s"
  }
}

/// The connect/disconnect object of the JSON contract: one per run, whatever the outcome.
package enum TunnelControlJSON {
  package static func render(_ report: TunnelControlReport, generatedAt: Timestamp) -> [UInt8] {
    var json = JSONWriter(capacity: 1024)
    json.beginObject()
    json.envelope(generatedAt: generatedAt, estimateNotes: nil)
    json.field("command", report.command.word)
    json.field("name", report.name)
    json.key("manager")
    TunnelManagerJSON.write(report.manager, into: &json)
    json.name(report.device, key: "device", encodingKey: "device_name_encoding")
    json.field("started_at", report.startedAt?.rfc3339(fractionDigits: 3))
    json.field("accepted_at", report.acceptedAt?.rfc3339(fractionDigits: 3))
    json.field("confirmed_at", report.confirmedAt?.rfc3339(fractionDigits: 3))
    json.field("elapsed_seconds", report.elapsed.map { Double($0.nanoseconds) / 1e9 })
    json.field("timeout_seconds", report.timeout.map { Double($0.nanoseconds) / 1e9 })
    json.field("waited_for", report.waitedFor.map(\.description))
    json.field("outcome", report.outcome.rawValue)
    json.field("message", TunnelControlText.message(report))
    json.field("recorded", report.recorded)
    json.endObject()
    return json.bytes
  }
}
