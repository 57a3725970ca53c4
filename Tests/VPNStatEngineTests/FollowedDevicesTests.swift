import Testing

@testable import VPNStatEngine
@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatTestSupport

/// Which devices are under the limit, alone (`FollowedDevices`): link records from a fake kernel,
/// classified by their link kind.
struct FollowedDevicesTests {
  let kernel = FakeKernel()
  let log = CapturedLog()

  @Test("a tunnel that bears the name is followed, and up it is a tunnel that came up")
  func start() throws {
    var followed = FollowedDevices(tunnel: InterfaceName("wg0"), log: log)
    let change = kernel.add("wg0", up: true)
    #expect(followed.start(change.record) == .cameUp(change.record.index))
    #expect(followed.byIndex[change.record.index] == Enforcer.Device(name: InterfaceName("wg0"), up: true))
    #expect(followed.anyUp)
  }

  @Test("a device that bears the name but is no tunnel is left alone and said once; other names are not its concern")
  func notATunnel() throws {
    var followed = FollowedDevices(tunnel: InterfaceName("wg0"), log: log)
    let veth = kernel.add("wg0", up: true, kind: "veth")
    #expect(followed.start(veth.record) == nil)
    let concernsDown = followed.concerns(kernel.set(veth.record.index, up: false))
    #expect(!concernsDown)
    let concernsUp = followed.concerns(kernel.set(veth.record.index, up: true))
    #expect(!concernsUp)
    #expect(log.lines.filter { $0.contains("not a tunnel") }.count == 1)
    let concernsOtherName = followed.concerns(kernel.add("eth1", up: true))
    #expect(!concernsOtherName)
    #expect(followed.byIndex.isEmpty)
  }

  @Test("renamed, the device is still followed, and the rename said; down and up again are transitions")
  func renamed() throws {
    var followed = FollowedDevices(tunnel: InterfaceName("wg0"), log: log)
    let index = kernel.add("wg0", up: true).record.index
    _ = followed.start(try #require(kernel.record(index)))
    let rename = kernel.rename(index, to: "wg9")
    let concernsRename = followed.concerns(rename)
    #expect(concernsRename)
    let (transition, wasRenamed) = followed.apply(rename)
    #expect(transition == nil && wasRenamed)
    #expect(log.contains("wg0 was renamed wg9: still enforcing on it"))
    let down = kernel.set(index, up: false)
    let concernsDown = followed.concerns(down)
    #expect(concernsDown)
    #expect(followed.apply(down).transition == .wentDown(gone: false, wasUp: true))
    #expect(followed.apply(kernel.set(index, up: true)).transition == .cameUp(index))
  }

  @Test("deleted: gone; moved to another namespace: escaped, by the name it bore")
  func goneOrEscaped() throws {
    var followed = FollowedDevices(tunnel: InterfaceName("wg0"), log: log)
    let first = kernel.add("wg0", up: true).record.index
    _ = followed.start(try #require(kernel.record(first)))
    #expect(followed.apply(kernel.delete(first)).transition == .wentDown(gone: true, wasUp: true))
    #expect(followed.byIndex.isEmpty)
    let second = kernel.add("wg0", up: true)
    let concernsNewDevice = followed.concerns(second)
    #expect(concernsNewDevice)
    #expect(followed.apply(second).transition == .cameUp(second.record.index))
    let moved = kernel.delete(second.record.index, movedTo: 7)
    #expect(followed.apply(moved).transition == .escaped(InterfaceName("wg0"), namespace: 7))
  }

  @Test("after lost notifications the kernel's view is taken: a device up unseen came up; all gone went down")
  func resynchronise() throws {
    var followed = FollowedDevices(tunnel: InterfaceName("wg0"), log: log)
    let links = FakeLinks(kernel: kernel)
    let index = kernel.add("wg0", up: false).record.index
    _ = followed.start(try #require(kernel.record(index)))
    _ = kernel.set(index, up: true)
    #expect(try followed.resynchronise(links) == .cameUp(index))
    #expect(try followed.resynchronise(links) == nil)
    _ = kernel.delete(index)
    #expect(try followed.resynchronise(links) == .wentDown(gone: true, wasUp: true))
    #expect(followed.byIndex.isEmpty)
  }
}

/// One device taken down, alone (`Takedown`): the fake kernel, a scripted action, a manual clock.
struct TakedownTests {
  let kernel = FakeKernel()
  let clock = ManualTimeSource()
  let log = CapturedLog()

  func takedown(_ action: any DisconnectAction) -> Takedown {
    Takedown(action: action, links: FakeLinks(kernel: kernel), clock: clock, log: log)
  }

  func device(_ index: Int32) -> Enforcer.Device {
    Enforcer.Device(name: kernel.record(index)?.name ?? InterfaceName("wg0"), up: true)
  }

  /// The cut, then the rest, as the enforcer does for one device.
  func takeDown(_ takedown: inout Takedown, _ index: Int32, reason: StopReason, details: inout [String])
    -> Takedown.Outcome
  {
    var managers = ManagerTable(action: takedown.action, exits: NoProcessExits())
    let refused = takedown.cut(index)
    return takedown.finish(
      index, device(index), refused: refused, reason: reason, managers: &managers, details: &details)
  }

  @Test("an action that takes the link down: the link cut first, then its control, nothing to add")
  func actionWorks() throws {
    let action = ScriptedAction(kernel, .takesDown)
    var takedown = takedown(action)
    let index = kernel.add("wg0", up: true).record.index
    var details: [String] = []
    guard case .down(let control?) = takeDown(&takedown, index, reason: .freeLimit, details: &details)
    else { throw TestSetupError("not down through the control") }
    #expect(control.label == "scripted")
    // The cut, then the action's own link-down.
    #expect(action.calls == 1 && kernel.setDownCalls == 2)
    #expect(!kernel.isUp(index) && details.isEmpty && !takedown.actionFailed)
  }

  @Test(
    "the cut is one request and asks no one: the action's control is looked up and run only once the kernel took the link down"
  )
  func cutAsksNoOne() throws {
    let action = ScriptedAction(kernel, .doesNothing)
    let takedown = takedown(action)
    let index = kernel.add("wg0", up: true).record.index
    #expect(takedown.cut(index) == nil)
    #expect(!kernel.isUp(index) && kernel.setDownCalls == 1)
    #expect(action.lookups == 0 && action.calls == 0)
  }

  @Test(
    "an action that fails after the cut: the link is down all the same, the failure said and kept; in the pause it is not run again, at a deadline it is"
  )
  func actionFails() throws {
    let action = ScriptedAction(kernel, .fails)
    var takedown = takedown(action)
    let index = kernel.add("wg0", up: true).record.index
    var details: [String] = []
    guard case .down(nil) = takeDown(&takedown, index, reason: .freeLimit, details: &details) else {
      throw TestSetupError("not down by link-down")
    }
    #expect(!kernel.isUp(index))
    #expect(details == ["down by link-down; scripted failed (exit 3)"])
    #expect(log.contains("wg0 is down (link-down, confirmed by the kernel), but scripted failed (exit 3)"))
    #expect(takedown.actionFailed)
    _ = kernel.set(index, up: true)
    let waited = clock.now().monotonic
    var again: [String] = []
    _ = takeDown(&takedown, index, reason: .pause, details: &again)
    #expect(action.calls == 1, "the failed action was run again in the pause")
    #expect(clock.now().monotonic - waited < 100_000_000)
    #expect(!kernel.isUp(index) && again.isEmpty)
    _ = kernel.set(index, up: true)
    _ = takeDown(&takedown, index, reason: .freeLimit, details: &again)
    #expect(action.calls == 2)
  }

  @Test("link-down refused: the action's control is the way left, and what it says is not believed without the kernel")
  func cutRefused() throws {
    let index = kernel.add("wg0", up: true).record.index
    kernel.refuseSetDown = true
    var takedown = takedown(ScriptedAction(kernel, .doesNothing))
    var details: [String] = []
    guard case .stillUp = takeDown(&takedown, index, reason: .freeLimit, details: &details) else {
      throw TestSetupError("taken for down on the action's word")
    }
    #expect(details.first?.hasSuffix("scripted left wg0 up, which failed too") == true, "\(details)")
  }

  @Test("the action fails and link-down is refused too: still up, and the details say both failed")
  func nothingWorks() throws {
    var takedown = takedown(ScriptedAction(kernel, .fails))
    let index = kernel.add("wg0", up: true).record.index
    kernel.refuseSetDown = true
    var details: [String] = []
    guard case .stillUp = takeDown(&takedown, index, reason: .freeLimit, details: &details) else {
      throw TestSetupError("not still up")
    }
    #expect(details.count == 1 && details[0].hasPrefix("link-down: "), "\(details)")
    #expect(details.first?.hasSuffix("; scripted failed (exit 3), which failed too") == true, "\(details)")
  }

  @Test("a device already gone is not acted on")
  func vanished() throws {
    let action = ScriptedAction(kernel, .takesDown)
    var takedown = takedown(action)
    var details: [String] = []
    guard case .vanished = takeDown(&takedown, 42, reason: .freeLimit, details: &details) else {
      throw TestSetupError("not vanished")
    }
    #expect(action.calls == 0 && details.isEmpty)
  }

  @Test("a manager's stop after the cut: said as such, and its own word asked once the kernel says down")
  func managerWord() throws {
    let manager = Stubborn(kernel: kernel)
    var takedown = takedown(manager)
    let index = kernel.add("wg0", up: true).record.index
    var details: [String] = []
    guard case .down(_?) = takeDown(&takedown, index, reason: .freeLimit, details: &details) else {
      throw TestSetupError("not down through the manager")
    }
    #expect(
      details == [
        "stopped through stubborn", "stubborn: wg0 is down, but its manager does not say it stopped",
      ])
    #expect(manager.asked.value > 0)
    #expect(log.contains("wg0: down at once (link-down, confirmed by the kernel), then stopped through stubborn"))
  }

  /// A manager that takes the link down and goes on saying the tunnel runs.
  struct Stubborn: DisconnectAction, TunnelControl {
    final class Count: @unchecked Sendable { var value = 0 }
    let kernel: FakeKernel
    let asked = Count()
    var label: String { "stubborn" }
    var manager: TunnelManager? {
      TunnelManager(kind: .networkManager, id: "u", foundBy: .nothing, evidence: "test")
    }
    func control(for link: LinkRecord) -> any TunnelControl { self }
    func stop(_ tunnel: InterfaceName, reason: StopReason) -> DisconnectOutcome {
      if let index = kernel.index(of: tunnel.escaped) { try? kernel.setDown(index) }
      return .done
    }
    func isStopped(_ tunnel: InterfaceName, deviceGone: Bool) -> Bool? {
      asked.value += 1
      return false
    }
  }
}
