import VPNStatModel

/// `vpnstat notify`'s notices in words: what the desktop shows. The same units, estimate marks
/// and local times as every other output; the stop is urgent.
package enum NoticeText {
  /// The notification for `notice` seen at `now` (its `replaces` is the sender's to set).
  package static func notification(_ notice: Notice, at now: Timestamp, options: DisplayOptions)
    -> DesktopNotification
  {
    let calendar = options.calendar
    func time(_ instant: Timestamp) -> String { instant.localTime(near: now, in: calendar) }
    func wait(_ until: Timestamp) -> String { SessionText.minutes(until - now) }
    switch notice {
    case .sessionEnding(let window, let tunnel):
      let left = window.sessionEndsAt - now
      var body = "The free session ends at \(time(window.sessionEndsAt))"
      if let tunnel { body += ": \(options.name(tunnel)) is disconnected then" }
      body +=
        ".\nThen a \(SessionText.minutes(window.lengths.pause)) pause: the next session can start at \(time(window.pauseEndsAt))."
      // Gone from the screen when the session ends (the stop takes its place then).
      return DesktopNotification(
        summary: "VPN session ends in \(SessionText.minutes(left)) (at \(time(window.sessionEndsAt)))", body: body,
        urgency: .normal, category: .network, expiry: .after(max(left, .seconds(1))))
    case .stopped(let stop, let next):
      let why: String
      switch stop.reason {
      case .freeLimit: why = "free session over"
      case .dataCap: why = "data cap reached"
      default: why = "stopped by the user"
      }
      var body = stop.interface.map { "\(options.name($0)) went down at \(time(stop.at))." } ?? "At \(time(stop.at))."
      if let next {
        body +=
          "\nThe next session can start at \(next.localTime(near: now, in: calendar)) (in \(wait(next)))."
      } else {
        body += "\nYou can reconnect now."
      }
      if stop.reason == .dataCap, let detail = stop.detail { body += "\n" + TerminalText.sanitize(detail) }
      let urgent = stop.reason == .freeLimit || stop.reason == .dataCap
      return DesktopNotification(
        summary: "VPN disconnected: \(why)", body: body, urgency: urgent ? .critical : .normal,
        category: .networkDisconnected, expiry: urgent ? .never : .serverDefault)
    case .refused(let refusal):
      let summary: String
      switch (refusal.reason, refusal.until) {
      case (.pause, let until?) where until > now:
        summary = "VPN refused: the free plan's pause ends at \(time(until)) (in \(wait(until)))"
      case (.pause, _): summary = "VPN refused: the free plan's pause"
      case (.dataCap, let until?) where until > now:
        summary =
          "VPN refused: the data cap is reached until \(until.localTime(near: now, in: calendar)) (in \(wait(until)))"
      case (.dataCap, _): summary = "VPN refused: the data cap is reached"
      }
      var body = refusal.interface.map { "\(options.name($0)) " } ?? "A tunnel "
      body +=
        refusal.by == .enforcer
        ? "came up and was \(RefusalText.path(refusal.by))" : "was refused \(RefusalText.path(refusal.by))"
      body += " at \(time(refusal.at))."
      return DesktopNotification(summary: summary, body: body, urgency: .normal, category: .networkError)
    case .dataCap(let status, let threshold):
      let reached = threshold >= 100
      let end = status.periodEnd.localDateTime(in: calendar)
      let body =
        DataCapText.usage(status, options: options) + ".\n"
        + (reached
          ? "Connecting is refused until the \(status.cap.period.length.rawValue) rolls over (\(end))."
          : "\(options.matching(limit: status.cap.limitBytes).estimate(status.leftBytes)) left until \(end).")
        + "\nFigures are estimates from interface counters."
      return DesktopNotification(
        summary: reached ? "VPN data cap reached" : "VPN data cap: \(threshold) % used", body: body,
        urgency: reached ? .critical : .normal, category: .network)
    }
  }
}
