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

  public static func headline(_ report: SessionReport, calendar: any LocalCalendar) -> String {
    switch report.state {
    case .unlimited:
      return "session: premium plan · unlimited"
    case .none:
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
      return
        "session: free plan · expired at \(window.sessionEndsAt.localClockTime(in: calendar, withSeconds: true)) · disconnect pending"
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
    if let usage = report.usage {
      lines.append(
        "usage this window: \(options.estimate(usage.rxBytes)) received, \(options.estimate(usage.txBytes)) sent (tunnel class)"
      )
    }
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
    if report.usage != nil {
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
