import VPNStatKernel
import VPNStatModel
import VPNStatSystem

/// Where the engine's lines go: one per event worth a person's attention (stderr under a
/// terminal, the journal under systemd, an array in a test).
public protocol EventLog {
  func event(_ line: String)
}

/// Asking the kernel about one link and taking it down (or away): the enforcer's hold on the
/// tunnel; raising it: `connect` for a tunnel no manager runs.
public protocol LinkController {
  func link(named name: InterfaceName) throws -> LinkRecord?
  func link(index: Int32) throws -> LinkRecord?
  func setDown(index: Int32) throws
  func setUp(index: Int32) throws
  func delete(index: Int32) throws
}

extension LinkControl: LinkController {}

/// The enforcer's alarm on the wall clock: armed for one instant, or disarmed.
public protocol DeadlineAlarm {
  func arm(at deadline: Timestamp?) throws
}

extension WallClockDeadline: DeadlineAlarm {}

/// The datagram `connect` sends into a quiet WireGuard tunnel to make it shake hands
/// (`HandshakeProbe`), and the device's own addresses, which it must not go to.
public protocol HandshakeDatagrams {
  func addresses(of device: InterfaceName) -> [[UInt8]]
  func send(to address: [UInt8], port: UInt16, through device: InterfaceName) throws
}

/// The kernel's: `DeviceDatagram` (bound to the device, TTL 1) and the device's addresses from
/// `getifaddrs`.
public struct DeviceDatagrams: HandshakeDatagrams {
  public init() {}
  public func addresses(of device: InterfaceName) -> [[UInt8]] { (try? LinkAddresses.ipAddresses(of: device)) ?? [] }
  public func send(to address: [UInt8], port: UInt16, through device: InterfaceName) throws {
    try DeviceDatagram.send(to: address, port: port, through: device)
  }
}
