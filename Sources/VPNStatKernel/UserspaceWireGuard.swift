import VPNStatModel
import VPNStatSystem

/// A userspace WireGuard (wireguard-go) running on this machine, and the tun it holds, found
/// through `/proc`. wireguard-go's device is a plain tun, which only its holder tells apart from
/// any other: a process of root (or of a system service) named wireguard-go whose tun
/// descriptor the kernel says is this namespace's device (`TunProcesses`). Its control socket
/// is then reached through the holder's own root (`/proc/PID/root/run/wireguard/NAME.sock`),
/// which is right even when wg-quick ran it in a mount namespace of its own, and asked only when
/// root serves it. docs/real-vpns.md shows what each file holds.
package struct UserspaceWireGuard: Hashable, Sendable {
  package var pid: Int32
  /// The tun it holds (its descriptor asked), or the device its arguments name when /proc would
  /// not show its descriptors.
  package var device: InterfaceName
  /// False when the process belongs to another user: /proc hid its namespace, descriptors and
  /// root, so `device` comes from its arguments, unconfirmed, and its socket cannot be reached.
  package var inspected: Bool

  package init(pid: Int32, device: InterfaceName, inspected: Bool) {
    self.pid = pid
    self.device = device
    self.inspected = inspected
  }

  /// The process names (`/proc/PID/comm`) of the userspace implementations looked for.
  package static let commands: Set<[UInt8]> = [Array("wireguard-go".utf8)]

  /// Where its control socket is, seen from here: under its own root, `/run/wireguard`, and
  /// `/var/run/wireguard` for a root where /var/run is not the usual link to /run (an absolute
  /// link in its root would resolve in ours).
  package func controlSockets(procRoot: SystemPath) -> [SystemPath] {
    let root = procRoot.appending(String(pid)).appending("root")
    return ["run/wireguard", "var/run/wireguard"].map { directory in
      let path = root.appending(directory).appending(device)
      return SystemPath(bytes: path.bytes + Array(".sock".utf8))
    }
  }

  /// Every userspace WireGuard in this network namespace (or, for processes /proc does not let
  /// us inspect, possibly in it), from the walk `processes` made: the holders of tuns named like
  /// wireguard-go, and the hidden ones by their arguments. No socket, no descriptor of anyone
  /// else's is opened.
  package static func find(in processes: TunProcesses) -> [UserspaceWireGuard] {
    var found: [UserspaceWireGuard] = []
    for holder in processes.holders where commands.contains(holder.command) {
      for tun in holder.tuns { found.append(UserspaceWireGuard(pid: holder.pid, device: tun, inspected: true)) }
    }
    return found + processes.hidden
  }

  /// How a tun descriptor's link reads. A holder in another mount namespace (`ip netns exec`
  /// makes one) whose /dev is not under our root shows the path from its namespace's root, e.g.
  /// `/srv/chroot/dev/net/tun`: the suffix is what identifies it.
  static let tunPath = Array("/dev/net/tun".utf8)

  /// wireguard-go's device as its arguments name it (`wireguard-go [-f] NAME`): the last argument
  /// that is not an option.
  static func argumentDevice(_ directory: SystemPath) -> InterfaceName? {
    guard let arguments = try? SmallFile.read(directory.appending("cmdline"), limit: 4096) else { return nil }
    let words = arguments.split(separator: 0, omittingEmptySubsequences: true).dropFirst()
    guard let last = words.last(where: { $0.first != 0x2D }) else { return nil }
    let name = InterfaceName(bytes: last)
    return name.kernelProblem == nil ? name : nil
  }
}
