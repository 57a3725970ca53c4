import VPNStatModel
import VPNStatSystem

/// The datagram `connect` sends into a quiet WireGuard tunnel to make it shake hands
/// (`HandshakeProbe`), and the device's own addresses, which it must not go to.
package protocol HandshakeDatagrams {
  func addresses(of device: InterfaceName) -> [[UInt8]]
  func send(to address: [UInt8], port: UInt16, through device: InterfaceName) throws
}

/// The kernel's: `DeviceDatagram` (bound to the device, TTL 1) and the device's addresses from
/// `getifaddrs`.
package struct DeviceDatagrams: HandshakeDatagrams {
  package init() {}
  package func addresses(of device: InterfaceName) -> [[UInt8]] { (try? LinkAddresses.ipAddresses(of: device)) ?? [] }
  package func send(to address: [UInt8], port: UInt16, through device: InterfaceName) throws {
    try DeviceDatagram.send(to: address, port: port, through: device)
  }
}
