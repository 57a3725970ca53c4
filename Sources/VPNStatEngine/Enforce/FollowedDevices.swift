import VPNStatKernel
import VPNStatModel

/// The devices under the limit, by ifindex. The tunnel is the device that bears the name when it
/// comes up, followed by its ifindex: a rename does not take it out of reach, and a device moved
/// to another network namespace escapes. Only a tunnel comes under the limit (`NotATunnel`: a typo
/// or a look-alike must never take a machine's own links down): another device that bears the
/// name is said once and left alone.
struct FollowedDevices {
  /// What a change of the devices means for the limit.
  enum Transition: Equatable {
    /// A device under the limit came up (or appeared up).
    case cameUp(Int32)
    /// Went down (`gone`: its device went away); `wasUp`: it was up before.
    case wentDown(gone: Bool, wasUp: Bool)
    /// Moved to another network namespace, out of reach.
    case escaped(InterfaceName, namespace: Int32)
  }

  /// The name given on the command line: any device that bears it is under the limit.
  let tunnel: InterfaceName
  let log: any EventLog
  private(set) var byIndex: [Int32: Enforcer.Device] = [:]
  /// Devices that bore the name but are not tunnels, by ifindex: left alone, said once.
  private var refused: Set<Int32> = []
  /// What classified the devices that bore the name: its own, not the sampler's, so admitting a
  /// device takes nothing from another part (the sampler classifies the same device again, off
  /// the path from a notification to the stop).
  private var catalog: InterfaceCatalog

  /// `catalog`: empty, with the sysfs root and the class overrides the enforcer's sampler uses.
  init(tunnel: InterfaceName, log: any EventLog, catalog: InterfaceCatalog = InterfaceCatalog()) {
    self.tunnel = tunnel
    self.log = log
    self.catalog = catalog
  }

  var anyUp: Bool { byIndex.values.contains(where: \.up) }

  /// The devices up, lowest ifindex first.
  var up: [(index: Int32, device: Enforcer.Device)] {
    byIndex.sorted { $0.key < $1.key }.filter(\.value.up).map { ($0.key, $0.value) }
  }

  /// Once it is down (or gone) after a disconnect.
  mutating func markDown(_ index: Int32) {
    byIndex[index]?.up = false
  }

  /// The device that bears the name when the enforcer starts: followed when it is a tunnel, and
  /// up, a tunnel that came up.
  mutating func start(_ link: LinkRecord) -> Transition? {
    guard admits(link) else { return nil }
    byIndex[link.index] = Enforcer.Device(link)
    return Self.isUp(link) ? .cameUp(link.index) : nil
  }

  /// Whether `change` is about a device under the limit, or one that may come under it now (a
  /// tunnel that bears the name). A deleted device it is not about is forgotten as refused.
  mutating func concerns(_ change: LinkNotifications.Change) -> Bool {
    let index = change.record.index
    let bearsName =
      change.record.name == tunnel
      && (change.deleted ? !refused.contains(index) : admits(change.record))
    guard byIndex[index] != nil || bearsName else {
      if change.deleted { refused.remove(index) }
      return false
    }
    return true
  }

  /// Takes in `change` (one it `concerns`): what it means for the limit, and whether a followed
  /// device was renamed (said in the log).
  mutating func apply(_ change: LinkNotifications.Change) -> (transition: Transition?, renamed: Bool) {
    let index = change.record.index
    let followed = byIndex[index]
    let wasUp = followed?.up ?? false
    if change.deleted {
      byIndex[index] = nil
      if let namespace = change.record.movedToNamespace {
        return (.escaped(change.record.name, namespace: namespace), false)
      }
      return (.wentDown(gone: true, wasUp: wasUp), false)
    }
    var renamed = false
    if let followed, followed.name != change.record.name {
      log.event("\(followed.name.terminalText) was renamed \(change.record.name.terminalText): still enforcing on it")
      renamed = true
    }
    let up = Self.isUp(change.record)
    byIndex[index] = Enforcer.Device(change.record)
    if up && !wasUp { return (.cameUp(index), renamed) }
    if !up && wasUp { return (.wentDown(gone: false, wasUp: true), renamed) }
    return (nil, renamed)
  }

  /// After lost notifications: the kernel's view of every followed device and of the tunnel's
  /// name, and what changed — a device that came up, or all of them down.
  mutating func resynchronise(_ links: any LinkTable) throws -> Transition? {
    var fresh: [Int32: Enforcer.Device] = [:]
    for (index, _) in byIndex {
      if let link = try links.link(index: index) { fresh[index] = Enforcer.Device(link) }
    }
    if let link = try links.link(named: tunnel), byIndex[link.index] != nil || admits(link) {
      fresh[link.index] = Enforcer.Device(link)
    }
    let wasUp = anyUp
    let cameUp = fresh.sorted { $0.key < $1.key }.first { $0.value.up && byIndex[$0.key]?.up != true }?.key
    let gone = byIndex.keys.contains { fresh[$0] == nil }
    byIndex = fresh
    if let cameUp { return .cameUp(cameUp) }
    if wasUp && !anyUp { return .wentDown(gone: gone, wasUp: true) }
    return nil
  }

  /// Whether a device that bears the tunnel's name may come under the limit: only one of class
  /// `tunnel`. Another is said once and left alone.
  private mutating func admits(_ link: LinkRecord) -> Bool {
    let entry = catalog.entry(for: link)
    guard let refusal = NotATunnel.check(link.name, entry.interfaceClass, by: entry.evidence) else { return true }
    if !refused.contains(link.index) {
      refused.insert(link.index)
      log.event("\(refusal.name.terminalText) is \(refusal.classified), not a tunnel: not enforcing on it")
    }
    return false
  }

  static func isUp(_ record: LinkRecord) -> Bool { record.attributes.isAdministrativelyUp }
}

extension Enforcer.Device {
  init(_ link: LinkRecord) {
    self.init(name: link.name, up: FollowedDevices.isUp(link))
  }
}
