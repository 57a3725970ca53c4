import VPNStatKernel
import VPNStatModel

/// A tunnel controlled directly through its kernel link, with no manager in between (none runs
/// it, or `--action link-down`/`delete` said so, or the manager failed): `link-down` clears the
/// link's up flag, `delete` removes it (a tun goes even while a process holds it); `connect`
/// sets the up flag of `tunnel` and waits for it to be running (a process attached to the tun).
package struct DirectLinkControl: TunnelControl {
  let links: any LinkTable
  package let deleting: Bool
  /// The link `connect` raises (the enforcer's controls take the tunnel from `stop`).
  package let tunnel: InterfaceName?
  package init(links: any LinkTable, deleting: Bool = false, tunnel: InterfaceName? = nil) {
    self.links = links
    self.deleting = deleting
    self.tunnel = tunnel
  }
  package var label: String { deleting ? "delete" : "link-down" }

  package func start(timeout: Duration) -> StartOutcome {
    guard let tunnel else { return .refused("no interface to raise") }
    do {
      guard let link = try links.link(named: tunnel) else { return .refused("\(tunnel.terminalText) does not exist") }
      try links.setUp(index: link.index)
      return .accepted
    } catch {
      return .refused("ip link set \(tunnel.terminalText) up: \(error)")
    }
  }

  package func device() -> InterfaceName? { tunnel }
  package var proofs: [ConnectionProof] { tunnel.map { [.linkRunning($0)] } ?? [] }

  package func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    do {
      guard let link = try links.link(named: tunnel) else { return .done }
      if deleting {
        try links.delete(index: link.index)
      } else {
        try links.setDown(index: link.index)
      }
      return .done
    } catch {
      return .failed("\(label): \(error)")
    }
  }
}
