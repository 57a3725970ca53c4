import VPNStatModel
import VPNStatSystem

/// vpnstat's reader of WireGuard's own figures, source by source: for a kernel WireGuard device
/// (kind or DEVTYPE `wireguard`) the kernel's generic netlink family, then a control socket
/// `/run/wireguard/NAME.sock`; for a tun, wireguard-go's control socket when wireguard-go holds
/// it (`UserspaceWireGuard`), reached through wireguard-go's own root — looked for only when
/// `/run/wireguard` exists, as it does wherever wireguard-go runs with our /run. Every exchange is bounded
/// (`idleTimeout`, `totalTimeout`, `answerLimit`), so a stuck or hostile socket costs at most the
/// timeout and says so; nothing is opened for a report without a candidate.
///
/// It remembers, per tun instance (name and ifindex), which process holds it, so a live view
/// walks /proc once per new tun rather than at every refresh.
package struct WireGuardReader: WireGuardSource {
  package var procRoot: SystemPath
  /// Where a kernel device's control socket would be when the netlink family is missing, and
  /// whose existence says a wireguard-go may run here.
  package var runDirectory: SystemPath
  /// The longest wait for the next bytes of an answer (and for its first).
  package var idleTimeout: Duration
  /// The longest a whole answer may take.
  package var totalTimeout: Duration
  package var answerLimit: Int
  /// False: never ask the kernel's netlink family (tests of the control socket path).
  package var useNetlink: Bool
  /// The walk of /proc shared with the rest of a one-off command (`status`: the manager
  /// detector reads it too); nil: a walk of its own whenever a new tun must be looked up.
  package var survey: TunProcessSurvey?
  /// How a tun descriptor's device is proven (the kernel's answer; a fixture's in tests).
  package var attachments: any TunAttachmentSource

  private var netlink: NetlinkSocket?
  private var holders: [TunKey: UserspaceWireGuard?] = [:]
  /// How many times /proc was walked, and how many socket exchanges were tried: what tests and
  /// the benchmark check ("no socket for a machine without WireGuard").
  package private(set) var processScans = 0
  package private(set) var exchanges = 0

  struct TunKey: Hashable {
    var name: InterfaceName
    var index: Int32
  }

  package static let defaultIdleTimeout = Duration.milliseconds(200)
  package static let defaultTotalTimeout = Duration.seconds(1)

  package init(
    procRoot: SystemPath = "/proc", runDirectory: SystemPath = "/run/wireguard",
    idleTimeout: Duration = WireGuardReader.defaultIdleTimeout,
    totalTimeout: Duration = WireGuardReader.defaultTotalTimeout, answerLimit: Int = WireGuardUAPI.answerLimit,
    useNetlink: Bool = true, survey: TunProcessSurvey? = nil,
    attachments: any TunAttachmentSource = KernelTunAttachments()
  ) {
    self.procRoot = procRoot
    self.runDirectory = runDirectory
    self.idleTimeout = idleTimeout
    self.totalTimeout = totalTimeout
    self.answerLimit = answerLimit
    self.useNetlink = useNetlink
    self.survey = survey
    self.attachments = attachments
  }

  package mutating func read(_ candidates: [WireGuardCandidate]) -> [WireGuardStatus?] {
    let tuns = candidates.filter { $0.implementation == .tun }.map { TunKey(name: $0.name, index: $0.index) }
    holders = holders.filter { tuns.contains($0.key) }
    if tuns.contains(where: { holders[$0] == nil }) {
      // wireguard-go makes its socket directory before anything else: where there is none, no
      // wireguard-go runs with our /run, and a tun (OpenVPN's, say) costs one stat, not a walk.
      if SmallFile.exists(runDirectory) {
        scanProcesses(for: tuns)
      } else {
        for key in tuns where holders[key] == nil { holders[key] = .some(nil) }
      }
    }
    return candidates.map { candidate in
      switch candidate.implementation {
      case .kernel(let evidence):
        return WireGuardStatus(evidence: evidence, reading: readKernel(candidate.name))
      case .tun:
        let key = TunKey(name: candidate.name, index: candidate.index)
        guard let holder = holders[key] ?? nil else { return nil }
        guard holder.inspected else {
          return WireGuardStatus(
            evidence: .wireguardGo,
            reading: .failure(
              .notPermitted(
                "wireguard-go (pid \(holder.pid)) runs as another user; reading its control socket needs root")))
        }
        let reading = readControlSocket(holder.controlSockets(procRoot: procRoot))
        // Its holder may have gone (and another taken the name): look again next time.
        if case .failure(.noSource) = reading { holders[key] = nil }
        return WireGuardStatus(evidence: .wireguardGo, reading: reading)
      }
    }
  }

  /// Walks /proc once and notes, for each tun asked about, its userspace WireGuard or none.
  private mutating func scanProcesses(for tuns: [TunKey]) {
    processScans += 1
    let found = UserspaceWireGuard.find(
      in: survey?.processes ?? TunProcesses.read(procRoot: procRoot, attachments: attachments))
    for key in tuns where holders[key] == nil {
      // One that /proc shows in full wins over one only named in another user's arguments.
      let matching = found.filter { $0.device == key.name }
      holders[key] = .some(matching.first { $0.inspected } ?? matching.first)
    }
  }

  private mutating func readKernel(_ name: InterfaceName) -> Result<WireGuardReading, WireGuardUnavailable> {
    var netlinkReason = "the kernel's WireGuard netlink family was not asked"
    if useNetlink {
      do {
        if netlink == nil { netlink = try NetlinkSocket(protocol: NetlinkSocket.generic) }
        return .success(WireGuardReading(device: try WireGuardNetlink.read(name, socket: netlink!), source: .netlink))
      } catch let error as WireGuardUnavailable {
        guard case .noSource(let why) = error else { return .failure(error) }
        netlinkReason = why
      } catch {
        netlinkReason = "no generic netlink socket (\(error))"
      }
    }
    let socket = SystemPath(bytes: runDirectory.appending(name).bytes + Array(".sock".utf8))
    let fallback = readControlSocket([socket])
    if case .failure(.noSource(let why)) = fallback { return .failure(.noSource("\(netlinkReason); \(why)")) }
    return fallback
  }

  /// Asks the first of `paths` that exists with `get=1`, when root or this user serves it:
  /// another user's socket at that path would answer what it likes (a handshake `connect` would
  /// take for proof).
  private mutating func readControlSocket(_ paths: [SystemPath]) -> Result<WireGuardReading, WireGuardUnavailable> {
    var result: Result<WireGuardReading, WireGuardUnavailable> = .failure(.noSource("no control socket"))
    for path in paths {
      exchanges += 1
      do {
        let answer = try LocalSocketExchange.exchange(
          path: path, request: WireGuardUAPI.request, limit: answerLimit, idle: idleTimeout, total: totalTimeout,
          peer: .rootOrSelf, isComplete: WireGuardUAPI.isComplete)
        return .success(WireGuardReading(device: try WireGuardUAPI.parse(answer), source: .uapi))
      } catch let failure as LocalSocketExchange.Failure {
        if case .closedEarly(let partial) = failure {
          // A whole answer but for its last empty line is still an answer, and an errno is a reason.
          guard !partial.isEmpty else { return .failure(.malformed("the control socket closed without answering")) }
          do {
            return .success(WireGuardReading(device: try WireGuardUAPI.parse(partial), source: .uapi))
          } catch {
            if case .failed = error { return .failure(error) }
            return .failure(Self.unavailable(failure, path: path))
          }
        }
        result = .failure(Self.unavailable(failure, path: path))
        guard case .system(let error) = failure, error == .noSuchFile else { return result }
      } catch let error as WireGuardUnavailable {
        return .failure(error)
      } catch {
        return .failure(.failed("\(error)"))
      }
    }
    return result
  }

  static func unavailable(_ failure: LocalSocketExchange.Failure, path: SystemPath) -> WireGuardUnavailable {
    switch failure {
    case .system(let error):
      if error == .noSuchFile { return .noSource("no control socket \(path)") }
      if error.meansNotPermitted { return .notPermitted("the control socket \(path) belongs to another user") }
      if error == .connectionRefused { return .noSource("nothing listens on \(path)") }
      if error == .wouldBlock { return .failed("the control socket \(path) is busy") }
      return .failed("the control socket \(path): \(error)")
    case .timedOut(let limit):
      return .timedOut(limit)
    case .tooLarge(let limit):
      return .tooLarge(limit)
    case .closedEarly:
      return .malformed("the control socket closed before the end of its answer")
    case .wrongPeer(_, let user):
      return .notPermitted(
        "the control socket \(path) is served by uid \(user.map { String($0) } ?? "unknown"), not by root: not asked")
    }
  }
}
