import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// How the enforcer disconnects, as `--action` and `--exec` choose: through the tunnel's manager
/// (`auto`, or one named), the kernel alone (`link-down`, `delete`), or the operator's program.
package enum DisconnectChoice: Sendable, Equatable {
  case manager(TunnelManager.Kind?)
  case linkDown
  case delete
  case exec(arguments: [[UInt8]], timeout: Duration)
}

/// What `vpnstat enforce IFACE` was asked: everything the options decide, as values.
package struct EnforceRequest {
  package var tunnel: InterfaceName
  package var choice: DisconnectChoice
  /// Who manages tunnels, as the options say where to look (`--wg-quick-dir`, `--systemd-unit`).
  package var detector: ManagerDetector
  package var classifier: Classifier
  package var location: StoreLocation
  package var lengths: SessionLengths
  /// The tunnel's sampler (reader, sysfs root, cap on rates), recording the tunnel alone.
  package var sampler: TrafficSampler
  package var saveInterval: Duration
  package var checkInterval: Duration
  package var calendar: any LocalCalendar
  /// Where the enforcer's lines go (stderr, under systemd the journal).
  package var log: any EventLog
  /// Who hears that the tunnel's state is taken, that the loop turns and where the window
  /// stands (systemd, under a `Type=notify` unit).
  package var supervisor: any ServiceSupervisor

  package init(
    tunnel: InterfaceName, choice: DisconnectChoice, detector: ManagerDetector, classifier: Classifier,
    location: StoreLocation, lengths: SessionLengths, sampler: TrafficSampler, saveInterval: Duration,
    checkInterval: Duration, calendar: any LocalCalendar, log: any EventLog,
    supervisor: any ServiceSupervisor = Unsupervised()
  ) {
    self.supervisor = supervisor
    self.tunnel = tunnel
    self.choice = choice
    self.detector = detector
    self.classifier = classifier
    self.location = location
    self.lengths = lengths
    self.sampler = sampler
    self.saveInterval = saveInterval
    self.checkInterval = checkInterval
    self.calendar = calendar
    self.log = log
  }
}

/// Why `enforce` cannot start, besides the errors of the parts it opens (the store's, the lock's,
/// the requirements', an untrusted wg-quick file's).
package enum EnforceRefusal: Error, Sendable, CustomStringConvertible {
  /// IFACE is an interface of another class now.
  case notATunnel(NotATunnel)
  /// The kernel's netlink socket or the wall-clock timer could not be had.
  case kernelUnavailable(String)

  package var description: String {
    switch self {
    case .notATunnel(let refusal): return refusal.description
    case .kernelUnavailable(let why): return why
    }
  }
}

/// `vpnstat enforce`, the use case: refuses at once what could never be enforced, opens the
/// database without ever waiting on it, takes the tunnel's lock, and holds the tunnel to the
/// free plan until stopped.
package enum Enforcement {
  /// How long a starting enforcer waits for the database before it enforces from memory (a
  /// tunnel up then is held down, undecided, until the window can be read).
  package static let startWait = Duration.milliseconds(500)

  /// How long each database statement of a running enforcer may wait for another process's
  /// lock: moments, so the database never holds up a disconnect.
  package static let runningBusyTimeoutMilliseconds: Int32 = 200

  package static func run(_ request: EnforceRequest) throws {
    let tunnel = request.tunnel
    try refuseWhatCannotBeEnforced(request)
    let detector = request.detector
    // A wg-quick configuration for the tunnel that others could have written is said now; one
    // that appears later is not used (link-down, and the log says why).
    if case .refused(let path, let problem) = detector.wgQuickConfiguration(for: tunnel) {
      throw UntrustedFile(role: "wg-quick configuration", path: path, problem: problem)
    }
    // What it needs, checked before anything else: an enforcer that could never disconnect must
    // not look as if it holds the tunnel.
    try EnforcerRequirements.check(networkManager: usesNetworkManager(request))
    let location = request.location
    let (opener, store) = try openStore(location, request)
    // Until its own store opens, the session is read as any reader reads it: no lock to wait for.
    let view = store == nil ? try? Store.open(location, intent: .read, waitingAtMost: startWait) : nil
    let lock = try ProcessLock(
      path: location.lockPath("enforce-\(tunnel.escaped)"), role: "vpnstat enforce \(tunnel.escaped)")
    let links: NetlinkLinkTable
    let alarm: WallClockDeadline
    do {
      links = try NetlinkLinkTable()
      // Woken a millisecond early, it meets the deadline on the CPU (`WallClockDeadline`).
      alarm = try WallClockDeadline(waking: .milliseconds(1))
    } catch {
      throw EnforceRefusal.kernelUnavailable("cannot open a netlink socket to watch \(tunnel.terminalText): \(error)")
    }
    var enforcer = Enforcer(
      tunnel: tunnel, action: disconnectAction(request, links: links), lengths: request.lengths,
      sampler: request.sampler,
      storage: EnforcerStorage(
        store: store, view: view,
        open: {
          switch opener.outcome() {
          case .opened(let store): return store
          case .failed(let error): throw error
          case .pending, .taken: return nil
          }
        },
        saveInterval: request.saveInterval,
        ledgerLock: LedgerLockFile(location, role: "vpnstat enforce \(tunnel.escaped)"),
        spool: EnforcerSpool(location: location), presence: EnforcerPresenceFile(location: location, tunnel: tunnel),
        // Without a watch (inotify refused), the session is read before every decision instead.
        changes: try? location.changes()),
      environment: EnforcerEnvironment(
        links: links, alarm: alarm, log: request.log, calendar: request.calendar,
        holdRelease: ManagerHoldRelease(runner: detector.runner)))
    try EnforcerLoop.run(
      &enforcer, alarm: alarm, checkInterval: request.checkInterval, supervisor: request.supervisor)
    withExtendedLifetime(lock) {}
  }

  /// An interface of another class that bears the name now is refused at once (one that appears
  /// later is left alone by the enforcer itself).
  static func refuseWhatCannotBeEnforced(_ request: EnforceRequest) throws {
    guard let link = try? NetlinkLinkTable().link(named: request.tunnel) else { return }
    var catalog = InterfaceCatalog(classifier: request.classifier)
    let entry = catalog.entry(for: link)
    if let refusal = NotATunnel.check(link.name, entry.interfaceClass, by: entry.evidence) {
      throw EnforceRefusal.notATunnel(refusal)
    }
  }

  /// The database, opened on a thread of its own and never waited for long: a writer's open waits
  /// for the other writers of root's (a recorder's save) and looks at every page first, and
  /// meanwhile the tunnel must be held. The opener has time to migrate; the store, once handed
  /// over, waits only moments for the writers' lock. nil: enforcing from what the database
  /// reads as and the spool holds.
  static func openStore(_ location: StoreLocation, _ request: EnforceRequest) throws -> (StoreOpener, Store?) {
    let calendar = request.calendar
    let opener = try StoreOpener {
      let store = try Store.open(location, intent: .write, busyTimeoutMilliseconds: 2000, calendar: calendar)
      store?.setBusyTimeout(milliseconds: runningBusyTimeoutMilliseconds)
      return store
    }
    switch opener.outcome(waitingAtMost: startWait) {
    case .opened(let opened): return (opener, opened)
    case .failed(let error as StoreError) where error.isLasting: throw error
    case .failed(let error):
      request.log.event("\(error): enforcing from what it reads as; what cannot be written is kept until it can be")
    case .pending, .taken:
      request.log.event(
        "\(location.path) did not open for writing within \(Units.duration(startWait)): enforcing from what it reads as; what cannot be written is kept until it can be"
      )
    }
    return (opener, nil)
  }

  /// How the tunnel is taken down: `--exec`'s program, a link-down or delete, or its manager.
  static func disconnectAction(_ request: EnforceRequest, links: NetlinkLinkTable) -> any DisconnectAction {
    let detector = request.detector
    switch request.choice {
    case .exec(let arguments, let timeout): return ExecAction(arguments: arguments, timeout: timeout)
    case .linkDown: return LinkDownAction(links: links)
    case .delete: return LinkDownAction(links: links, deleting: true)
    case .manager(let kind):
      return ManagerAction(
        kind: kind, detector: detector, runner: detector.runner, links: links, units: detector.units)
    }
  }

  /// Whether disconnecting may need NetworkManager's permission: asked for by name, or the
  /// manager of the tunnel as it is now (auto).
  static func usesNetworkManager(_ request: EnforceRequest) -> Bool {
    let detector = request.detector
    switch request.choice {
    case .manager(.networkManager): return true
    case .manager(nil):
      guard FileSystem.exists(detector.networkManagerDirectory),
        let link = try? NetlinkLinkTable().link(named: request.tunnel)
      else { return false }
      return detector.manager(of: request.tunnel, kind: link.attributes.kind).kind == .networkManager
    default: return false
    }
  }
}
