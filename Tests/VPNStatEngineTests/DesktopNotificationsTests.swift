import Foundation
import Testing

@testable import VPNStatDesktop
@testable import VPNStatEngine
@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// A notification server on a bus the test plays: it records every call and answers as told.
final class FakeNotificationBus: BusMethodCalling {
  var calls: [BusMethodCall] = []
  var capabilities = ["body", "body-markup", "actions"]
  var nextID: UInt32 = 7
  /// Set to make the next calls fail so.
  var failure: DesktopBusConnection.Failure?
  /// Set to answer every call with these values instead.
  var answer: [BusValue]?

  func call(_ call: BusMethodCall) throws(DesktopBusConnection.Failure) -> [BusValue] {
    calls.append(call)
    if let failure { throw failure }
    if let answer { return answer }
    switch call.member {
    case "GetServerInformation": return [.string("fake"), .string("tests"), .string("1.0"), .string("1.2")]
    case "GetCapabilities": return [.strings(capabilities)]
    case "Notify":
      guard case .uint32(let replaces) = call.arguments[1] else { return [] }
      if replaces != 0 { return [.uint32(replaces)] }
      nextID += 1
      return [.uint32(nextID)]
    default: return []
    }
  }
}

/// The freedesktop notifications over the bus: what `Notify` carries for each notification
/// (the specification's argument order, hints, timeouts, text as the server must get it), and
/// how the bus's and the server's failures become `NotificationFailure`s.
struct DesktopNotificationsTests {
  @Test("connecting asks the server who it is and what it can do")
  func serverInformation() throws {
    let bus = FakeNotificationBus()
    let notifications = try FreedesktopNotifications(bus: bus)
    #expect(bus.calls.map(\.member) == ["GetServerInformation", "GetCapabilities"])
    #expect(bus.calls.allSatisfy { $0.destination == "org.freedesktop.Notifications" })
    #expect(bus.calls.allSatisfy { $0.path == "/org/freedesktop/Notifications" })
    #expect(bus.calls.allSatisfy { $0.interface == "org.freedesktop.Notifications" })
    #expect(notifications.server.description == "fake 1.0 by tests")
    #expect(notifications.server.readsMarkup)
  }

  @Test("Notify carries app name, replaced id, summary, body, urgency, category, desktop entry and timeout")
  func notifyArguments() throws {
    let bus = FakeNotificationBus()
    let notifications = try FreedesktopNotifications(bus: bus)
    let first = try notifications.notify(
      DesktopNotification(
        summary: "Session ends in 5 minutes", body: "wg0 disconnects at 14:32.", urgency: .critical,
        category: .networkDisconnected, expiry: .after(.seconds(60))))
    #expect(first == DesktopNotification.ID(8))
    #expect(
      bus.calls.last?.arguments == [
        .string("vpnstat"), .uint32(0), .string(""), .string("Session ends in 5 minutes"),
        .string("wg0 disconnects at 14:32."), .strings([]),
        .dictionary([
          ("urgency", .byte(2)), ("category", .string("network.disconnected")), ("desktop-entry", .string("vpnstat")),
        ]),
        .int32(60_000),
      ])
    let second = try notifications.notify(DesktopNotification(summary: "Stopped", urgency: .low, replaces: first))
    #expect(second == first)
    #expect(bus.calls.last?.arguments[1] == .uint32(8))
    #expect(
      bus.calls.last?.arguments[6]
        == .dictionary([
          ("urgency", .byte(0)), ("category", .string("network")), ("desktop-entry", .string("vpnstat")),
        ]))
    #expect(bus.calls.last?.arguments[7] == .int32(-1))
    _ = try notifications.notify(DesktopNotification(summary: "Paused", expiry: .never))
    #expect(bus.calls.last?.arguments[7] == .int32(0))
    _ = try notifications.notify(DesktopNotification(summary: "Soon", expiry: .after(.microseconds(1))))
    #expect(bus.calls.last?.arguments[7] == .int32(1))
    try notifications.close(first)
    #expect(bus.calls.last?.member == "CloseNotification")
    #expect(bus.calls.last?.arguments == [.uint32(8)])
  }

  @Test("text reaches the server as written: markup characters escaped where it reads markup, controls escaped")
  func text() throws {
    let bus = FakeNotificationBus()
    let notifications = try FreedesktopNotifications(bus: bus)
    _ = try notifications.notify(
      DesktopNotification(summary: "tun<0> & \u{1B}[2J\nwg", body: "a <b>x</b> & y\nline\u{0}two"))
    #expect(bus.calls.last?.arguments[3] == .string("tun<0> & \\x1b[2J wg"))
    #expect(bus.calls.last?.arguments[4] == .string("a &lt;b&gt;x&lt;/b&gt; &amp; y\nline\\x00two"))
    bus.capabilities = ["body"]
    let plain = try FreedesktopNotifications(bus: bus)
    _ = try plain.notify(DesktopNotification(summary: "s", body: "a <b> & c"))
    #expect(bus.calls.last?.arguments[4] == .string("a <b> & c"))
  }

  @Test("no notification server, an error from it, an answer of the wrong shape, a failing bus: each its failure")
  func failures() throws {
    let bus = FakeNotificationBus()
    bus.failure = .error(
      BusErrorReply(
        name: BusErrorReply.serviceUnknown,
        message: "The name org.freedesktop.Notifications was not provided by any .service files"))
    #expect(
      throws: NotificationFailure.noServer(
        "The name org.freedesktop.Notifications was not provided by any .service files")
    ) { try FreedesktopNotifications(bus: bus) }
    bus.failure = nil
    let notifications = try FreedesktopNotifications(bus: bus)
    bus.failure = .error(BusErrorReply(name: "org.example.Error.Full", message: "too many"))
    #expect(throws: NotificationFailure.refused(BusErrorReply(name: "org.example.Error.Full", message: "too many"))) {
      try notifications.notify(DesktopNotification(summary: "x"))
    }
    bus.failure = .timedOut(.seconds(25))
    #expect(throws: NotificationFailure.bus(.timedOut(.seconds(25)))) {
      try notifications.notify(DesktopNotification(summary: "x"))
    }
    bus.failure = nil
    bus.answer = [.string("42")]
    #expect(throws: NotificationFailure.unexpectedAnswer(method: "Notify", signature: "s")) {
      try notifications.notify(DesktopNotification(summary: "x"))
    }
    #expect(throws: NotificationFailure.unexpectedAnswer(method: "GetServerInformation", signature: "s")) {
      try FreedesktopNotifications(bus: bus)
    }
    bus.answer = nil
    bus.capabilities = []
    let none = try FreedesktopNotifications(bus: bus)
    #expect(!none.server.readsMarkup)
  }

  @Test("no session bus in the environment: the error names what is missing and where notify runs")
  func noDesktopBus() throws {
    let directory = try TemporaryDirectory("nobus")
    #expect(
      throws: NotificationFailure.noDesktopBus(.notSet(fallback: "\(directory.path)/bus does not exist"))
    ) { try FreedesktopNotifications.connect(environment: ["XDG_RUNTIME_DIR": directory.path]) }
    let message = NotificationFailure.noDesktopBus(.notSet(fallback: "XDG_RUNTIME_DIR is not set")).description
    #expect(
      message
        == "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and XDG_RUNTIME_DIR/bus does not exist (XDG_RUNTIME_DIR is not set); vpnstat notify runs in a desktop session"
    )
    #expect(
      throws: NotificationFailure.busUnreachable(address: "unix:path=\(directory.path)/none", .system(.noSuchFile))
    ) {
      try FreedesktopNotifications.connect(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(directory.path)/none"]
      )
    }
  }
}
