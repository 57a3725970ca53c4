import VPNStatModel
import VPNStatSystem

/// The processes holding a tun device open, from /proc: a descriptor that names `/dev/net/tun`
/// and whose `fdinfo` says `iff:\tNAME`. fdinfo names the device but not its network namespace,
/// so only processes in this process's network namespace count (`/proc/PID/ns/net`). This is how
/// the manager of a tun is found: wireguard-go, OpenVPN, NetworkManager's OpenVPN plugin.
public enum TunHolders {
  /// The holders of each of `devices` in this network namespace, in pid order, from one walk of
  /// /proc. Processes of other users cannot be read without privileges and are not seen.
  public static func of(_ devices: Set<InterfaceName>, procRoot: SystemPath = "/proc") -> [InterfaceName:
    [TunnelProcess]]
  {
    guard !devices.isEmpty, let namespace = ProcessTable.namespace("net", of: nil, procRoot: procRoot) else {
      return [:]
    }
    var holders: [InterfaceName: [TunnelProcess]] = [:]
    for pid in ProcessTable.ids(procRoot: procRoot).sorted() {
      guard ProcessTable.namespace("net", of: pid, procRoot: procRoot) == namespace else { continue }
      var held = Set<InterfaceName>()
      // A holder in another mount namespace shows /dev/net/tun from its own root: the suffix
      // is what tells (UserspaceWireGuard reads tuns the same way).
      for file in ProcessTable.openFiles(of: pid, procRoot: procRoot)
      where file.target.suffix(UserspaceWireGuard.tunPath.count).elementsEqual(UserspaceWireGuard.tunPath) {
        guard let info = ProcessTable.descriptorInfo(pid: pid, fd: file.fd, procRoot: procRoot),
          let name = UserspaceWireGuard.tunName(fdinfo: info), devices.contains(name)
        else { continue }
        held.insert(name)
      }
      guard !held.isEmpty else { continue }
      let process = TunnelProcess(
        pid: pid, startTime: ProcessTable.startTime(of: pid, procRoot: procRoot),
        command: ProcessTable.command(of: pid, procRoot: procRoot) ?? "",
        arguments: ProcessTable.arguments(of: pid, procRoot: procRoot),
        controlGroup: ProcessTable.controlGroup(of: pid, procRoot: procRoot))
      for name in held { holders[name, default: []].append(process) }
    }
    return holders
  }
}
