import VPNStatModel
import VPNStatSystem

/// An OpenVPN process holding the tun (running as root or in a system service, its tun proven
/// to be the device): stopped with `signal SIGTERM` on its management socket (so it exits the
/// way it was configured to — routes restored, down scripts run, the peer told), else with
/// SIGTERM to the process. The socket is used only when the kernel says that very process
/// serves it and no other user may write where it lies: a path in the arguments proves nothing
/// by itself. Confirmed when that process has exited.
package struct OpenVPNControl: TunnelControl {
  package let process: TunnelProcess
  package let manager: TunnelManager?
  package init(process: TunnelProcess, manager: TunnelManager? = nil) {
    self.process = process
    self.manager = manager
  }
  package var label: String { "openvpn (pid \(process.pid))" }

  /// OpenVPN has no manager of its own to start it: a process vpnstat started would be vpnstat's
  /// to supervise (its log, its restarts, its password prompts). It is started by systemd or
  /// NetworkManager, and connected through them.
  package func start(timeout: Duration) -> StartOutcome {
    .refused(
      "vpnstat does not start OpenVPN itself: start it through its systemd unit (openvpn-client@NAME) or NetworkManager, and connect that"
    )
  }

  package func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    var why = "no management socket"
    if let path = process.managementSocket {
      switch Self.signal(paths: Self.reachable(path, of: process.pid), served: process.pid) {
      case .success: return .done
      case .failure(let problem): why = "management socket \(TerminalText.sanitize(path)): \(problem)"
      }
    }
    do {
      try ProcessTable.terminate(process.pid, startTime: process.startTime)
      return .done
    } catch {
      return .failed("openvpn: \(why); SIGTERM to pid \(process.pid): \(error)")
    }
  }

  package func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? {
    guard ProcessTable.isRunning(process.pid) else { return true }
    return ProcessTable.startTime(of: process.pid) != process.startTime
  }

  /// Where the management socket can be reached from here: the path as given when the process
  /// shares this mount namespace, and through `/proc/PID/root` (or `cwd` for a relative path)
  /// for one in another (NetworkManager's plugin keeps its socket in its own /run). `/var/run`
  /// is spelled `/run`: it is an absolute symlink and would resolve in the caller's root.
  static func reachable(_ path: String, of pid: Int32) -> [String] {
    var inside = path
    if inside.hasPrefix("/var/run/") { inside = "/run/" + inside.dropFirst("/var/run/".count) }
    let base = inside.hasPrefix("/") ? "/proc/\(pid)/root" : "/proc/\(pid)/cwd/"
    let through = base + inside
    return ProcessTable.namespace("mnt", of: pid) == ProcessTable.namespace("mnt", of: nil)
      ? [path, through] : [through]
  }

  enum Answer {
    case success
    case failure(String)
  }

  /// `signal SIGTERM` on the first socket that `served` serves and that lies where no other
  /// user may write: OpenVPN greets with `>INFO:` and answers `SUCCESS: signal SIGTERM thrown`
  /// (lines end in CRLF). One bounded exchange: a socket that asks for a password takes the
  /// command for one and refuses, which is a failure too.
  static func signal(paths: [String], served: Int32) -> Answer {
    var problem = "unreachable"
    for path in paths {
      if let unsafe = DirectoryTrust.socketProblem(path) {
        problem = unsafe
        continue
      }
      do {
        let answer = try LocalSocketExchange.exchange(
          path: SystemPath(path), request: Array("signal SIGTERM\n".utf8), limit: 1 << 16, idle: .seconds(2),
          total: .seconds(3), peer: .process(served), isComplete: { Self.verdict($0) != nil })
        if Self.verdict(answer) == true { return .success }
        problem = TerminalText.sanitize(String(decoding: answer, as: UTF8.self).trimmingASCIIWhitespace())
      } catch .wrongPeer(let pid, _) {
        problem = "served by \(pid.map { "pid \($0)" } ?? "another process"), not by pid \(served): nothing sent"
      } catch {
        problem = "\(error)"
      }
    }
    return .failure(problem)
  }

  /// Whether the management interface's answer says the command was taken (`SUCCESS:`), refused
  /// (`ERROR:`), or nil while neither line has come.
  static func verdict(_ answer: [UInt8]) -> Bool? {
    for line in answer.split(separator: 0x0A) {
      if line.starts(with: Array("SUCCESS:".utf8)) { return true }
      if line.starts(with: Array("ERROR:".utf8)) { return false }
    }
    return nil
  }
}
