/// What an enforcer decided and the database would not take — a stop, a window it opened — kept
/// in its spool beside the database until a later write succeeds (its own, or the next start's).
/// A stop is never lost: the database may be held locked by any user who may read it, so what it
/// refuses is written down elsewhere, one line each.
public enum SpooledRecord: Hashable, Sendable {
  case stop(StopRecord)
  /// A window opened for `tunnel`, with the tunnel-class totals it was opened at.
  case window(SessionWindow, tunnel: InterfaceName, usageBase: TrafficCounts)

  /// One line (no line break inside, fields apart by tabs): the kind, then `key=value` fields.
  /// Names and details are in vpnstat's escaped form (printable ASCII, `\xHH` for any other
  /// byte), so nothing in them can end a field or the line.
  public var line: String {
    var fields: [String]
    switch self {
    case .stop(let stop):
      fields = ["stop", "at=\(stop.at.nanoseconds)", "reason=\(stop.reason.rawValue)"]
      if let interface = stop.interface { fields.append("interface=\(interface.escaped)") }
      if let detail = stop.detail { fields.append("detail=\(InterfaceName(detail).escaped)") }
    case .window(let window, let tunnel, let usageBase):
      fields = [
        "window", "opened=\(window.openedAt.nanoseconds)", "session_ends=\(window.sessionEndsAt.nanoseconds)",
        "pause_ends=\(window.pauseEndsAt.nanoseconds)", "session=\(window.lengths.session.nanoseconds)",
        "pause=\(window.lengths.pause.nanoseconds)", "tunnel=\(tunnel.escaped)",
        "usage_rx=\(usageBase.rxBytes)", "usage_tx=\(usageBase.txBytes)",
      ]
    }
    return fields.joined(separator: "\t")
  }

  /// Reads a line back; nil when it is not one (a line cut short by a crash, another format).
  public init?(line: Substring) {
    let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
    guard let kind = fields.first else { return nil }
    var values: [Substring: Substring] = [:]
    for field in fields.dropFirst() {
      guard let equals = field.firstIndex(of: "=") else { return nil }
      values[field[..<equals]] = field[field.index(after: equals)...]
    }
    func number(_ key: Substring) -> Int64? { values[key].flatMap { Int64($0) } }
    switch kind {
    case "stop":
      // Values no vpnstat writes make the line unreadable, as in the database (`Timestamp(stored:)`).
      guard let at = number("at").flatMap(Timestamp.init(stored:)),
        let reason = values["reason"].flatMap({ StopReason(rawValue: String($0)) })
      else { return nil }
      let interface = values["interface"].map { InterfaceName(parsingEscaped: String($0)) }
      let detail = values["detail"].map {
        String(decoding: InterfaceName(parsingEscaped: String($0)).bytes, as: UTF8.self)
      }
      self = .stop(StopRecord(at: at, interface: interface, reason: reason, detail: detail))
    case "window":
      guard let opened = number("opened").flatMap(Timestamp.init(stored:)),
        let sessionEnds = number("session_ends").flatMap(Timestamp.init(stored:)),
        let pauseEnds = number("pause_ends").flatMap(Timestamp.init(stored:)),
        let session = number("session"), let pause = number("pause"),
        let lengths = SessionLengths(storedSession: session, pause: pause),
        let window = SessionWindow(
          stored: opened, sessionEndsAt: sessionEnds, pauseEndsAt: pauseEnds, lengths: lengths),
        let tunnel = values["tunnel"], !tunnel.isEmpty,
        let rx = values["usage_rx"].flatMap({ UInt64($0) }), let tx = values["usage_tx"].flatMap({ UInt64($0) })
      else { return nil }
      self = .window(
        window, tunnel: InterfaceName(parsingEscaped: String(tunnel)),
        usageBase: TrafficCounts(rxBytes: rx, txBytes: tx))
    default:
      return nil
    }
  }

  /// Every record of a spool's text, in order, and how many lines were not records.
  public static func parse(_ text: String) -> (records: [SpooledRecord], unreadable: Int) {
    var records: [SpooledRecord] = []
    var unreadable = 0
    for line in text.split(separator: "\n") {
      if let record = SpooledRecord(line: line) { records.append(record) } else { unreadable += 1 }
    }
    return (records, unreadable)
  }
}

/// What readers show and the gate and an enforcer decide from while records wait in the spool:
/// the session, its last stop and last refusal as they will be once the records are written —
/// a window where the stored record would take it (`SessionRecord.adopting`), the last stop the
/// newest spooled one, and a stop in the pause the enforcer's refusal (`StopRecord.refusal`),
/// exactly as the enforcer writes them.
public struct SpooledSession: Hashable, Sendable {
  public var record: SessionRecord
  public var lastStop: StopRecord?
  public var lastRefusal: Refusal?

  public init(record: SessionRecord, lastStop: StopRecord?, lastRefusal: Refusal?) {
    self.record = record
    self.lastStop = lastStop
    self.lastRefusal = lastRefusal
  }

  /// The session once `records` (a spool's, in order) are written.
  public func applying(_ records: [SpooledRecord]) -> SpooledSession {
    var result = self
    for record in records {
      switch record {
      case .window(let window, let tunnel, let usageBase):
        if let adopted = result.record.adopting(window, tunnel: tunnel, usageBase: usageBase) {
          result.record = adopted
        }
      case .stop(let stop):
        result.lastStop = stop
        if let refusal = stop.refusal(pauseEndsAt: result.record.window?.pauseEndsAt) { result.lastRefusal = refusal }
      }
    }
    return result
  }
}
