import VPNStatModel
import VPNStatSystem

/// The processes holding a tun device open, from one walk of /proc: a descriptor that names
/// `/dev/net/tun` and whose `fdinfo` says `iff:\tNAME`. fdinfo names the device but not its
/// network namespace, so only processes in this process's network namespace count
/// (`/proc/PID/ns/net`). This is how the manager of a tun is found (wireguard-go, OpenVPN,
/// NetworkManager's OpenVPN plugin), and how a tun is known to be wireguard-go's
/// (`UserspaceWireGuard`): both read the same walk, so a report asks /proc once.
public struct TunProcesses: Sendable {
  /// A process in this network namespace with tuns open.
  public struct Holder: Hashable, Sendable {
    public var pid: Int32
    /// `/proc/PID/comm`, as the kernel keeps it.
    public var command: [UInt8]
    /// The tuns its descriptors are attached to, in descriptor order.
    public var tuns: [InterfaceName]
  }

  /// In pid order. When this process's own namespace cannot be read, the holders of every
  /// namespace.
  public private(set) var holders: [Holder] = []
  /// Processes /proc would not show (another user's, without privileges) whose name is a
  /// userspace WireGuard's: the device their arguments name, unconfirmed.
  public private(set) var hidden: [UserspaceWireGuard] = []
  /// Whether this process's network namespace could be read (`holders` is of it alone).
  public private(set) var ownNamespaceKnown = false

  public init() {}

  /// One walk: per process its namespace (one `readlink`), and only for those in ours their
  /// descriptors; a name is read only for holders and for processes /proc hides.
  public static func read(procRoot: SystemPath = "/proc") -> TunProcesses {
    var found = TunProcesses()
    let own = ProcessTable.namespace("net", of: nil, procRoot: procRoot)
    found.ownNamespaceKnown = own != nil
    for pid in ProcessTable.ids(procRoot: procRoot).sorted() {
      let directory = procRoot.appending(String(pid))
      let namespace: [UInt8]
      do {
        namespace = try SmallFile.symbolicLink(directory.appending("ns").appending("net"))
      } catch let error as Errno where error.meansNotPermitted {
        if let command = try? SmallFile.read(directory.appending("comm"), limit: 64),
          UserspaceWireGuard.commands.contains(Array(command.trimmingASCIIWhitespace())),
          let named = UserspaceWireGuard.argumentDevice(directory)
        {
          found.hidden.append(UserspaceWireGuard(pid: pid, device: named, inspected: false))
        }
        continue
      } catch {
        // Exited meanwhile.
        continue
      }
      if let own, namespace != own { continue }
      var tuns: [InterfaceName] = []
      // A holder in another mount namespace shows /dev/net/tun from its own root: the suffix
      // is what tells.
      for file in ProcessTable.openFiles(of: pid, procRoot: procRoot).sorted(by: { $0.fd < $1.fd })
      where file.target.suffix(UserspaceWireGuard.tunPath.count).elementsEqual(UserspaceWireGuard.tunPath) {
        guard let info = ProcessTable.descriptorInfo(pid: pid, fd: file.fd, procRoot: procRoot),
          let name = UserspaceWireGuard.tunName(fdinfo: info)
        else { continue }
        tuns.append(name)
      }
      guard !tuns.isEmpty else { continue }
      let command = (try? SmallFile.read(directory.appending("comm"), limit: 64)) ?? []
      found.holders.append(Holder(pid: pid, command: Array(command.trimmingASCIIWhitespace()), tuns: tuns))
    }
    return found
  }

  /// The holders of each of `devices` in this network namespace, in pid order, with who they
  /// are. Processes of other users cannot be read without privileges and are not seen.
  public func holders(of devices: Set<InterfaceName>, procRoot: SystemPath = "/proc") -> [InterfaceName:
    [TunnelProcess]]
  {
    guard ownNamespaceKnown else { return [:] }
    var result: [InterfaceName: [TunnelProcess]] = [:]
    for holder in holders {
      let held = Set(holder.tuns).intersection(devices)
      guard !held.isEmpty else { continue }
      let process = TunnelProcess(
        pid: holder.pid, startTime: ProcessTable.startTime(of: holder.pid, procRoot: procRoot),
        command: String(decoding: holder.command, as: UTF8.self),
        arguments: ProcessTable.arguments(of: holder.pid, procRoot: procRoot),
        controlGroup: ProcessTable.controlGroup(of: holder.pid, procRoot: procRoot))
      for name in held { result[name, default: []].append(process) }
    }
    return result
  }
}

/// Where the readers of one command get `TunProcesses`: `status` asks twice (WireGuard's reader
/// for wireguard-go, the manager detector for every tun's holder), and one survey walks /proc at
/// the first question and answers the second from it. Long-running commands make none: they
/// walk afresh each time they must look.
public final class TunProcessSurvey {
  public let procRoot: SystemPath
  private var taken: TunProcesses?
  /// How many times /proc was walked: at most once.
  public private(set) var walks = 0

  public init(procRoot: SystemPath = "/proc") { self.procRoot = procRoot }

  public var processes: TunProcesses {
    if let taken { return taken }
    walks += 1
    let fresh = TunProcesses.read(procRoot: procRoot)
    taken = fresh
    return fresh
  }
}
