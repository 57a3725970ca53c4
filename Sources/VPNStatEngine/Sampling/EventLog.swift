import VPNStatModel

/// Where the engine's lines go: one per event worth a person's attention (stderr under a
/// terminal, the journal under systemd, an array in a test).
package protocol EventLog {
  func event(_ entry: LoggedEvent)
}

extension EventLog {
  /// A line that is no event an administrator looks for by kind (progress, a database outage).
  package func event(_ line: String) { event(LoggedEvent(line)) }
}

/// One logged line and, for the events an administrator looks for (a stop, a refusal, a window
/// opened, the data cap, a manager's failure), what it is about: the journal stores these as
/// fields (`MESSAGE_ID`, `VPNSTAT_INTERFACE`, …); stderr shows the line alone.
package struct LoggedEvent: Sendable, Equatable {
  package var text: String
  package var kind: EventKind?
  package var interface: InterfaceName?
  /// The stop's reason as recorded (`free-limit`, `pause`, `data-cap`, …).
  package var reason: String?
  /// Until when connecting is refused (a pause's or a data cap period's end), or the session's
  /// deadline for a window opened.
  package var until: Timestamp?

  package init(
    _ text: String, kind: EventKind? = nil, interface: InterfaceName? = nil, reason: String? = nil,
    until: Timestamp? = nil
  ) {
    self.text = text
    self.kind = kind
    self.interface = interface
    self.reason = reason
    self.until = until
  }
}

/// The kinds of event the journal catalog explains (contrib/vpnstat.catalog): each has one fixed
/// `MESSAGE_ID`, so `journalctl MESSAGE_ID=…` finds every one of them, and a priority.
package enum EventKind: String, Sendable, CaseIterable {
  /// A tunnel came up with no window: a free session's window opened.
  case windowOpened
  /// The session's connected time ran out: the tunnel was taken down.
  case sessionEnded
  /// The tunnel came up when connecting is refused (the pause, an unreadable session) and was
  /// taken down, or a connect was refused before it started (`session check`).
  case connectRefused
  /// The data cap was reached: the tunnel was taken down.
  case dataCapReached
  /// A stop failed: the link is still up, or the tunnel's manager failed.
  case stopFailed
  /// The tunnel went down or away by something else's doing: recorded.
  case stoppedElsewhere
  /// A tunnel moved to another network namespace, out of the enforcer's reach.
  case escaped

  /// The journal's `MESSAGE_ID`: fixed forever (made once with `systemd-id128 new`).
  package var messageID: String {
    switch self {
    case .windowOpened: "cdc6fcb861da4fc897b70d20ef6eea5f"
    case .sessionEnded: "e904c896704f443e8976359f21833ff3"
    case .connectRefused: "59269207c5f44ea8b9f20743b4a6856a"
    case .dataCapReached: "a607fcfb44784dd08c191707148bfb72"
    case .stopFailed: "452e4f034c104b9490e6cbb8f3eac8dd"
    case .stoppedElsewhere: "2a81a41e39d941269684063770d832e4"
    case .escaped: "cd4063f17b464161827611a60e246354"
    }
  }

  /// The kind as the journal's `VPNSTAT_EVENT` field and the catalog name it: `window-opened`.
  package var journalName: String {
    rawValue.reduce(into: "") { name, character in
      if character.isUppercase { name += "-" + character.lowercased() } else { name.append(character) }
    }
  }

  /// syslog(3)'s priority: 3 err, 4 warning, 5 notice, 6 info.
  package var priority: Int {
    switch self {
    case .stopFailed, .escaped: 3
    case .connectRefused, .dataCapReached: 4
    case .windowOpened, .sessionEnded: 5
    case .stoppedElsewhere: 6
    }
  }
}
