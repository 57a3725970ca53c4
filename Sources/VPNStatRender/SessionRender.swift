import VPNStatModel

/// The session window in words, JSON and metrics: one place for each.
public enum SessionText {
  /// Whole seconds, rounded up, so a countdown reaches 0 exactly at the deadline.
  static func seconds(_ duration: Duration) -> Int64 {
    max(0, (duration.nanoseconds + 999_999_999) / 1_000_000_000)
  }

  static func minutes(_ duration: Duration) -> String { Units.duration(seconds: seconds(duration)) }

  /// The one-line summary: plan, state, countdown, pause.
  /// The message a refused connection gets: "free plan pause: you can reconnect in 31 min 12 s
  /// (at 12:45:03)"; nil when connecting is allowed.
  public static func pauseMessage(_ report: SessionReport, calendar: any LocalCalendar) -> String? {
    guard !report.canConnect, let wait = report.pauseRemaining, let window = report.window else { return nil }
    let seconds = (wait.nanoseconds + 999_999_999) / 1_000_000_000
    return
      "free plan pause: you can reconnect in \(Units.duration(seconds: seconds)) (at \(window.pauseEndsAt.localClockTime(in: calendar, withSeconds: true)))"
  }

  /// Why connecting is refused, for the gate: the data cap when it is reached, else the pause;
  /// nil when connecting is allowed.
  public static func refusal(_ report: SessionReport, calendar: any LocalCalendar) -> String? {
    guard !report.canConnect else { return nil }
    if let cap = report.dataCap, cap.reached { return DataCapText.refusal(cap, calendar: calendar) }
    return pauseMessage(report, calendar: calendar)
  }

  public static func headline(_ report: SessionReport, calendar: any LocalCalendar) -> String {
    switch report.state {
    case .unlimited:
      return "session: premium plan · " + (report.dataCap == nil ? "unlimited" : "no session window")
    case .none:
      guard report.enforcer != nil else {
        // Only an enforcer opens windows: without one, nothing limits a connection.
        return "session: free plan · no window · no enforcer running, so connecting opens no session"
      }
      return "session: free plan · no window · connecting opens a \(minutes(report.nextLengths.session)) session"
    case .active:
      let window = report.window!
      return
        "session: free plan · active · \(Units.clock(seconds: seconds(report.remaining ?? .zero))) left (until \(window.sessionEndsAt.localClockTime(in: calendar, withSeconds: true))), then a \(minutes(window.lengths.pause)) pause"
    case .paused:
      let window = report.window!
      return
        "session: free plan · paused · reconnect in \(minutes(report.pauseRemaining ?? .zero)) (at \(window.pauseEndsAt.localClockTime(in: calendar, withSeconds: true)))"
    case .expired:
      let window = report.window!
      let pending = report.enforcer != nil ? "disconnect pending" : "no enforcer running: the tunnel stays up"
      return
        "session: free plan · expired at \(window.sessionEndsAt.localClockTime(in: calendar, withSeconds: true)) · \(pending)"
    }
  }

  /// The lines under the headline: lengths, usage, the last stop.
  public static func details(_ report: SessionReport, options: DisplayOptions) -> [String] {
    var lines: [String] = []
    if report.plan == .free {
      var lengths = "lengths: "
      if let window = report.window {
        lengths += "\(minutes(window.lengths.session)) session, \(minutes(window.lengths.pause)) pause"
        if window.lengths != report.nextLengths {
          lengths += " (next window: \(minutes(report.nextLengths.session)) / \(minutes(report.nextLengths.pause)))"
        }
      } else {
        lengths += "\(minutes(report.nextLengths.session)) session, \(minutes(report.nextLengths.pause)) pause"
      }
      lines.append(lengths)
    }
    if report.plan == .free {
      if let enforcer = report.enforcer {
        lines.append(
          "enforcer: pid \(enforcer.pid) since \(enforcer.since.localClockTime(in: options.calendar, withSeconds: true)) on \(enforcer.tunnel.terminalText) (\(TerminalText.sanitize(enforcer.action)))"
        )
      } else {
        lines.append("enforcer: none running — nothing takes the tunnel down at the deadline or in the pause")
      }
    }
    if let tunnel = report.tunnel, let manager = report.manager {
      lines.append("tunnel: \(tunnel.terminalText) · \(TunnelManagerText.describe(manager))")
    }
    if let usage = report.usage {
      lines.append(
        "usage this window: \(options.estimate(usage.rxBytes)) received, \(options.estimate(usage.txBytes)) sent (tunnel class)"
      )
    }
    if let cap = report.dataCap { lines.append(DataCapText.line(cap, options: options)) }
    if let stop = report.lastStop {
      var line =
        "last stop: \(stop.reason.rawValue) at \(stop.at.localClockTime(in: options.calendar, withSeconds: true))"
      if let interface = stop.interface { line += " on \(options.name(interface))" }
      if let detail = stop.detail { line += " (\(TerminalText.sanitize(detail)))" }
      lines.append(line)
    }
    return lines
  }

  /// `vpnstat session` as text.
  public static func render(_ report: SessionReport, options: DisplayOptions) -> String {
    let style: TextStyle =
      switch report.state {
      case .active, .unlimited: .green
      case .paused, .expired: .red
      case .none: .plain
      }
    var lines = [style.apply(headline(report, calendar: options.calendar), color: options.color)]
    lines += details(report, options: options)
    if report.usage != nil || report.dataCap != nil {
      lines.append(
        TextStyle.dim.apply(
          "≈ usage is an estimate from interface counters (protocol overhead included).", color: options.color))
    }
    return lines.joined(separator: "\n") + "\n"
  }
}

/// The `session` object of the JSON contract.
public enum SessionJSON {
  public static func write(_ report: SessionReport, into json: inout JSONWriter) {
    json.beginObject()
    json.key("plan")
    json.string(report.plan.rawValue)
    json.key("state")
    json.string(report.state.rawValue)
    json.key("can_connect")
    json.bool(report.canConnect)
    json.key("now")
    json.string(report.now.rfc3339(fractionDigits: 3))
    json.key("opened_at")
    json.string(report.window?.openedAt.rfc3339(fractionDigits: 3))
    json.key("session_ends_at")
    json.string(report.window?.sessionEndsAt.rfc3339(fractionDigits: 3))
    json.key("pause_ends_at")
    json.string(report.window?.pauseEndsAt.rfc3339(fractionDigits: 3))
    json.key("remaining_seconds")
    json.number(report.remaining.map { UInt64(SessionText.seconds($0)) })
    json.key("pause_remaining_seconds")
    json.number(report.pauseRemaining.map { UInt64(SessionText.seconds($0)) })
    let lengths = report.window?.lengths ?? report.nextLengths
    json.key("session_length_seconds")
    json.number(report.plan == .free ? UInt64(SessionText.seconds(lengths.session)) : nil)
    json.key("pause_length_seconds")
    json.number(report.plan == .free ? UInt64(SessionText.seconds(lengths.pause)) : nil)
    json.key("next_session_length_seconds")
    json.number(report.plan == .free ? UInt64(SessionText.seconds(report.nextLengths.session)) : nil)
    json.key("next_pause_length_seconds")
    json.number(report.plan == .free ? UInt64(SessionText.seconds(report.nextLengths.pause)) : nil)
    json.name(report.tunnel, key: "tunnel", encodingKey: "tunnel_name_encoding")
    json.key("usage")
    if let usage = report.usage {
      json.beginObject()
      json.key("rx_bytes")
      json.number(usage.rxBytes)
      json.key("tx_bytes")
      json.number(usage.txBytes)
      json.key("estimate")
      json.bool(true)
      json.endObject()
    } else {
      json.null()
    }
    json.key("data_cap")
    if let cap = report.dataCap {
      DataCapJSON.write(cap, into: &json)
    } else {
      json.null()
    }
    json.key("manager")
    TunnelManagerJSON.write(report.manager, into: &json)
    json.key("enforcer")
    if let enforcer = report.enforcer {
      json.beginObject()
      json.key("pid")
      json.number(Int(enforcer.pid))
      json.key("since")
      json.string(enforcer.since.rfc3339(fractionDigits: 3))
      json.key("action")
      json.string(enforcer.action)
      json.endObject()
    } else {
      json.null()
    }
    json.key("last_stop")
    if let stop = report.lastStop {
      json.beginObject()
      json.key("reason")
      json.string(stop.reason.rawValue)
      json.key("at")
      json.string(stop.at.rfc3339(fractionDigits: 3))
      json.name(stop.interface, key: "interface", encodingKey: "interface_name_encoding")
      json.key("detail")
      json.string(stop.detail)
      json.endObject()
    } else {
      json.null()
    }
    json.endObject()
  }

  /// `vpnstat session --json`: the session object with the contract's envelope.
  public static func render(_ report: SessionReport, generatedAt: Timestamp) -> [UInt8] {
    var json = JSONWriter()
    json.beginObject()
    json.envelope(generatedAt: generatedAt, estimateNotes: nil)
    json.key("session")
    write(report, into: &json)
    json.endObject()
    return json.bytes
  }
}

/// A data cap (or an alert's limit) against its period's traffic, in words.
public enum DataCapText {
  /// `data cap: ≈ 1.20 GiB of 2.00 GiB this month (60 %), ≈ 819 MiB left, until 2026-12-15 00:00`.
  /// `refuses`: reaching it refuses connections (a cap), or only says so (an alert's limit).
  public static func line(
    _ status: DataCapStatus, options: DisplayOptions, label: String = "data cap", refuses: Bool = true
  ) -> String {
    let options = options.matching(limit: status.cap.limitBytes)
    let used = usage(status, options: options)
    let end = status.periodEnd.localDateTime(in: options.calendar)
    if status.reached {
      return "\(label) reached: \(used); " + (refuses ? "connecting is refused until \(end)" : "the period ends \(end)")
    }
    return "\(label): \(used), \(options.estimate(status.leftBytes)) left, until \(end)"
  }

  /// `≈ 5.02 MiB of 4.77 MiB this day (105 %)`: used, the limit, the period and the share.
  public static func usage(_ status: DataCapStatus, options: DisplayOptions) -> String {
    let options = options.matching(limit: status.cap.limitBytes)
    let limit = options.size(status.cap.limitBytes)
    return
      "\(options.estimate(status.usedBytes)) of \(limit) this \(status.cap.period.label) (\(percent(status.percent)))"
  }

  /// The gate's message when the cap refuses a connection.
  public static func refusal(_ status: DataCapStatus, calendar: any LocalCalendar) -> String {
    "data cap reached: \(usage(status, options: DisplayOptions(calendar: calendar))); you can reconnect when the \(status.cap.period.length.rawValue) rolls over (at \(status.periodEnd.localDateTime(in: calendar)))"
  }

  /// `60 %`, `0.4 %`, `105 %`.
  static func percent(_ value: Double) -> String {
    if value == 0 { return "0 %" }
    return value < 10 ? "\((value * 10).rounded() / 10) %" : "\(Units.whole(value.rounded(.down))) %"
  }
}

/// The `data_cap` object of the JSON contract (in the session object and `alert --json`).
public enum DataCapJSON {
  public static func write(_ status: DataCapStatus, into json: inout JSONWriter) {
    json.beginObject()
    json.key("limit_bytes")
    json.number(status.cap.limitBytes)
    json.key("period")
    json.string(status.cap.period.length.rawValue)
    json.key("month_start_day")
    json.number(status.cap.period.monthStartDay)
    json.key("period_start")
    json.string(status.periodStart.rfc3339)
    json.key("period_end")
    json.string(status.periodEnd.rfc3339)
    json.key("used_bytes")
    json.number(status.usedBytes)
    json.key("used_rx_bytes")
    json.number(status.used.rxBytes)
    json.key("used_tx_bytes")
    json.number(status.used.txBytes)
    json.key("left_bytes")
    json.number(status.leftBytes)
    json.key("percent")
    json.number(status.percent)
    json.key("reached")
    json.bool(status.reached)
    json.key("estimate")
    json.bool(true)
    json.endObject()
  }
}

/// `vpnstat alert --json`: the limit against the period's traffic, and what was measured.
public enum AlertJSON {
  public static func render(
    _ status: DataCapStatus, names: [InterfaceName], classes: [InterfaceClass], generatedAt: Timestamp
  ) -> [UInt8] {
    var json = JSONWriter()
    json.beginObject()
    json.envelope(generatedAt: generatedAt, estimateNotes: StatusSnapshot.estimateNotes)
    json.key("selected_interfaces")
    json.beginArray()
    for name in names {
      json.beginObject()
      json.name(name, key: "name", encodingKey: "name_encoding")
      json.endObject()
    }
    json.endArray()
    json.key("selected_classes")
    json.strings(classes.map(\.rawValue))
    json.key("limit")
    DataCapJSON.write(status, into: &json)
    json.key("reached")
    json.bool(status.reached)
    json.endObject()
    return json.bytes
  }
}

/// Who manages a tunnel, in words.
public enum TunnelManagerText {
  /// "managed by wg-quick (/etc/wireguard/wg0.conf), found by: …"; "no manager (…)" for none.
  public static func describe(_ manager: TunnelManager) -> String {
    let found = TerminalText.sanitize(manager.evidence)
    guard manager.kind != .none else { return "no manager: \(found)" }
    let id = manager.id.map { " \(TerminalText.sanitize($0))" } ?? ""
    return "managed by \(manager.kind.rawValue)\(id) (\(found))"
  }
}

/// The `manager` object of the JSON contract: `{kind, id, found_by}`, or null when not looked up.
enum TunnelManagerJSON {
  static func write(_ manager: TunnelManager?, into json: inout JSONWriter) {
    guard let manager else {
      json.null()
      return
    }
    json.beginObject()
    json.key("kind")
    json.string(manager.kind.rawValue)
    json.key("id")
    json.string(manager.id)
    json.key("found_by")
    json.string(manager.foundBy.rawValue)
    json.key("evidence")
    json.string(manager.evidence)
    json.endObject()
  }
}
