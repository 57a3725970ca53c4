import VPNStatModel

/// The session window in words, JSON and metrics: one place for each.
package enum SessionText {
  /// Whole seconds, rounded up, so a countdown reaches 0 exactly at the deadline.
  static func seconds(_ duration: Duration) -> Int64 {
    max(0, (duration.nanoseconds + 999_999_999) / 1_000_000_000)
  }

  static func minutes(_ duration: Duration) -> String { Units.duration(seconds: seconds(duration)) }

  /// The one-line summary: plan, state, countdown, pause.
  /// The message a refused connection gets: "free plan pause: you can reconnect in 31 min 12 s
  /// (at 12:45:03)"; nil when connecting is allowed.
  package static func pauseMessage(_ report: SessionReport, calendar: any LocalCalendar) -> String? {
    guard !report.canConnect, let wait = report.pauseRemaining, let window = report.window else { return nil }
    let seconds = (wait.nanoseconds + 999_999_999) / 1_000_000_000
    return
      "free plan pause: you can reconnect in \(Units.duration(seconds: seconds)) (at \(window.pauseEndsAt.localTime(near: report.now, in: calendar)))"
  }

  /// Why connecting is refused, for the gate: the reason that lasts longest
  /// (`SessionReport.connectBlock`); nil when connecting is allowed.
  package static func refusal(_ report: SessionReport, calendar: any LocalCalendar) -> String? {
    guard let block = report.connectBlock else { return nil }
    if block.reason == .dataCap, let cap = report.dataCap { return DataCapText.refusal(cap, calendar: calendar) }
    return pauseMessage(report, calendar: calendar)
  }

  /// `data cap reached: connecting is refused until 2027-01-01 00:00:00 (in 27 d 14 h)` when the
  /// cap is what refuses connecting longest, for the headline in place of the pause's countdown.
  static func capBlock(_ report: SessionReport, calendar: any LocalCalendar) -> String? {
    guard let block = report.connectBlock, block.reason == .dataCap, let until = block.until else { return nil }
    return
      "data cap reached: connecting is refused until \(until.localTime(near: report.now, in: calendar)) (in \(minutes(until - report.now)))"
  }

  package static func headline(_ report: SessionReport, calendar: any LocalCalendar) -> String {
    switch report.state {
    case .unlimited:
      if let blocked = capBlock(report, calendar: calendar) { return "session: premium plan · " + blocked }
      return "session: premium plan · " + (report.dataCap == nil ? "unlimited" : "no session window")
    case .none:
      if let blocked = capBlock(report, calendar: calendar) { return "session: free plan · no window · " + blocked }
      guard report.enforcer != nil else {
        // Only an enforcer opens windows: without one, nothing limits a connection.
        return "session: free plan · no window · no enforcer running, so connecting opens no session"
      }
      return "session: free plan · no window · connecting opens a \(minutes(report.nextLengths.session)) session"
    case .active:
      let window = report.window!
      return
        "session: free plan · active · \(Units.clock(seconds: seconds(report.remaining ?? .zero))) left (until \(window.sessionEndsAt.localTime(near: report.now, in: calendar))), then a \(minutes(window.lengths.pause)) pause"
    case .paused:
      let window = report.window!
      if let blocked = capBlock(report, calendar: calendar) { return "session: free plan · paused · " + blocked }
      return
        "session: free plan · paused · reconnect in \(minutes(report.pauseRemaining ?? .zero)) (at \(window.pauseEndsAt.localTime(near: report.now, in: calendar)))"
    case .expired:
      let window = report.window!
      let pending = report.enforcer != nil ? "disconnect pending" : "no enforcer running: the tunnel stays up"
      return
        "session: free plan · expired at \(window.sessionEndsAt.localTime(near: report.now, in: calendar)) · \(pending)"
    }
  }

  /// Where the window stands for one tunnel, in the line `systemctl status` shows (the
  /// enforcer's `STATUS=`): "active · 9:41 left on wg0 (until 10:15:03)", "pause until 10:45:03 ·
  /// wg0 held down". `phase` nil: the session cannot be read.
  package static func supervisorStatus(
    _ phase: SessionPhase?, tunnel: InterfaceName, up: Bool, calendar: any LocalCalendar, now wall: Timestamp
  ) -> String {
    let name = tunnel.terminalText
    guard let phase else { return "session window unknown · \(name) held down until it can be read" }
    func at(_ instant: Timestamp) -> String { instant.localTime(near: wall, in: calendar) }
    if let block = phase.connectBlock, let until = block.until {
      let why = block.reason == .dataCap ? "data cap reached" : "pause"
      return "\(why) until \(at(until)) · \(name) " + (up ? "up: taking it down" : "held down")
    }
    switch phase.stage {
    case .unlimited: return "premium plan · no session window on \(name)"
    case .none: return "no window · \(name) \(up ? "up" : "down"): connecting opens one"
    case .active(let window):
      let left = Units.clock(seconds: seconds(window.sessionEndsAt - phase.at))
      return up
        ? "active · \(left) left on \(name) (until \(at(window.sessionEndsAt)))"
        : "active · \(left) left, \(name) down (until \(at(window.sessionEndsAt)))"
    case .pause(let window): return "pause until \(at(window.pauseEndsAt)) · \(name) \(up ? "up" : "down")"
    case .over: return "window over · \(name) \(up ? "up" : "down"): connecting opens a new one"
    }
  }

  /// The lines under the headline: lengths, usage, the last stop.
  package static func details(_ report: SessionReport, options: DisplayOptions) -> [String] {
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
          "enforcer: pid \(enforcer.pid) since \(enforcer.since.localTime(near: report.now, in: options.calendar)) on \(enforcer.tunnel.terminalText) (\(TerminalText.sanitize(enforcer.action)))"
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
        "last stop: \(stop.reason.rawValue) at \(stop.at.localTime(near: report.now, in: options.calendar))"
      if let interface = stop.interface { line += " on \(options.name(interface))" }
      if let detail = stop.detail { line += " (\(TerminalText.sanitize(detail)))" }
      lines.append(line)
    }
    if let refusal = report.lastRefusal {
      lines.append(
        "last refusal: " + RefusalText.line(refusal, now: report.now, calendar: options.calendar, name: options.name))
    }
    return lines
  }

  /// `vpnstat session` as text.
  package static func render(_ report: SessionReport, options: DisplayOptions) -> String {
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
package enum SessionJSON {
  package static func write(_ report: SessionReport, into json: inout JSONWriter) {
    json.beginObject()
    json.field("plan", report.plan.rawValue)
    json.field("state", report.state.rawValue)
    json.field("can_connect", report.canConnect)
    json.field("now", report.now.rfc3339(fractionDigits: 3))
    json.field("opened_at", report.window?.openedAt.rfc3339(fractionDigits: 3))
    json.field("session_ends_at", report.window?.sessionEndsAt.rfc3339(fractionDigits: 3))
    json.field("pause_ends_at", report.window?.pauseEndsAt.rfc3339(fractionDigits: 3))
    json.field("remaining_seconds", report.remaining.map { UInt64(SessionText.seconds($0)) })
    json.field("pause_remaining_seconds", report.pauseRemaining.map { UInt64(SessionText.seconds($0)) })
    let lengths = report.window?.lengths ?? report.nextLengths
    json.field("session_length_seconds", report.plan == .free ? UInt64(SessionText.seconds(lengths.session)) : nil)
    json.field("pause_length_seconds", report.plan == .free ? UInt64(SessionText.seconds(lengths.pause)) : nil)
    json.field(
      "next_session_length_seconds",
      report.plan == .free ? UInt64(SessionText.seconds(report.nextLengths.session)) : nil)
    json.field(
      "next_pause_length_seconds", report.plan == .free ? UInt64(SessionText.seconds(report.nextLengths.pause)) : nil)
    json.name(report.tunnel, key: "tunnel", encodingKey: "tunnel_name_encoding")
    json.key("usage")
    if let usage = report.usage {
      json.beginObject()
      json.field("rx_bytes", usage.rxBytes)
      json.field("tx_bytes", usage.txBytes)
      json.field("estimate", true)
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
      json.field("pid", Int(enforcer.pid))
      json.field("since", enforcer.since.rfc3339(fractionDigits: 3))
      json.field("action", enforcer.action)
      json.endObject()
    } else {
      json.null()
    }
    json.key("last_stop")
    if let stop = report.lastStop {
      json.beginObject()
      json.field("reason", stop.reason.rawValue)
      json.field("at", stop.at.rfc3339(fractionDigits: 3))
      json.name(stop.interface, key: "interface", encodingKey: "interface_name_encoding")
      json.field("detail", stop.detail)
      json.endObject()
    } else {
      json.null()
    }
    json.key("last_refusal")
    if let refusal = report.lastRefusal {
      json.beginObject()
      json.field("reason", refusal.reason.rawValue)
      json.field("by", refusal.by.rawValue)
      json.field("at", refusal.at.rfc3339(fractionDigits: 3))
      json.field("until", refusal.until?.rfc3339(fractionDigits: 3))
      json.name(refusal.interface, key: "interface", encodingKey: "interface_name_encoding")
      json.endObject()
    } else {
      json.null()
    }
    json.endObject()
  }

  /// `vpnstat session --json`: the session object with the contract's envelope.
  package static func render(_ report: SessionReport, generatedAt: Timestamp) -> [UInt8] {
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
package enum DataCapText {
  /// `data cap: ≈ 1.20 GiB of 2.00 GiB this month (60 %), ≈ 819 MiB left, until 2026-12-15 00:00`.
  /// `refuses`: reaching it refuses connections (a cap), or only says so (an alert's limit).
  package static func line(
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
  package static func usage(_ status: DataCapStatus, options: DisplayOptions) -> String {
    let options = options.matching(limit: status.cap.limitBytes)
    let limit = self.limit(status.cap.limitBytes, options: options)
    return
      "\(options.estimate(status.usedBytes)) of \(limit) this \(status.cap.period.label) (\(percent(status.percent)))"
  }

  /// A limit in the units it was given in (`80.0 MB`, `2.00 GiB`), unless the options choose.
  package static func limit(_ bytes: UInt64, options: DisplayOptions) -> String {
    options.matching(limit: bytes).size(bytes)
  }

  /// The gate's message when the cap refuses a connection.
  package static func refusal(_ status: DataCapStatus, calendar: any LocalCalendar) -> String {
    "data cap reached: \(usage(status, options: DisplayOptions(calendar: calendar))); you can reconnect when the \(status.cap.period.length.rawValue) rolls over (at \(status.periodEnd.localDateTime(in: calendar)))"
  }

  /// `60 %`, `0.4 %`, `105 %`.
  static func percent(_ value: Double) -> String {
    if value == 0 { return "0 %" }
    return value < 10 ? "\((value * 10).rounded() / 10) %" : "\(Units.whole(value.rounded(.down))) %"
  }
}

/// The `data_cap` object of the JSON contract (in the session object and `alert --json`).
package enum DataCapJSON {
  package static func write(_ status: DataCapStatus, into json: inout JSONWriter) {
    json.beginObject()
    json.field("limit_bytes", status.cap.limitBytes)
    json.field("period", status.cap.period.length.rawValue)
    json.field("month_start_day", status.cap.period.monthStartDay)
    json.field("period_start", status.periodStart.rfc3339)
    json.field("period_end", status.periodEnd.rfc3339)
    json.field("used_bytes", status.usedBytes)
    json.field("used_rx_bytes", status.used.rxBytes)
    json.field("used_tx_bytes", status.used.txBytes)
    json.field("left_bytes", status.leftBytes)
    json.field("percent", status.percent)
    json.field("reached", status.reached)
    json.field("estimate", true)
    json.endObject()
  }
}

/// `vpnstat alert --json`: the limit against the period's traffic, and what was measured.
package enum AlertJSON {
  package static func render(
    _ status: DataCapStatus, names: [InterfaceName], classes: [InterfaceClass], generatedAt: Timestamp
  ) -> [UInt8] {
    var json = JSONWriter()
    json.beginObject()
    json.envelope(generatedAt: generatedAt, estimateNotes: StatusSnapshot.estimateNotes)
    json.names("selected_interfaces", names)
    json.field("selected_classes", classes.map(\.rawValue))
    json.key("limit")
    DataCapJSON.write(status, into: &json)
    json.field("reached", status.reached)
    json.endObject()
    return json.bytes
  }
}

/// Who manages a tunnel, in words.
package enum TunnelManagerText {
  /// "managed by wg-quick (/etc/wireguard/wg0.conf), found by: …"; "no manager (…)" for none.
  package static func describe(_ manager: TunnelManager) -> String {
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
    json.field("kind", manager.kind.rawValue)
    json.field("id", manager.id)
    json.field("found_by", manager.foundBy.rawValue)
    json.field("evidence", manager.evidence)
    json.endObject()
  }
}

/// A recorded refusal in words, for `session`, `watch` and the desktop's notices.
package enum RefusalText {
  /// `pause at 10:32:30 on wg0, by the connect gate (until 10:45:00)`, times off `now`'s day
  /// with their date.
  package static func line(
    _ refusal: Refusal, now: Timestamp, calendar: any LocalCalendar,
    name: (InterfaceName) -> String = { $0.terminalText }
  ) -> String {
    var line = "\(refusal.reason.rawValue) at \(refusal.at.localTime(near: now, in: calendar))"
    if let interface = refusal.interface { line += " on \(name(interface))" }
    line += ", \(path(refusal.by))"
    if let until = refusal.until { line += " (until \(until.localTime(near: now, in: calendar)))" }
    return line
  }

  /// Who refused, as a person reads it.
  package static func path(_ path: Refusal.Path) -> String {
    switch path {
    case .gate: "by the connect gate"
    case .dispatcher: "by NetworkManager's dispatcher (the connect gate)"
    case .connect: "by vpnstat connect"
    case .enforcer: "taken down at once by the enforcer"
    }
  }
}
