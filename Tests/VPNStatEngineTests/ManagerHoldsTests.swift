import Foundation
import Testing

@testable import VPNStatEngine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// The manager held off for the pause and the presence file, alone (`ManagerHolds`): a scripted
/// release, a control that holds, a presence file in a temporary directory.
struct ManagerHoldsTests {
  static let hold = ManagerHold(
    kind: .networkManager, id: "f2e6ce48-0c5f-4b7e-9d7e-3d2b1f0a9c11", setting: "connection.autoconnect",
    restore: "yes")

  /// Gives back as told, keeping what it was asked.
  final class ScriptedRelease: HoldRelease, @unchecked Sendable {
    var answers: [Bool]
    private(set) var asked: [ManagerHold] = []
    init(_ answers: [Bool]) { self.answers = answers }
    func release(_ hold: ManagerHold) -> Bool {
      asked.append(hold)
      return answers.isEmpty ? true : answers.removeFirst()
    }
  }

  /// A control whose manager holds `hold` for the pause.
  struct Holding: TunnelControl {
    var label: String { "networkmanager" }
    var manager: TunnelManager? {
      TunnelManager(kind: .networkManager, id: ManagerHoldsTests.hold.id, foundBy: .nothing, evidence: "test")
    }
    func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome { .done }
    func holdForPause() -> ManagerHold? { ManagerHoldsTests.hold }
  }

  func holds(_ directory: TemporaryDirectory, _ release: any HoldRelease, log: CapturedLog, pid: Int32 = 4242)
    -> (ManagerHolds, EnforcerPresenceFile)
  {
    let file = EnforcerPresenceFile(location: StoreLocation(path: directory.file("v.db")), tunnel: InterfaceName("wg0"))
    return (ManagerHolds(file: file, release: release, process: ProcessStamp(pid: pid, startTime: 7), log: log), file)
  }

  @Test("announced: this process in the presence file; a hold taken once per connection and written there")
  func holdOnce() throws {
    let directory = try TemporaryDirectory("holds")
    let log = CapturedLog()
    var (holds, file) = holds(directory, ScriptedRelease([]), log: log)
    holds.announce(
      tunnel: InterfaceName("wg0"), action: "auto", lengths: .release, since: Timestamp(seconds: 1_800_000_000))
    let said = try #require(file.read())
    #expect(said.pid == 4242 && said.startTime == 7 && said.action == "auto" && said.holds.isEmpty)
    #expect(said.lengths == .release)
    holds.hold(Holding())
    holds.hold(Holding())
    #expect(holds.held == [Self.hold])
    #expect(file.read()?.holds == [Self.hold])
    #expect(log.lines.filter { $0.hasPrefix("holding networkmanager") }.count == 1)
  }

  @Test("given back: what the manager refuses stays held and is tried again; at a stop nothing is kept")
  func giveBack() throws {
    let directory = try TemporaryDirectory("holdsback")
    let log = CapturedLog()
    let release = ScriptedRelease([false, true])
    var (holds, file) = holds(directory, release, log: log)
    holds.announce(
      tunnel: InterfaceName("wg0"), action: "auto", lengths: .release, since: Timestamp(seconds: 1_800_000_000))
    holds.hold(Holding())
    holds.giveBack(all: false)
    #expect(holds.held == [Self.hold])
    #expect(log.contains("could not give back"))
    holds.giveBack(all: false)
    #expect(holds.held.isEmpty)
    #expect(file.read()?.holds.isEmpty == true)
    #expect(log.contains("gave back networkmanager"))
    let refusing = ScriptedRelease([false])
    var (stopping, _) = self.holds(try TemporaryDirectory("holdsall"), refusing, log: log)
    stopping.hold(Holding())
    stopping.giveBack(all: true)
    #expect(stopping.held.isEmpty && refusing.asked == [Self.hold])
  }

  @Test("a predecessor's holds are taken over from its file; this process's own are not taken twice; withdrawn at stop")
  func takeOver() throws {
    let directory = try TemporaryDirectory("holdsprev")
    let log = CapturedLog()
    var (holds, file) = holds(directory, ScriptedRelease([]), log: log)
    try file.write(
      EnforcerPresence(
        pid: 999_999, startTime: 1, since: Timestamp(seconds: 1_799_999_000), action: "auto",
        tunnel: InterfaceName("wg0"), holds: [Self.hold]))
    holds.announce(
      tunnel: InterfaceName("wg0"), action: "link-down", lengths: .release, since: Timestamp(seconds: 1_800_000_000))
    #expect(holds.held == [Self.hold])
    #expect(log.contains("taking over what the previous enforcer (pid 999999) held"))
    #expect(file.read()?.pid == 4242 && file.read()?.holds == [Self.hold])
    var (same, _) = self.holds(directory, ScriptedRelease([]), log: CapturedLog())
    same.announce(
      tunnel: InterfaceName("wg0"), action: "auto", lengths: .release, since: Timestamp(seconds: 1_800_000_001))
    #expect(same.held.isEmpty, "its own file's holds taken for a predecessor's")
    same.withdraw()
    #expect(file.read() == nil)
  }

  @Test("the release runs nmcli to give NetworkManager's autoconnect back; a hold of another kind asks nothing")
  func releaseThroughNetworkManager() {
    let nm = FakeNetworkManager(FakeKernel())
    nm.add(uuid: Self.hold.id, name: "vpnt", device: "wg0", autoconnect: false)
    let release = ManagerHoldRelease(runner: nm)
    #expect(release.release(Self.hold))
    #expect(nm.autoconnect(Self.hold.id))
    #expect(
      nm.commands == [
        ["nmcli", "connection", "modify", "--temporary", "uuid", Self.hold.id, "connection.autoconnect", "yes"]
      ])
    var other = Self.hold
    other.kind = .systemd
    #expect(release.release(other))
    #expect(nm.commands.count == 1)
  }
}
