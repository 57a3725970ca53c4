import VPNStatModel
import VPNStatSystem

/// Tells which device a process's tun descriptor is attached to: `TunDescriptor` on this
/// machine (the descriptor itself asked, root only), a fixture's answer in tests.
package protocol TunAttachmentSource: Sendable {
  /// The attachment of descriptor `fd` of `pid`, or nil when it cannot be told.
  func attachment(pid: Int32, fd: Int32) -> TunDescriptor.Attachment?
}

/// The kernel's answer, through `TunDescriptor`.
package struct KernelTunAttachments: TunAttachmentSource {
  package init() {}
  package func attachment(pid: Int32, fd: Int32) -> TunDescriptor.Attachment? {
    try? TunDescriptor.attachment(pid: pid, fd: fd)
  }
}

/// The processes that may manage a tunnel and the tuns they hold, from one walk of /proc. Only
/// a process with standing may be a manager (`TunnelProcess.Standing`: root's, a system
/// service's, a child of root's NetworkManager VPN plugin): the walk asks that first
/// (`TunnelProcess.mayHaveStanding`, from the kernel's `status` and `cgroup` files and the
/// parent's program), and reads the descriptors of those alone, so what other users hold open
/// costs nothing. A descriptor counts when it names `/dev/net/tun` and the descriptor itself
/// says its device lives in this network namespace (`TunAttachmentSource`): fdinfo's `iff:` name
/// and the holder's own namespace prove nothing, since any user can make a tun of any name in a
/// namespace of their own and pass it here. This is how the manager of a tun is found
/// (wireguard-go, OpenVPN), and how a tun is known to be wireguard-go's (`UserspaceWireGuard`):
/// both read the same walk, so a report asks /proc once.
package struct TunProcesses: Sendable {
  /// A process that may have standing, holding tuns of this network namespace.
  package struct Holder: Hashable, Sendable {
    package var pid: Int32
    /// `/proc/PID/comm`, as the kernel keeps it.
    package var command: [UInt8]
    /// The tuns its descriptors are attached to, in descriptor order.
    package var tuns: [InterfaceName]
    /// Whether all its user ids are root's.
    package var runsAsRoot: Bool
    /// Whether its parent is root's NetworkManager VPN plugin.
    package var pluginParent: Bool
    /// Its control group.
    package var controlGroup: String?

    /// Its standing as far as the kernel tells: a system service's process that is not root
    /// is `.unprivileged` until systemd says it is the service's main process.
    package var standing: TunnelProcess.Standing {
      runsAsRoot ? .root : pluginParent ? .networkManagerPlugin : .unprivileged
    }
  }

  /// In pid order.
  package private(set) var holders: [Holder] = []
  /// Processes /proc would not show (another user's, to a caller without privileges) whose
  /// name is a userspace WireGuard's: the device their arguments name, unconfirmed, for a report
  /// to show — never evidence.
  package private(set) var hidden: [UserspaceWireGuard] = []
  /// Whether this process's network namespace could be read.
  package private(set) var ownNamespaceKnown = false

  package init() {}

  /// One walk: per process its namespace (one `readlink`); for those in ours, who runs it; for
  /// those that may be managers, their descriptors.
  package static func read(
    procRoot: SystemPath = "/proc", attachments: any TunAttachmentSource = KernelTunAttachments()
  ) -> TunProcesses {
    var found = TunProcesses()
    guard let own = ProcessTable.namespace("net", of: nil, procRoot: procRoot) else { return found }
    found.ownNamespaceKnown = true
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
      guard namespace == own, let status = ProcessTable.status(of: pid, procRoot: procRoot) else { continue }
      let controlGroup = ProcessTable.controlGroup(of: pid, procRoot: procRoot)
      let pluginParent =
        !status.isRoot && TunnelProcess.systemService(controlGroup) == nil
        && isNetworkManagerPlugin(status.parent, procRoot: procRoot)
      guard
        TunnelProcess.mayHaveStanding(
          userIDs: status.userIDs, controlGroup: controlGroup, pluginParent: pluginParent)
      else { continue }
      var tuns: [InterfaceName] = []
      // A holder in another mount namespace shows /dev/net/tun from its own root: the suffix
      // is what tells.
      for file in ProcessTable.openFiles(of: pid, procRoot: procRoot).sorted(by: { $0.fd < $1.fd })
      where file.target.suffix(UserspaceWireGuard.tunPath.count).elementsEqual(UserspaceWireGuard.tunPath) {
        guard case .here(let name) = attachments.attachment(pid: pid, fd: file.fd) else { continue }
        tuns.append(name)
      }
      guard !tuns.isEmpty else { continue }
      let command = (try? SmallFile.read(directory.appending("comm"), limit: 64)) ?? []
      found.holders.append(
        Holder(
          pid: pid, command: Array(command.trimmingASCIIWhitespace()), tuns: tuns, runsAsRoot: status.isRoot,
          pluginParent: pluginParent, controlGroup: controlGroup))
    }
    return found
  }

  /// Whether `pid` is root's NetworkManager VPN plugin. A parent cannot be chosen: a process
  /// whose parent exits goes to init (or a subreaper), never to another program.
  static func isNetworkManagerPlugin(_ pid: Int32, procRoot: SystemPath) -> Bool {
    guard pid > 1, let program = ProcessTable.executable(of: pid, procRoot: procRoot),
      TunnelProcess.isNetworkManagerPlugin(executable: program)
    else { return false }
    return ProcessTable.status(of: pid, procRoot: procRoot)?.isRoot == true
  }

  /// The holders of each of `devices`, in pid order, with who they are.
  package func holders(of devices: Set<InterfaceName>, procRoot: SystemPath = "/proc") -> [InterfaceName:
    [TunnelProcess]]
  {
    var result: [InterfaceName: [TunnelProcess]] = [:]
    for holder in holders {
      let held = Set(holder.tuns).intersection(devices)
      guard !held.isEmpty else { continue }
      let process = TunnelProcess(
        pid: holder.pid, startTime: ProcessTable.startTime(of: holder.pid, procRoot: procRoot),
        command: String(decoding: holder.command, as: UTF8.self),
        arguments: ProcessTable.arguments(of: holder.pid, procRoot: procRoot), controlGroup: holder.controlGroup,
        standing: holder.standing)
      for name in held { result[name, default: []].append(process) }
    }
    return result
  }
}

/// Where the readers of one command get `TunProcesses`: `status` asks twice (WireGuard's reader
/// for wireguard-go, the manager detector for every tun's holder), and one survey walks /proc at
/// the first question and answers the second from it. Long-running commands make none: they
/// walk afresh each time they must look.
package final class TunProcessSurvey {
  package let procRoot: SystemPath
  package let attachments: any TunAttachmentSource
  private var taken: TunProcesses?
  /// How many times /proc was walked: at most once.
  package private(set) var walks = 0

  package init(procRoot: SystemPath = "/proc", attachments: any TunAttachmentSource = KernelTunAttachments()) {
    self.procRoot = procRoot
    self.attachments = attachments
  }

  package var processes: TunProcesses {
    if let taken { return taken }
    walks += 1
    let fresh = TunProcesses.read(procRoot: procRoot, attachments: attachments)
    taken = fresh
    return fresh
  }
}
