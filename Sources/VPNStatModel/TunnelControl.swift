/// The name given to `vpnstat connect NAME` or `disconnect NAME`, resolved: every manager that
/// answers to it, and the rule that picks one. A name may be a NetworkManager connection, a
/// systemd unit, a wg-quick configuration or an interface at once; vpnstat never guesses
/// between them.
public enum TunnelChoice: Hashable, Sendable {
  /// Exactly one manager answers to the name (after `--manager`, when given).
  case found(TunnelManager)
  /// Several do: the user must choose with `--manager`.
  case ambiguous([TunnelManager])
  /// None does (of the kind asked for).
  case notFound

  /// The rule: candidates that are the same manager of the same thing (kind and id: the name of
  /// a NetworkManager connection and the device it runs on) count once; `kind`, when given,
  /// keeps only that kind; then one is found, several are ambiguous, none is not found.
  public static func choose(from candidates: [TunnelManager], kind: TunnelManager.Kind?) -> TunnelChoice {
    var distinct: [TunnelManager] = []
    for candidate in candidates where kind == nil || candidate.kind == kind {
      if !distinct.contains(where: { $0.kind == candidate.kind && $0.id == candidate.id }) {
        distinct.append(candidate)
      }
    }
    switch distinct.count {
    case 0: return .notFound
    case 1: return .found(distinct[0])
    default: return .ambiguous(distinct)
    }
  }
}

/// What proves that a tunnel a manager was asked to start is *real*, not merely accepted: a
/// successful start only says the manager took the request (the seeds' `startVPNTunnel`), so
/// `connect` waits for the tunnel's own state to say it.
public enum ConnectionProof: Hashable, Sendable, CustomStringConvertible {
  /// NetworkManager says the connection is `activated` in an activation newer than the start
  /// (a new active-connection path: a connection that was already up and is re-activated passes
  /// through `activating` again).
  case networkManagerActivated(uuid: String)
  /// systemd says the unit is `active`.
  case unitActive(String)
  /// A WireGuard handshake on the device newer than the start: a peer answered. nil: the device
  /// the manager reports once started.
  case wireGuardHandshake(InterfaceName?)
  /// The link is up and running (IFF_UP and IFF_RUNNING: a tun with a process attached).
  case linkRunning(InterfaceName)

  public var description: String {
    switch self {
    case .networkManagerActivated: "NetworkManager to report the connection activated"
    case .unitActive(let unit): "systemd to report \(TerminalText.sanitize(unit)) active"
    case .wireGuardHandshake(let device): "a WireGuard handshake on \(Self.words(device))"
    case .linkRunning(let device): "\(device.terminalText) to be up and running"
    }
  }

  /// What was missing when the time ran out, as the message says it: "no WireGuard handshake".
  public var missing: String {
    switch self {
    case .networkManagerActivated: "NetworkManager never reported the connection activated"
    case .unitActive(let unit): "systemd never reported \(TerminalText.sanitize(unit)) active"
    case .wireGuardHandshake(let device): "no WireGuard handshake on \(Self.words(device))"
    case .linkRunning(let device): "\(device.terminalText) never came up and running"
    }
  }

  /// The proof with the device filled in where it named none, once the manager reported one.
  public func on(_ device: InterfaceName?) -> ConnectionProof {
    switch self {
    case .wireGuardHandshake(nil): .wireGuardHandshake(device)
    default: self
    }
  }

  /// Why it may not have held, where there is a usual reason.
  public var hint: String? {
    guard case .wireGuardHandshake = self else { return nil }
    // connect sends the traffic a handshake needs itself: what is missing is the peer's answer.
    return "a handshake needs a peer that answers at its endpoint, with the keys configured"
  }

  static func words(_ device: InterfaceName?) -> String { device?.terminalText ?? "the connection's device" }
}

/// What one `connect` or `disconnect` did, for its text and its JSON: the manager, the instants,
/// how it ended, and what only that command has.
public struct TunnelControlReport: Hashable, Sendable {
  /// The command, with what belongs to it alone.
  public enum Command: Hashable, Sendable {
    /// What was waited for and, when the time ran out, the proof that never held.
    case connect(waitedFor: [ConnectionProof], missing: ConnectionProof?)
    /// Whether the stop was recorded in the database (the command records it after the stop).
    case disconnect(recorded: Bool)

    /// "connect" or "disconnect", as the JSON says it.
    public var word: String {
      switch self {
      case .connect: "connect"
      case .disconnect: "disconnect"
      }
    }
  }

  /// How it ended; each has its documented exit status.
  public enum Outcome: String, Hashable, Sendable, CaseIterable {
    /// connect: the tunnel is real.
    case connected
    /// connect: accepted, but not real before the timeout.
    case timedOut = "timed-out"
    /// The manager refused the start (or the stop), or could not be run.
    case refused
    /// The manager refused because this user may not control it.
    case notPermitted = "not-permitted"
    /// connect: accepted, then the manager gave up (NetworkManager dropped the activation).
    case gaveUp = "gave-up"
    /// connect: the gate refused (the pause, a data cap reached); nothing was started.
    case notAllowed = "not-allowed"
    /// connect: the gate could not read the session; nothing was started.
    case undecided
    /// disconnect: stopped, confirmed by the kernel and the manager.
    case disconnected
    /// disconnect: it was not connected; nothing was done.
    case notConnected = "not-connected"
    /// disconnect: asked to stop, but the kernel or the manager says it did not.
    case stillUp = "still-up"
  }

  public var command: Command
  /// The name as given.
  public var name: String
  /// The manager it was resolved to (nil when the gate refused before looking).
  public var manager: TunnelManager?
  /// The interface, when known.
  public var device: InterfaceName?
  /// When the start (or the stop) was asked.
  public var startedAt: Timestamp?
  /// When the manager accepted it.
  public var acceptedAt: Timestamp?
  /// When the proofs held (connect: the handshake's own instant for WireGuard) or the stop was
  /// confirmed (disconnect).
  public var confirmedAt: Timestamp?
  /// From the start to the confirmation, or to when the waiting stopped.
  public var elapsed: Duration?
  public var timeout: Duration?
  public var outcome: Outcome
  /// In words, for the outcome: what proved it real, what the last check saw, what the manager
  /// or the gate said, what was stopped.
  public var detail: String?

  public init(
    command: Command, name: String, manager: TunnelManager? = nil, device: InterfaceName? = nil,
    startedAt: Timestamp? = nil, acceptedAt: Timestamp? = nil, confirmedAt: Timestamp? = nil,
    elapsed: Duration? = nil, timeout: Duration? = nil, outcome: Outcome, detail: String? = nil
  ) {
    self.command = command
    self.name = name
    self.manager = manager
    self.device = device
    self.startedAt = startedAt
    self.acceptedAt = acceptedAt
    self.confirmedAt = confirmedAt
    self.elapsed = elapsed
    self.timeout = timeout
    self.outcome = outcome
    self.detail = detail
  }

  /// connect: what was waited for (none for disconnect).
  public var waitedFor: [ConnectionProof] {
    guard case .connect(let proofs, _) = command else { return [] }
    return proofs
  }

  /// connect, timed out: the proof that never held.
  public var missing: ConnectionProof? {
    guard case .connect(_, let missing) = command else { return nil }
    return missing
  }

  /// disconnect: whether the stop was recorded; nil for connect.
  public var recorded: Bool? {
    guard case .disconnect(let recorded) = command else { return nil }
    return recorded
  }
}

/// The rule that keeps `connect`, `disconnect` and `enforce` off the links a machine lives on:
/// they act on a kernel interface only when its class — the `Classifier`'s, with the user's
/// overrides — is `tunnel`. A typo (`disconnect lo`, `disconnect eth0`) must not cut a machine
/// off its network. A NetworkManager connection, a systemd unit or a wg-quick configuration
/// named by NAME is a tunnel by definition: the rule is about a name that resolves to a kernel
/// interface, or an interface an enforcer follows.
public struct NotATunnel: Error, Hashable, Sendable, CustomStringConvertible {
  public var name: InterfaceName
  public var interfaceClass: InterfaceClass
  public var evidence: ClassEvidence

  /// Why `name`, classified `interfaceClass` by `evidence`, may not be acted on; nil when it may
  /// (it is a tunnel).
  public static func check(_ name: InterfaceName, _ interfaceClass: InterfaceClass, by evidence: ClassEvidence)
    -> NotATunnel?
  {
    interfaceClass == .tunnel ? nil : NotATunnel(name: name, interfaceClass: interfaceClass, evidence: evidence)
  }

  /// The class in words, with what decided it: "of class loopback (by its link type)".
  public var classified: String {
    let by: String
    switch evidence {
    case .override: by = "as configured with --class"
    case .kind: by = "by its link kind"
    case .devtype: by = "by its DEVTYPE"
    case .wireless: by = "by its wireless entry"
    case .tunFlags: by = "by its tun flags"
    case .type: by = "by its link type"
    case .name: by = "by its name"
    case .none: by = "as nothing says otherwise"
    }
    return "of class \(interfaceClass.rawValue) (\(by))"
  }

  public var description: String {
    let shown = name.terminalText
    return
      "\(shown) is \(classified), not a tunnel: connect, disconnect and enforce act on tunnel-class interfaces only. If \(shown) is a tunnel, say so with --class \(name.escaped)=tunnel or `class = \(name.escaped)=tunnel` in the configuration file"
  }
}

/// The name a command that acts on a tunnel is given — `connect NAME`, `disconnect NAME`,
/// `enforce IFACE` — as it was typed, before it is resolved or parsed: one rule for the three. A
/// control character in it is a mistake or an attack (a newline splits a manager's listing, an
/// escape sequence rewrites the terminal that shows the name); a device whose name holds one is
/// named in vpnstat's escaped form, `\xHH`, as vpnstat prints it.
public enum TunnelNameArgument {
  /// Nil when `text` may be used, else why not: the words that follow the name in a message
  /// ("NAME 'a…b' holds a control character; …").
  public static func problem(_ text: String) -> String? {
    guard text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else { return nil }
    return "holds a control character; write such a byte as \\xHH"
  }
}
