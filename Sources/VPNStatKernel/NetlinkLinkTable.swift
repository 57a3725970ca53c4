import CLinux
import VPNStatModel
import VPNStatSystem

/// The kernel's table of network links, over rtnetlink: one link asked about by name or
/// ifindex, set down or up, or deleted (the engine's `LinkTable`). How the enforcer takes a
/// tunnel down (`--action link-down`, `--action delete`, and the fallback of every other action)
/// and how it confirms that any action really did; how `connect` raises a tunnel no manager runs.
package final class NetlinkLinkTable {
  let socket: NetlinkSocket

  package init() throws { socket = try NetlinkSocket() }

  /// What the kernel says about the link named `name` now; nil when there is none.
  package func link(named name: InterfaceName) throws -> LinkRecord? {
    try link(index: 0, name: name)
  }

  /// What the kernel says about the link with ifindex `index` now; nil when there is none.
  package func link(index: Int32) throws -> LinkRecord? {
    try link(index: index, name: nil)
  }

  /// One `RTM_GETLINK` for an ifindex or a name (the kernel looks a name up when the index is 0).
  private func link(index: Int32, name: InterfaceName?) throws -> LinkRecord? {
    var payload = [UInt8](repeating: 0, count: RouteLinkMessages.interfaceInfoLength)
    payload[0] = UInt8(AF_UNSPEC)
    payload.withUnsafeMutableBytes { $0.storeBytes(of: index, toByteOffset: 4, as: Int32.self) }
    if let name { payload += RouteAttributes.encode(type: UInt16(IFLA_IFNAME), value: name.bytes + [0]) }
    var mask = UInt32(RTEXT_FILTER_SKIP_STATS)
    payload += RouteAttributes.encode(type: UInt16(IFLA_EXT_MASK), value: withUnsafeBytes(of: &mask) { Array($0) })
    var found: LinkRecord?
    do {
      try socket.request(type: RouteLinkMessages.getLink, payload: payload) { message in
        if message.type == RouteLinkMessages.newLink, let record = RouteLinkMessages.parseLink(message.payload),
          name.map({ record.name == $0 }) ?? (record.index == index)
        {
          found = record
        }
      }
    } catch let error as Errno where error.meansVanished {
      return nil
    }
    return found
  }

  /// True when the link named `name` exists and has IFF_UP.
  package func isUp(_ name: InterfaceName) throws -> Bool {
    try link(named: name)?.attributes.isAdministrativelyUp ?? false
  }

  /// Clears IFF_UP on the link with `index`.
  package func setDown(index: Int32) throws {
    try socket.request(
      type: RouteLinkMessages.newLink, payload: RouteLinkMessages.setUpRequest(index: index, up: false))
  }

  /// Sets IFF_UP on the link with `index` (`vpnstat connect` on a tunnel no manager runs).
  package func setUp(index: Int32) throws {
    try socket.request(
      type: RouteLinkMessages.newLink, payload: RouteLinkMessages.setUpRequest(index: index, up: true))
  }

  /// Deletes the link with `index` (`RTM_DELLINK`; a tun goes even while a process holds it).
  /// One already gone is not an error.
  package func delete(index: Int32) throws {
    var payload = [UInt8](repeating: 0, count: RouteLinkMessages.interfaceInfoLength)
    payload[0] = UInt8(AF_UNSPEC)
    payload.withUnsafeMutableBytes { $0.storeBytes(of: index, toByteOffset: 4, as: Int32.self) }
    do {
      try socket.request(type: RouteLinkMessages.deleteLink, payload: payload)
    } catch let error as Errno where error.meansVanished {
      return
    }
  }
}
