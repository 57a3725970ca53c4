import VPNStatKernel
import VPNStatModel

/// The kernel's links as the engine asks about and changes them, one at a time: a link looked up
/// by name or ifindex, set down (the enforcer's hold on the tunnel), set up (`connect` for a
/// tunnel no manager runs), or deleted. The kernel's is `NetlinkLinkTable`; tests bring a fake.
package protocol LinkTable {
  func link(named name: InterfaceName) throws -> LinkRecord?
  func link(index: Int32) throws -> LinkRecord?
  func setDown(index: Int32) throws
  func setUp(index: Int32) throws
  func delete(index: Int32) throws
}

extension NetlinkLinkTable: LinkTable {}
