import Foundation
import VPNStatSystem

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// A kernel of the test's own: links with a name, an up flag and counters, changed by the test
/// (which gets the notification the real kernel would send) and by the code under test.
final class FakeKernel: @unchecked Sendable {
  struct Link {
    var name: InterfaceName
    var up: Bool
    var traffic: TrafficCounts
    /// The netlink kind (`tun`; `wireguard` for a kernel WireGuard device).
    var kind = "tun"
    /// `IFLA_CARRIER_CHANGES`: a tun's first holder attaching, or its last going, moves it.
    var carrierChanges: UInt32 = 1
  }

  private let lock = NSLock()
  private(set) var links: [Int32: Link] = [:]
  private var nextIndex: Int32 = 10
  /// When set, `setDown` fails (a link the enforcer may not take down).
  var refuseSetDown = false
  private(set) var setDownCalls = 0

  private func locked<T>(_ body: () -> T) -> T {
    lock.lock()
    defer { lock.unlock() }
    return body()
  }

  func record(_ index: Int32) -> LinkRecord? {
    locked {
      guard let link = links[index] else { return nil }
      return LinkRecord(
        index: index, name: link.name,
        attributes: LinkAttributes(arpType: 65534, flags: link.up ? 0x41 : 0, kind: link.kind),
        counters: InterfaceCounters(link.traffic), carrierChanges: link.carrierChanges)
    }
  }

  func index(of name: String) -> Int32? {
    locked { links.first { $0.value.name == InterfaceName(name) }?.key }
  }

  /// A new device (a new ifindex, counters from zero).
  @discardableResult
  func add(_ name: String, up: Bool = false, kind: String = "tun") -> LinkNotifications.Change {
    let index = locked { () -> Int32 in
      nextIndex += 1
      links[nextIndex] = Link(name: InterfaceName(name), up: up, traffic: .zero, kind: kind)
      return nextIndex
    }
    return LinkNotifications.Change(record: record(index)!, deleted: false)
  }

  func set(_ index: Int32, up: Bool) -> LinkNotifications.Change {
    locked { links[index]?.up = up }
    return LinkNotifications.Change(record: record(index)!, deleted: false)
  }

  /// A process attached the tun's first queue, or its last let go: the carrier came or went.
  func carrierChanged(_ index: Int32) -> LinkNotifications.Change {
    locked { links[index]?.carrierChanges += 1 }
    return LinkNotifications.Change(record: record(index)!, deleted: false)
  }

  func rename(_ index: Int32, to name: String) -> LinkNotifications.Change {
    locked { links[index]?.name = InterfaceName(name) }
    return LinkNotifications.Change(record: record(index)!, deleted: false)
  }

  func carry(_ index: Int32, rx: UInt64, tx: UInt64) {
    locked {
      links[index]?.traffic += TrafficCounts(rxBytes: rx, txBytes: tx, rxPackets: rx / 1000, txPackets: tx / 1000)
    }
  }

  /// Deleted (or, with `movedTo`, moved to another network namespace): the last notification.
  /// Kept in `deletions` too, for a device deleted by the code under test (a manager's stop).
  func delete(_ index: Int32, movedTo namespace: Int32? = nil) -> LinkNotifications.Change {
    var last = record(index)!
    last.movedToNamespace = namespace
    let change = LinkNotifications.Change(record: last, deleted: true)
    locked {
      links[index] = nil
      deletions.append(change)
    }
    return change
  }
  /// Every deletion's notification, in order.
  private(set) var deletions: [LinkNotifications.Change] = []

  func isUp(_ index: Int32) -> Bool { locked { links[index]?.up ?? false } }

  func setDown(_ index: Int32) throws {
    let refused = locked { () -> Bool in
      setDownCalls += 1
      if refuseSetDown { return true }
      links[index]?.up = false
      return false
    }
    if refused { throw Errno.notPermitted }
  }

  /// Runs at each sample, before the links are read: what another process does meanwhile.
  var duringSample: (() -> Void)?

  /// A sample as the netlink reader gives it.
  func sample(at clock: any TimeSource) -> CounterSample {
    duringSample?()
    let taken = clock.now()
    let samples = locked {
      links.sorted { $0.key < $1.key }.map { index, link in
        InterfaceSample(
          name: link.name, index: index, counters: InterfaceCounters(link.traffic), width: .bits64,
          link: LinkAttributes(arpType: 65534, flags: link.up ? 0x41 : 0, kind: link.kind))
      }
    }
    return CounterSample(interfaces: samples, source: .netlink, taken: taken)
  }
}

/// The fake kernel as the enforcer's `LinkTable`.
struct FakeLinks: LinkTable {
  let kernel: FakeKernel
  func link(named name: InterfaceName) throws -> LinkRecord? {
    kernel.links.first { $0.value.name == name }.flatMap { kernel.record($0.key) }
  }
  func link(index: Int32) throws -> LinkRecord? { kernel.record(index) }
  func setDown(index: Int32) throws { try kernel.setDown(index) }
  func setUp(index: Int32) throws { _ = kernel.set(index, up: true) }
  func delete(index: Int32) throws { _ = kernel.delete(index) }
}

/// The fake kernel as a counter reader.
struct FakeCounters: CounterSource {
  let kernel: FakeKernel
  var kind: CounterSourceKind { .netlink }
  mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
    kernel.sample(at: clock)
  }
}

/// The enforcer's alarm, remembered rather than armed.
final class RecordedAlarm: DeadlineAlarm, @unchecked Sendable {
  private(set) var armed: Timestamp?
  private(set) var history: [Timestamp?] = []
  func arm(at deadline: Timestamp?) throws {
    armed = deadline
    history.append(deadline)
  }
}

/// The lines the engine logs.
final class CapturedLog: EventLog, @unchecked Sendable {
  private let lock = NSLock()
  private var stored: [LoggedEvent] = []
  var lines: [String] { entries.map(\.text) }
  var entries: [LoggedEvent] {
    lock.lock()
    defer { lock.unlock() }
    return stored
  }
  func event(_ entry: LoggedEvent) {
    lock.lock()
    stored.append(entry)
    lock.unlock()
  }
  func contains(_ text: String) -> Bool { lines.contains { $0.contains(text) } }
}

/// A disconnect action that behaves as the test says: takes the link down (as a manager's
/// command would), does nothing, or fails outright; counting its calls and lookups.
final class ScriptedAction: DisconnectAction, TunnelControl, @unchecked Sendable {
  enum Behaviour { case takesDown, doesNothing, fails }
  let kernel: FakeKernel
  var behaviour: Behaviour
  private(set) var calls = 0
  /// How many times it was asked for the control of a link.
  private(set) var lookups = 0
  init(_ kernel: FakeKernel, _ behaviour: Behaviour) {
    self.kernel = kernel
    self.behaviour = behaviour
  }
  var label: String { "scripted" }
  func control(for link: LinkRecord) -> any TunnelControl {
    lookups += 1
    return self
  }
  func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
    calls += 1
    switch behaviour {
    case .takesDown:
      if let index = kernel.links.first(where: { $0.value.name == tunnel })?.key { try? kernel.setDown(index) }
      return .done
    case .doesNothing: return .done
    case .fails: return .failed("exit 3")
    }
  }
}

/// An enforcer on the fake kernel, a manual clock and a database in a temporary directory.
final class EnforcerBench: @unchecked Sendable {
  let kernel: FakeKernel
  let clock = ManualTimeSource()
  let alarm = RecordedAlarm()
  let log = CapturedLog()
  let directory: TemporaryDirectory
  let location: StoreLocation
  let store: Store
  let lengths = SessionLengths(session: .seconds(900), pause: .seconds(2700))
  var enforcer: Enforcer!

  /// `manager`: the action is `ManagerAction` (auto, or the kind given) with this detector and
  /// this runner playing the manager's programs. `presence`: the enforcer says it runs, in a file
  /// beside the database. `ledgerLock`: how it shares the ledger with other writers;
  /// `saveInterval`: how often it saves it. `view`: without its store (`store: false`), it reads
  /// the session as a reader does.
  init(
    _ label: String, action: ScriptedAction.Behaviour? = nil, store present: Bool = true,
    kernel: FakeKernel = FakeKernel(), directory: TemporaryDirectory? = nil,
    manager: (kind: TunnelManager.Kind?, detector: any ManagerDetecting, runner: any ProgramRunner)? = nil,
    presence: Bool = false, ledgerLock: any LedgerWriterLock = UncontendedLedgerLock(),
    saveInterval: Duration = Recorder.defaultSaveInterval, spool: Bool = false, view: Bool = false,
    openStore: @escaping () throws -> Store? = { nil }, processExits: any ProcessExitWatching = NoProcessExits(),
    changes: DatabaseChangesSource = .none
  ) throws {
    self.kernel = kernel
    self.directory = try directory ?? TemporaryDirectory(label)
    location = StoreLocation(path: self.directory.file("v.db"))
    store = try Store.open(location, intent: .write, calendar: FixedOffsetCalendar.utc)!
    let sampler = TrafficSampler(
      reader: CounterReader(source: FakeCounters(kernel: kernel)), catalog: InterfaceCatalog(),
      recorded: InterfaceSelection(names: [InterfaceName("wg0")]), clock: clock)
    let links = FakeLinks(kernel: kernel)
    var disconnect: (any DisconnectAction)? = action.map { ScriptedAction(kernel, $0) }
    if let manager {
      disconnect = ManagerAction(kind: manager.kind, detector: manager.detector, runner: manager.runner, links: links)
    }
    enforcer = Enforcer(
      tunnel: InterfaceName("wg0"), action: disconnect, lengths: lengths, sampler: sampler,
      storage: EnforcerStorage(
        store: present ? store : nil,
        view: view ? try Store.open(location, intent: .read, calendar: FixedOffsetCalendar.utc) : nil, open: openStore,
        saveInterval: saveInterval, ledgerLock: ledgerLock,
        spool: spool ? EnforcerSpool(location: location) : nil,
        presence: presence ? EnforcerPresenceFile(location: location, tunnel: InterfaceName("wg0")) : nil,
        changes: try changes.make(location)),
      environment: EnforcerEnvironment(
        links: links, alarm: alarm, log: log, calendar: FixedOffsetCalendar.utc,
        holdRelease: ManagerHoldRelease(runner: manager?.runner ?? ChildProgramRunner()), processExits: processExits))
  }

  /// The spool beside this bench's database.
  var spoolPath: String { location.companionPath("spool") }

  var action: ScriptedAction? { enforcer.action as? ScriptedAction }

  func handle(_ event: Enforcer.Event) throws { try enforcer.handle(event) }

  /// The stored session and the stops, as another process would read them.
  func stored() throws -> SessionRecord { try store.sessionRecord() }
  func stops() throws -> [StopReason] { try store.stops(limit: 20).map(\.reason) }

  /// Lets time pass until `instant` and fires the alarm, as the wall-clock timer would.
  func alarmFires(at instant: Timestamp) throws {
    clock.advance(instant - clock.now().wall)
    try handle(.alarm)
  }
}

/// Who tells a bench's enforcer that its database changed: nobody (it reads before every
/// decision), the kernel (inotify on the bench's directory), or the test.
enum DatabaseChangesSource {
  case none
  case inotify
  case told(ToldChanges)

  func make(_ location: StoreLocation) throws -> (any DatabaseChanges)? {
    switch self {
    case .none: nil
    case .inotify: try location.changes()
    case .told(let told): told
    }
  }
}

/// Changes as the test says: `changed` is returned once, then false again.
final class ToldChanges: DatabaseChanges {
  var changed = false
  private(set) var asked = 0
  func consume() -> Bool {
    asked += 1
    defer { changed = false }
    return changed
  }
}

/// The ledger lock of one database as several processes see it: a recorder's exclusive claim,
/// enforcers' shared saves. Each process gets its own `FakeLedgerLock` on one `LedgerLockState`.
final class LedgerLockState: @unchecked Sendable {
  private let lock = NSLock()
  var exclusive: String?
  var sharedSaves = 0
  /// The recorder holding it goes away (its process ends).
  func release() { locked { exclusive = nil } }
  func locked<T>(_ body: () throws -> T) rethrows -> T {
    lock.lock()
    defer { lock.unlock() }
    return try body()
  }
}

struct FakeLedgerLock: LedgerWriterLock {
  let state: LedgerLockState
  let role: String
  private var claimed = false
  init(_ state: LedgerLockState, role: String) {
    self.state = state
    self.role = role
  }
  mutating func claim() throws -> Bool {
    if claimed, state.locked({ state.exclusive == role }) { return true }
    claimed = state.locked { () -> Bool in
      guard state.exclusive == nil, state.sharedSaves == 0 else { return false }
      state.exclusive = role
      return true
    }
    return claimed
  }
  func sharing<T>(_ save: () throws -> T) throws -> (result: T?, holder: String?) {
    if let holder = state.locked({ state.exclusive }) { return (nil, holder) }
    state.locked { state.sharedSaves += 1 }
    defer { state.locked { state.sharedSaves -= 1 } }
    return (try save(), nil)
  }
}

/// No process is watched: the enforcer's tests name processes that do not exist.
struct NoProcessExits: ProcessExitWatching {
  func watch(_ process: TunnelProcess) -> FileDescriptor? { nil }
  func hasExited(_ notice: FileDescriptor) -> Bool { false }
  func close(_ notice: FileDescriptor) {}
}
