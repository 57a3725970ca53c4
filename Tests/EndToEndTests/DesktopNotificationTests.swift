import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatDesktop
@testable import VPNStatEngine
@testable import VPNStatModel
@testable import VPNStatRender
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// vpnstat's D-Bus client against the real parts: a private `dbus-daemon --session`, and dunst —
/// a real notification server — on an X server of the test's own (`PrivateDesktop`), asked what
/// it showed with `dunstctl`, photographed with ImageMagick's `import`, and compared on the wire
/// with GLib's `gdbus` through `dbus-monitor --binary`.
@Suite(.enabled(if: Privilege.isRoot, "needs root: the desktop runs in PID, mount and network namespaces of its own"))
struct DesktopNotificationTests {
  static let summary = "VPN session ends in 5 minutes"
  static let body = "wg0 disconnects at 14:32."

  @Test(
    "notifications reach dunst with summary, body, urgency, app name, category and timeout; closed, they are its history"
  )
  func reachDunst() throws {
    let desktop = try PrivateDesktop("notify", notificationServer: true)
    let notifications = try FreedesktopNotifications.connect(environment: desktop.environment)
    #expect(notifications.server.name == "dunst")
    #expect(notifications.server.capabilities.contains("body"))
    var ids: [DesktopNotification.Urgency: DesktopNotification.ID] = [:]
    for urgency in DesktopNotification.Urgency.allCases {
      ids[urgency] = try notifications.notify(
        DesktopNotification(
          summary: "\(Self.summary) (\(urgency))", body: Self.body, urgency: urgency, expiry: .after(.seconds(120))))
    }
    #expect(Set(ids.values).count == 3)
    try desktop.waitUntilDisplayed(3)
    for id in ids.values { try notifications.close(id) }
    try desktop.waitUntilDisplayed(0)
    let history = try desktop.history()
    #expect(history.count == 3)
    for (urgency, id) in ids {
      let entry = try #require(history.first { $0.id == Int(id.rawValue) }, "\(urgency) is not in dunst's history")
      let summary = "\(Self.summary) (\(urgency))"
      #expect(entry.appName == "vpnstat")
      #expect(entry.summary == summary)
      #expect(entry.body == Self.body)
      // dunst's format for each urgency (PrivateDesktop.Look.history) names the one it read.
      #expect(entry.message == "\(urgency)|vpnstat|\(summary)|\(Self.body)")
      #expect(entry.category == "network")
      #expect(entry.timeout == 120_000_000)  // microseconds
    }
  }

  @Test("a notification that replaces another takes its place: dunst shows one and keeps one, not two")
  func replaces() throws {
    let desktop = try PrivateDesktop("replace", notificationServer: true)
    let connecting = Date()
    let notifications = try FreedesktopNotifications.connect(environment: desktop.environment)
    let connected = Date().timeIntervalSince(connecting) * 1000
    let first = try notifications.notify(DesktopNotification(summary: "Session ends in 5 minutes"))
    try desktop.waitUntilDisplayed(1)
    // Fifty more, each replacing the last: one notification all along. Their round trips are
    // printed (a figure for people, not a bound).
    var times: [Double] = []
    var id = first
    for minute in 0..<50 {
      let started = Date()
      id = try notifications.notify(DesktopNotification(summary: "Session ends in \(minute) s", replaces: id))
      times.append(Date().timeIntervalSince(started) * 1000)
      #expect(id == first)
    }
    times.sort()
    let call = BusMessage(
      kind: .methodCall, serial: 9, path: FreedesktopNotifications.path, interface: FreedesktopNotifications.service,
      member: "Notify", destination: FreedesktopNotifications.service,
      body: FreedesktopNotifications.arguments(
        DesktopNotification(summary: "Session ends in 49 s", replaces: first), markup: true))
    print(
      "Notify to dunst over the session bus: connecting (authentication, Hello, server information, capabilities)"
        + " \(Int(connected)) ms; one Notify of \(try call.encoded().count) bytes: median \(times[25]) ms, slowest"
        + " \(times[49]) ms")
    try desktop.waitUntilDisplayed(1)
    // Without replaces_id they pile up: the control.
    let other = try notifications.notify(DesktopNotification(summary: "Data cap at 80%"))
    #expect(other != first)
    try desktop.waitUntilDisplayed(2)
    let closed = try desktop.run("/usr/bin/dunstctl", ["close-all"])
    #expect(closed.status == 0, "\(closed.errors)")
    try desktop.waitUntilDisplayed(0)
    let history = try desktop.history()
    #expect(history.map(\.summary).sorted() == ["Data cap at 80%", "Session ends in 49 s"])
  }

  @Test("a session bus without a notification server: the error says so, and the command line's status is 69")
  func noServer() throws {
    let desktop = try PrivateDesktop("noserver", notificationServer: false)
    do {
      _ = try FreedesktopNotifications.connect(environment: desktop.environment)
      Issue.record("connected to a bus without a notification server")
    } catch {
      #expect(
        error == .noServer("The name org.freedesktop.Notifications was not provided by any .service files"))
      let (status, message) = ExitStatus.of(error)
      #expect(status == .unavailable)
      #expect(message?.hasPrefix("no notification server on the session bus") == true, "\(message ?? "")")
    }
    // No session bus at all: 69 too, saying where notify runs.
    let directory = try TemporaryDirectory("nobus")
    do {
      _ = try FreedesktopNotifications.connect(environment: ["XDG_RUNTIME_DIR": directory.path])
      Issue.record("connected without a session bus")
    } catch {
      let (status, message) = ExitStatus.of(error)
      #expect(status == .unavailable)
      #expect(message?.hasSuffix("; vpnstat notify runs in a desktop session") == true, "\(message ?? "")")
    }
  }

  @Test("on the wire, vpnstat's Notify is gdbus's: dbus-monitor sees the same body, and every message it saw decodes")
  func sameAsGDBus() throws {
    try Tool.require("/usr/bin/gdbus")
    try Tool.require("/usr/bin/dbus-monitor")
    let desktop = try PrivateDesktop("wire", notificationServer: true)
    let connection = try DesktopBusConnection.connect(to: try DesktopBusAddress.find(environment: desktop.environment))
    let monitor = try desktop.start("/usr/bin/dbus-monitor", ["--binary"])
    defer { monitor.stop(SIGKILL) }
    // The monitor sees every message once it is one: wait until it has seen ours.
    let deadline = Date().addingTimeInterval(10)
    let getID = BusMethodCall(
      destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
      member: "GetId")
    while monitor.child.stdoutData.isEmpty {
      guard Date() < deadline else { throw TestSetupError("dbus-monitor saw nothing: \(monitor.errors)") }
      _ = try connection.call(getID)
      usleep(20_000)
    }
    let notification = DesktopNotification(
      summary: "Session ends in 5 minutes", body: Self.body, urgency: .critical, expiry: .after(.seconds(60)))
    let arguments = FreedesktopNotifications.arguments(notification, markup: true)
    let answer = try connection.call(
      BusMethodCall(
        destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
        interface: "org.freedesktop.Notifications", member: "Notify", arguments: arguments))
    #expect(answer.count == 1 && answer.first?.signature == "u")
    let gdbus = try desktop.run(
      "/usr/bin/gdbus",
      [
        "call", "--session", "--dest", "org.freedesktop.Notifications", "--object-path",
        "/org/freedesktop/Notifications", "--method", "org.freedesktop.Notifications.Notify", "'vpnstat'", "uint32 0",
        "''", "'Session ends in 5 minutes'", "'\(Self.body)'", "@as []",
        "{'urgency': <byte 2>, 'category': <'network'>, 'desktop-entry': <'vpnstat'>}", "int32 60000",
      ])
    #expect(gdbus.status == 0, "\(gdbus.errors)")
    // Both calls and both replies are in the monitor's stream once dunst's second reply is.
    var frames: [[UInt8]] = []
    while true {
      frames = []
      var stream = [UInt8](monitor.child.stdoutData)
      while let length = try BusMessage.length(of: stream), stream.count >= length {
        frames.append(Array(stream[..<length]))
        stream.removeFirst(length)
      }
      let replies = try frames.map { try BusMessage(decoding: $0) }.filter {
        $0.kind == .methodReturn && $0.body.first?.signature == "u" && $0.sender != "org.freedesktop.DBus"
      }
      if replies.count >= 2 { break }
      guard Date() < deadline.addingTimeInterval(10) else {
        throw TestSetupError("dbus-monitor did not see both replies")
      }
      usleep(20_000)
    }
    // Every message the monitor saw — the bus's own, gdbus's introspection, dunst's — decodes.
    let messages = try frames.map { try BusMessage(decoding: $0) }
    #expect(messages.count > 10)
    let notifies = zip(frames, messages).filter { $0.1.member == "Notify" && $0.1.kind == .methodCall }
    try #require(notifies.count == 2, "\(messages.map { $0.member ?? "" })")
    let (ours, theirs) = (notifies[0], notifies[1])
    #expect(ours.1.sender == connection.uniqueName)
    #expect(theirs.1.sender != connection.uniqueName)
    #expect(ours.1.body == theirs.1.body)
    #expect(ours.1.bodySignature == "susssasa{sv}i")
    var encoder = BusEncoder()
    for value in ours.1.body { try encoder.append(value) }
    let bodyLength = encoder.bytes.count
    #expect(bodyLength > 100)
    #expect(ours.0.suffix(bodyLength) == theirs.0.suffix(bodyLength))
  }

  @Test(
    "a notification as a person sees it: dunst draws it on the X screen (VPNSTAT_NOTIFICATION_PICTURE keeps the PNG)")
  func picture() throws {
    try Tool.require("/usr/bin/import")
    let desktop = try PrivateDesktop("picture", notificationServer: true, look: .person)
    let notifications = try FreedesktopNotifications.connect(environment: desktop.environment)
    // What `vpnstat notify` says at the stop (its own words, `NoticeText`): 14:32:05, then a
    // 45-minute pause.
    let stoppedAt = Timestamp(seconds: 1_799_937_125)
    _ = try notifications.notify(
      NoticeText.notification(
        .stopped(
          StopRecord(at: stoppedAt, interface: InterfaceName("wg0"), reason: .freeLimit),
          nextSessionAt: stoppedAt + .seconds(2700)), at: stoppedAt,
        options: DisplayOptions(calendar: FixedOffsetCalendar.utc)))
    try desktop.waitUntilDisplayed(1)
    // dunst maps its window and draws: wait until the screen shows the red box with text in it.
    let deadline = Date().addingTimeInterval(10)
    var box = Box()
    repeat {
      usleep(50_000)
      try desktop.screenshot(to: desktop.directory.file("screen.ppm"))
      box = try Box(desktop.directory.file("screen.ppm"))
    } while (box.red < 10_000 || box.white < 300) && Date() < deadline
    // dunst's window, red with white text, in the top right corner 16 pixels in (its frame, 2
    // pixels of a lighter red, around it); nothing but the white screen elsewhere.
    #expect(box.red > 10_000)
    #expect(box.white > 300)
    #expect(abs(box.right - (640 - 16 - 2 - 1)) <= 2 && abs(box.top - (16 + 2)) <= 2, "\(box)")
    #expect(box.right - box.left > 400, "\(box)")
    #expect(box.outside == 0, "\(box)")
    let png = desktop.directory.file("notification.png")
    try desktop.screenshot(to: png)
    if let keep = ProcessInfo.processInfo.environment["VPNSTAT_NOTIFICATION_PICTURE"], !keep.isEmpty {
      try? FileManager.default.removeItem(atPath: keep)
      try FileManager.default.copyItem(atPath: png, toPath: keep)
    }
  }

  /// A screen read from a binary PPM (P6), measured for a red notification: its red pixels,
  /// their bounding box, the white pixels within it (text), and the pixels that are not the
  /// white screen outside it (grown by a frame of 4 pixels).
  struct Box: CustomStringConvertible {
    var red = 0
    var white = 0
    var outside = 0
    var (left, right, top, bottom) = (Int.max, -1, Int.max, -1)

    init() {}

    init(_ path: String) throws {
      let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
      // "P6\n640 160\n255\n": four whitespace-separated fields, then the pixels.
      var fields: [String] = []
      var index = 0
      var field = ""
      while fields.count < 4, index < data.count {
        let byte = data[index]
        if byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D {
          if !field.isEmpty { fields.append(field) }
          field = ""
        } else {
          field.append(Character(Unicode.Scalar(byte)))
        }
        index += 1
      }
      guard fields.count == 4, fields[0] == "P6", let width = Int(fields[1]), let height = Int(fields[2]),
        fields[3] == "255", data.count - index >= width * height * 3
      else { throw TestSetupError("not an 8-bit P6 picture: \(fields)") }
      let start = index
      func pixel(_ x: Int, _ y: Int) -> (Int, Int, Int) {
        let at = start + (y * width + x) * 3
        return (Int(data[at]), Int(data[at + 1]), Int(data[at + 2]))
      }
      for y in 0..<height {
        for x in 0..<width {
          let (r, g, b) = pixel(x, y)
          guard r > 110, g < 70, b < 70 else { continue }
          red += 1
          (left, right, top, bottom) = (min(left, x), max(right, x), min(top, y), max(bottom, y))
        }
      }
      guard right >= 0 else { return }
      for y in 0..<height {
        for x in 0..<width {
          let (r, g, b) = pixel(x, y)
          let isWhite = r > 200 && g > 200 && b > 200
          if (left...right).contains(x) && (top...bottom).contains(y) {
            if isWhite { white += 1 }
          } else if !((left - 4)...(right + 4)).contains(x) || !((top - 4)...(bottom + 4)).contains(y), !isWhite {
            outside += 1
          }
        }
      }
    }

    var description: String {
      "red \(red), white within \(white), box x \(left)...\(right) y \(top)...\(bottom), other pixels outside \(outside)"
    }
  }
}
