import VPNStatKernel
import VPNStatModel

/// `vpnstat connect`: one start of a tunnel through its manager, as a state machine — asked,
/// then accepted or refused, then real (every proof held), timed out, or given up by the
/// manager. The seeds' control API on Linux: a successful start only means *accepted*; the
/// connection is confirmed from its own state.
///
/// `handle(.start)` asks the manager once; `handle(.check)` asks the proofs, in order (a proof
/// that held stays held). `ConnectLoop` feeds the checks through the clock, so tests drive it
/// with a manual clock, fake managers and a fake WireGuard source.
package struct ConnectAttempt {
  package enum State: Hashable, Sendable {
    case ready
    case accepted
    case connected
    case timedOut
    case refused(String)
    case gaveUp(String)
  }

  package enum Event: Sendable {
    /// Ask the manager to start the tunnel.
    case start
    /// Look whether it is real yet (and whether the time is up).
    case check
  }

  package let name: String
  package let manager: TunnelManager
  let control: any TunnelControl
  var probe: ConnectionProbe
  let clock: any TimeSource
  /// From the start: for the manager's answer and the proofs together.
  package let timeout: Duration

  package private(set) var state: State = .ready
  package private(set) var startedAt: Timestamp?
  package private(set) var acceptedAt: Timestamp?
  package private(set) var confirmedAt: Timestamp?
  /// What the last check saw of the proof it waited on ("no handshake yet").
  package private(set) var waiting: String?
  /// What proved it real.
  package private(set) var proven: String?
  /// How many of the control's proofs have held.
  private var held = 0
  /// The start and the end on the monotonic clock: the timeout and the time taken do not move
  /// with the wall clock.
  private var startedMonotonic: Int64 = 0
  private var endedMonotonic: Int64?

  package init(
    name: String, manager: TunnelManager, control: any TunnelControl, probe: ConnectionProbe, clock: any TimeSource,
    timeout: Duration
  ) {
    self.name = name
    self.manager = manager
    self.control = control
    self.probe = probe
    self.clock = clock
    self.timeout = timeout
  }

  package var isFinished: Bool {
    switch state {
    case .ready, .accepted: false
    default: true
    }
  }

  /// What must hold before the tunnel counts as real.
  package var proofs: [ConnectionProof] { control.proofs }

  /// The interface, as the manager names it (or reported it once started).
  package var device: InterfaceName? { probe.reportedDevice ?? control.device() }

  package mutating func handle(_ event: Event) {
    switch (event, state) {
    case (.start, .ready): start()
    case (.check, .accepted): check()
    default: break
    }
  }

  private mutating func start() {
    // What "newer than the start" means is noted before the start (NetworkManager's activation).
    probe.prepare(control.proofs)
    let reading = clock.now()
    startedAt = reading.wall
    startedMonotonic = reading.monotonic
    switch control.start(timeout: timeout) {
    case .accepted:
      acceptedAt = clock.now().wall
      state = .accepted
    case .refused(let why):
      endedMonotonic = clock.now().monotonic
      state = .refused(why)
    }
  }

  private mutating func check() {
    let proofs = control.proofs
    while held < proofs.count {
      switch probe.check(proofs[held], since: startedAt!, now: clock.now().monotonic) {
      case .holds(let at, let words):
        held += 1
        proven = words
        if held == proofs.count { confirmedAt = at ?? clock.now().wall }
      case .waiting(let words):
        waiting = words
        let now = clock.now().monotonic
        if now - startedMonotonic >= timeout.nanoseconds {
          endedMonotonic = now
          state = .timedOut
        }
        return
      case .failed(let why):
        endedMonotonic = clock.now().monotonic
        state = .gaveUp(why)
        return
      }
    }
    endedMonotonic = clock.now().monotonic
    state = .connected
  }

  /// How long until the timeout, from now.
  package var remaining: Duration {
    .nanoseconds(max(0, timeout.nanoseconds - (clock.now().monotonic - startedMonotonic)))
  }

  /// What happened, for the text and the JSON.
  package var report: TunnelControlReport {
    // Proofs that named no device name the one the manager reported.
    let proofs = control.proofs.map { $0.on(probe.reportedDevice) }
    var report = TunnelControlReport(
      command: .connect(waitedFor: proofs, missing: nil), name: name, manager: manager, device: device,
      startedAt: startedAt, acceptedAt: acceptedAt, confirmedAt: state == .connected ? confirmedAt : nil,
      timeout: timeout, outcome: .timedOut)
    if let endedMonotonic { report.elapsed = .nanoseconds(endedMonotonic - startedMonotonic) }
    switch state {
    case .ready, .accepted:
      report.outcome = .timedOut
      report.detail = waiting
    case .connected:
      report.outcome = .connected
      report.detail = proven
      // WireGuard's proof has its own instant, the handshake: the time it took is up to it.
      if let confirmedAt, let startedAt { report.elapsed = confirmedAt - startedAt }
    case .timedOut:
      report.outcome = .timedOut
      report.detail = waiting
      report.command = .connect(waitedFor: proofs, missing: held < proofs.count ? proofs[held] : nil)
    case .refused(let why):
      report.outcome = ManagerRefusal.isPermission(why) ? .notPermitted : .refused
      report.detail = why
    case .gaveUp(let why):
      report.outcome = .gaveUp
      report.detail = why
    }
    return report
  }
}

/// Feeds a `ConnectAttempt` its checks: one at once, then one every `interval` until it is
/// finished, waiting through its clock (a manual clock in tests makes the waits instant).
package enum ConnectLoop {
  package static let defaultInterval = Duration.milliseconds(100)

  package static func run(_ attempt: inout ConnectAttempt, interval: Duration = defaultInterval) {
    attempt.handle(.check)
    while !attempt.isFinished {
      // The last wait ends at the timeout, so the final check comes when the time is up.
      let remaining = attempt.remaining
      attempt.clock.sleep(for: remaining > .zero ? min(interval, remaining) : interval)
      attempt.handle(.check)
    }
  }
}

/// Whether a manager's refusal says this user may not control it (NetworkManager's polkit,
/// wg-quick's and systemctl's need for root): then `connect`/`disconnect` say so with the
/// status for a missing permission.
package enum ManagerRefusal {
  static let permissionWords = [
    "not authorized", "not authorised", "must be run as root", "access denied", "permission denied",
    "interactive authentication required", "operation not permitted",
  ]

  package static func isPermission(_ message: String) -> Bool {
    let lower = message.lowercased()
    return permissionWords.contains { lower.contains($0) }
  }
}

/// Asks the kernel and the managers whether a tunnel a manager was asked to start is real yet,
/// one proof at a time: NetworkManager's activation, systemd's unit state, WireGuard's latest
/// handshake (the kernel's netlink family or wireguard-go's control socket), the link's flags.
///
/// WireGuard shakes hands only when it has something to send, so while it has not, the probe
/// gives it something: one empty datagram into the device per peer (`HandshakeProbe`), at most
/// once a second.
package struct ConnectionProbe {
  let runner: any ProgramRunner
  let links: any LinkTable
  var wireGuard: any WireGuardSource
  let datagrams: any HandshakeDatagrams
  /// When the last datagrams went (CLOCK_MONOTONIC nanoseconds), and where the last went.
  private var provokedAt: Int64?
  private var provokedTo: String?
  static let provokeInterval = Duration.seconds(1)
  /// NetworkManager's activation of each connection before the start (its D-Bus path): the
  /// one that must reach `activated` is a newer one.
  var activationsBefore: [String: String] = [:]
  /// The device the manager reported once started (NetworkManager's IP-IFACE), for proofs
  /// that name none.
  package private(set) var reportedDevice: InterfaceName?

  /// What one check found.
  package enum Verdict: Hashable, Sendable {
    /// The proof holds; `at`: its own instant, when it has one (a handshake's).
    case holds(at: Timestamp?, String)
    /// Not yet: what was seen.
    case waiting(String)
    /// It will not: the manager gave up, or the proof cannot be read at all.
    case failed(String)
  }

  package init(
    runner: any ProgramRunner, links: any LinkTable, wireGuard: any WireGuardSource,
    datagrams: any HandshakeDatagrams = DeviceDatagrams()
  ) {
    self.runner = runner
    self.links = links
    self.wireGuard = wireGuard
    self.datagrams = datagrams
  }

  /// Notes, just before the start, what the proofs must be newer than.
  mutating func prepare(_ proofs: [ConnectionProof]) {
    for case .networkManagerActivated(let uuid) in proofs {
      activationsBefore[uuid] = NetworkManagerControl(uuid: uuid, runner: runner).activation()?.path
    }
  }

  package mutating func check(_ proof: ConnectionProof, since start: Timestamp, now: Int64) -> Verdict {
    switch proof {
    case .networkManagerActivated(let uuid):
      // `connection up` returned with the activation made: from then on it is listed until it
      // reaches `activated`, or goes when NetworkManager gives up.
      guard let activation = NetworkManagerControl(uuid: uuid, runner: runner).activation() else {
        return .failed("NetworkManager no longer lists the connection as active: the activation failed")
      }
      if let device = activation.device { reportedDevice = device }
      if let before = activationsBefore[uuid], before == activation.path {
        return .waiting("NetworkManager still shows the activation from before the start")
      }
      guard activation.state == "activated" else {
        return .waiting("NetworkManager says \(TerminalText.sanitize(activation.state))")
      }
      return .holds(at: nil, "NetworkManager reports it activated")
    case .unitActive(let unit):
      let state = SystemdUnitControl(unit: unit, runner: runner).state()
      let name = TerminalText.sanitize(unit)
      switch state {
      case "active": return .holds(at: nil, "systemd reports \(name) active")
      case "failed", "inactive": return .failed("systemd reports \(name) \(state)")
      default: return .waiting("systemd says \(name) is \(TerminalText.sanitize(state))")
      }
    case .wireGuardHandshake(let named):
      guard let device = named ?? reportedDevice else { return .waiting("the manager has not named the device yet") }
      guard let link = try? links.link(named: device) else {
        return .waiting("\(device.terminalText) does not exist yet")
      }
      guard let candidate = WireGuardCandidate(name: device, index: link.index, kind: link.attributes.kind) else {
        return .failed("\(device.terminalText) is not a WireGuard device (kind \(link.attributes.kind ?? "unknown"))")
      }
      let status = wireGuard.read([candidate]).first ?? nil
      let reading = status?.reading ?? .failure(.notWireGuard(candidate.name))
      switch reading.map(\.device.latestHandshake) {
      case .success(let handshake?) where handshake > start:
        return .holds(at: handshake, "a WireGuard handshake on \(device.terminalText)")
      case .success(.some):
        provoke(device, peers: status?.device?.peers ?? [], now: now)
        return .waiting("the latest handshake on \(device.terminalText) is older than the start" + provoked)
      case .success(nil):
        provoke(device, peers: status?.device?.peers ?? [], now: now)
        return .waiting("no handshake on \(device.terminalText) yet" + provoked)
      case .failure(.notPermitted(let why)):
        return .failed("cannot read WireGuard's state of \(device.terminalText): \(why)")
      case .failure(let why):
        return .waiting("WireGuard's state of \(device.terminalText): \(why)")
      }
    case .linkRunning(let device):
      guard let link = try? links.link(named: device) else { return .failed("\(device.terminalText) is gone") }
      let flags = link.attributes.flags ?? 0
      // IFF_UP and IFF_RUNNING: a tun is running once a process holds it.
      if flags & 0x1 != 0 && flags & 0x40 != 0 { return .holds(at: nil, "\(device.terminalText) is up and running") }
      return .waiting(flags & 0x1 != 0 ? "\(device.terminalText) is up, not running" : "\(device.terminalText) is down")
    }
  }

  /// Sends the handshake datagrams into `device`, unless they went less than a second ago.
  private mutating func provoke(_ device: InterfaceName, peers: [WireGuardPeer], now: Int64) {
    if let provokedAt, now - provokedAt < Self.provokeInterval.nanoseconds { return }
    provokedAt = now
    let own = datagrams.addresses(of: device)
    var sent: [String] = []
    for addresses in HandshakeProbe.destinations(peers: peers, own: own) {
      // IPv4 first; the next family when the kernel refuses one (no address of it to send from).
      for address in addresses {
        guard (try? datagrams.send(to: address, port: HandshakeProbe.port, through: device)) != nil else { continue }
        sent.append(IPRange.text(of: address))
        break
      }
    }
    provokedTo = sent.isEmpty ? nil : sent.joined(separator: ", ")
  }

  /// What the waiting text adds once a datagram went.
  private var provoked: String {
    provokedTo.map { " (a datagram went into it to \($0), port \(HandshakeProbe.port), to start one)" } ?? ""
  }
}
