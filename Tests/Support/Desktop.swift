import Foundation

/// A desktop session of the test's own: a private `dbus-daemon --session` and, when asked for,
/// an X server (`Xvfb`) with a real notification server on it (`dunst`). Nothing of it touches
/// the host: it runs in new PID, mount and network namespaces (`unshare`) whose `/tmp` is the
/// test's directory, so the X socket, the compiled keymaps and the display number are its own,
/// and the bus has no service files (nothing on the machine is started on demand). When the
/// value goes away, or the test process dies, the namespace's first process is killed and the
/// kernel kills everything else in it.
final class PrivateDesktop: @unchecked Sendable {
  /// How dunst shows notifications: `history` writes each one's urgency and application into
  /// its text (`critical|vpnstat|summary|body`), which `dunstctl history` then shows — dunst
  /// 1.9's history has no urgency of its own; `person` looks like a desktop does.
  enum Look {
    case history
    case person
  }

  let directory: TemporaryDirectory
  /// The namespace's `/tmp`, as the host sees it.
  let root: String
  private let session: BackgroundProcess
  let hasNotificationServer: Bool

  /// The environment of a program on the host that uses this session's bus.
  var environment: [String: String] {
    ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(root)/bus", "HOME": root + "/home", "XDG_RUNTIME_DIR": root + "/run"]
  }

  init(_ label: String, notificationServer: Bool, look: Look = .history) throws {
    for program in ["/usr/bin/dbus-daemon", "/usr/bin/unshare", "/usr/bin/setpriv", "/usr/bin/nsenter"] {
      try Tool.require(program)
    }
    if notificationServer {
      for program in ["/usr/bin/Xvfb", "/usr/bin/dunst", "/usr/bin/dunstctl"] { try Tool.require(program) }
    }
    hasNotificationServer = notificationServer
    directory = try TemporaryDirectory("desktop-\(label)")
    root = directory.file("tmp")
    for sub in ["", "/home", "/run"] {
      try FileManager.default.createDirectory(atPath: root + sub, withIntermediateDirectories: true)
    }
    chmod(root, 0o1777)
    chmod(root + "/run", 0o700)
    try Self.busConfiguration.write(toFile: root + "/session.conf", atomically: true, encoding: .utf8)
    try Self.dunstConfiguration(look).write(toFile: root + "/dunstrc", atomically: true, encoding: .utf8)
    var script = """
      set -eu
      mount --bind '\(root)' /tmp
      [ -d /var/lib/xkb ] && mount -t tmpfs tmpfs /var/lib/xkb
      export HOME=/tmp/home XDG_RUNTIME_DIR=/tmp/run DBUS_SESSION_BUS_ADDRESS=unix:path=/tmp/bus
      dbus-daemon --config-file=/tmp/session.conf --fork --print-address=1 --print-pid=1 > /tmp/bus.printed

      """
    if notificationServer {
      script += """
        Xvfb :1 -nolisten tcp -nolock -wr -screen 0 \(Self.screen)x24 > /tmp/xvfb.log 2>&1 &
        while [ ! -e /tmp/.X11-unix/X1 ]; do sleep 0.02; done
        DISPLAY=:1 dunst -config /tmp/dunstrc > /tmp/dunst.log 2>&1 &
        until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
          org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2>/dev/null | grep -q true; do
          sleep 0.02
        done

        """
    }
    script += "echo ready\nexec sleep infinity\n"
    try script.write(toFile: root + "/session.sh", atomically: true, encoding: .utf8)
    session = try BackgroundProcess(
      "/usr/bin/setpriv",
      [
        "--pdeathsig", "KILL", "--", "/usr/bin/unshare", "--pid", "--fork", "--kill-child", "--mount", "--net",
        "--propagation", "private", "--", "/bin/sh", root + "/session.sh",
      ])
    do {
      try session.waitFor("ready", timeout: 30)
    } catch {
      let logs = ["bus.printed", "xvfb.log", "dunst.log"].map {
        "\($0): " + ((try? String(contentsOfFile: root + "/" + $0, encoding: .utf8)) ?? "")
      }
      session.stop(SIGKILL)
      throw TestSetupError("the private desktop did not start: \(error); \(logs.joined(separator: "; "))")
    }
  }

  static let screen = "640x160"

  /// A session bus with no service directories: a name nobody owns stays unowned, so "no
  /// notification server" is what it says, never a server the machine has installed.
  static let busConfiguration = """
    <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
    <busconfig>
      <type>session</type>
      <listen>unix:path=/tmp/bus</listen>
      <auth>EXTERNAL</auth>
      <policy context="default">
        <allow send_destination="*" eavesdrop="true"/>
        <allow eavesdrop="true"/>
        <allow own="*"/>
      </policy>
    </busconfig>

    """

  static func dunstConfiguration(_ look: Look) -> String {
    var text = """
      [global]
          font = DejaVu Sans 11
          width = 420
          origin = top-right
          offset = 16x16
          padding = 10
          horizontal_padding = 12
          frame_width = 2
          corner_radius = 6
          icon_position = off
          idle_threshold = 0

      """
    switch look {
    case .history:
      for urgency in ["low", "normal", "critical"] {
        text += "[urgency_\(urgency)]\n    format = \"\(urgency)|%a|%s|%b\"\n"
      }
    case .person:
      text += """
        [urgency_critical]
            background = "#8f1d1d"
            foreground = "#ffffff"
            frame_color = "#e05252"

        """
    }
    return text
  }

  /// Runs a program on the host against this session's bus (`dunstctl`, `gdbus`, `dbus-monitor`).
  func run(_ executable: String, _ arguments: [String], timeout: TimeInterval = 20) throws -> CommandResult {
    try VPNStatTestSupport.run(executable, arguments, environment: environment, timeout: timeout)
  }

  /// Starts a program on the host against this session's bus.
  func start(_ executable: String, _ arguments: [String]) throws -> BackgroundProcess {
    try BackgroundProcess(executable, arguments, environment: environment)
  }

  /// Runs a program inside the session's namespaces, on its display (`import` for a picture).
  func runInside(_ executable: String, _ arguments: [String], timeout: TimeInterval = 20) throws -> CommandResult {
    try VPNStatTestSupport.run(
      "/usr/bin/nsenter",
      [
        "--target", "\(session.pid)", "--mount", "--net", "--", "/usr/bin/env", "DISPLAY=:1", "HOME=/tmp/home",
        "DBUS_SESSION_BUS_ADDRESS=unix:path=/tmp/bus", executable,
      ] + arguments, timeout: timeout)
  }

  /// `dunstctl count displayed`.
  func displayed() throws -> Int {
    let result = try run("/usr/bin/dunstctl", ["count", "displayed"])
    guard result.status == 0, let count = Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) else {
      throw TestSetupError("dunstctl count displayed: \(result.errors)")
    }
    return count
  }

  /// Waits until dunst shows `count` notifications (it queues what a call gave it, then shows).
  func waitUntilDisplayed(_ count: Int, timeout: TimeInterval = 10) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while try displayed() != count {
      if Date() > deadline { throw TestSetupError("dunst shows \(try displayed()) notifications, not \(count)") }
      usleep(10_000)
    }
  }

  /// One notification in dunst's history.
  struct HistoryEntry {
    var id: Int
    var appName: String
    var summary: String
    var body: String
    /// The text dunst formed (with `.history`: `urgency|app|summary|body`).
    var message: String
    var category: String
    /// Microseconds.
    var timeout: Int
  }

  /// `dunstctl history`: the notifications closed so far, newest first.
  func history() throws -> [HistoryEntry] {
    let result = try run("/usr/bin/dunstctl", ["history"])
    guard result.status == 0, let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any],
      let groups = json["data"] as? [[[String: Any]]]
    else { throw TestSetupError("dunstctl history: \(result.output) \(result.errors)") }
    func field(_ entry: [String: Any], _ name: String) -> Any? { (entry[name] as? [String: Any])?["data"] }
    return (groups.first ?? []).map { entry in
      HistoryEntry(
        id: (field(entry, "id") as? NSNumber)?.intValue ?? -1, appName: field(entry, "appname") as? String ?? "",
        summary: field(entry, "summary") as? String ?? "", body: field(entry, "body") as? String ?? "",
        message: field(entry, "message") as? String ?? "", category: field(entry, "category") as? String ?? "",
        timeout: (field(entry, "timeout") as? NSNumber)?.intValue ?? -1)
    }
  }

  /// The X screen as a PNG (ImageMagick's `import`, run on the session's display).
  func screenshot(to path: String) throws {
    try Tool.require("/usr/bin/import")
    let inside = "/tmp/" + (path as NSString).lastPathComponent
    let result = try runInside("/usr/bin/import", ["-window", "root", "-depth", "8", inside])
    guard result.status == 0 else { throw TestSetupError("import: \(result.errors)") }
    if root + "/" + (path as NSString).lastPathComponent != path {
      try? FileManager.default.removeItem(atPath: path)
      try FileManager.default.copyItem(atPath: root + "/" + (path as NSString).lastPathComponent, toPath: path)
    }
  }

  /// Ends the session: its first process is killed, and with it every process in it.
  func stop() {
    session.stop(SIGKILL)
  }

  deinit { stop() }
}
