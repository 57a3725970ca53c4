/// That an enforcer holds a tunnel: which process, since when, disconnecting how — what
/// `vpnstat session` shows, so that nobody reads "disconnect pending" when nothing will
/// disconnect. The enforcer writes it beside the database when it starts and removes it when it
/// stops; a reader believes it only while that process (same pid, same start time) lives.
/// It also carries what the enforcer holds of the tunnel's manager for the pause (a
/// NetworkManager connection's autoconnect), so a successor can give it back after a crash.
public struct EnforcerPresence: Hashable, Sendable {
  public var pid: Int32
  /// The process's start time (clock ticks after boot): a reused pid is not the enforcer.
  public var startTime: UInt64?
  public var since: Timestamp
  /// The disconnect action, as `--action` names it (`auto`, `link-down`, …) or `exec PROGRAM`.
  public var action: String
  public var tunnel: InterfaceName
  /// What it holds for the pause, to be given back when the pause ends.
  public var holds: [ManagerHold]
  /// The lengths it opens windows with (`--session-length`, `--pause-length`): the next
  /// window's, whatever a reader's own options say. Nil from an enforcer older than this field.
  public var lengths: SessionLengths?
  /// Where its wg-quick stops look for the tunnel's configuration, first first; empty when its
  /// action never runs wg-quick (or from an enforcer older than this field).
  public var wgQuickDirectories: [String]

  public init(
    pid: Int32, startTime: UInt64?, since: Timestamp, action: String, tunnel: InterfaceName, holds: [ManagerHold] = [],
    lengths: SessionLengths? = nil, wgQuickDirectories: [String] = []
  ) {
    self.pid = pid
    self.startTime = startTime
    self.since = since
    self.action = action
    self.tunnel = tunnel
    self.holds = holds
    self.lengths = lengths
    self.wgQuickDirectories = wgQuickDirectories
  }

  /// The file's text: one `key=value` a line (values never hold a line break: the interface in
  /// its escaped form, the action made safe).
  public var text: String {
    var lines = [
      "pid=\(pid)", "start_time=\(startTime.map(String.init) ?? "")", "since=\(since.rfc3339(fractionDigits: 3))",
      "action=\(Self.oneLine(action))", "interface=\(tunnel.escaped)",
    ]
    if let lengths {
      lines += ["session_length_ns=\(lengths.session.nanoseconds)", "pause_length_ns=\(lengths.pause.nanoseconds)"]
    }
    lines += wgQuickDirectories.map { "wg_quick_dir=\(Self.oneLine($0))" }
    lines += holds.map { "hold=\($0.text)" }
    return lines.joined(separator: "\n") + "\n"
  }

  /// Reads the file's text back; nil when it is not one (damaged, or written by something else).
  public init?(parsing text: String) {
    var values: [String: String] = [:]
    var holds: [ManagerHold] = []
    var directories: [String] = []
    for line in text.split(separator: "\n") {
      guard let equals = line.firstIndex(of: "=") else { return nil }
      let key = String(line[..<equals])
      let value = String(line[line.index(after: equals)...])
      if key == "hold" {
        guard let hold = ManagerHold(parsing: value) else { return nil }
        holds.append(hold)
      } else if key == "wg_quick_dir" {
        directories.append(value)
      } else {
        values[key] = value
      }
    }
    guard let pidText = values["pid"], let pid = Int32(pidText), pid > 0, let sinceText = values["since"],
      let since = Timestamp(rfc3339: sinceText).flatMap({ Timestamp(stored: $0.nanoseconds) }),
      let action = values["action"], let name = values["interface"],
      !name.isEmpty
    else { return nil }
    // Lengths that are not stored lengths (`SessionLengths.storable`) are no lengths: readers
    // show their own.
    var lengths: SessionLengths?
    if let session = values["session_length_ns"].flatMap({ Int64($0) }),
      let pause = values["pause_length_ns"].flatMap({ Int64($0) })
    {
      lengths = SessionLengths(storedSession: session, pause: pause)
    }
    self.init(
      pid: pid, startTime: values["start_time"].flatMap { UInt64($0) }, since: since, action: action,
      tunnel: InterfaceName(parsingEscaped: name), holds: holds, lengths: lengths, wgQuickDirectories: directories)
  }

  static func oneLine(_ text: String) -> String {
    String(text.map { $0.isNewline ? " " : $0 })
  }
}

/// Something the enforcer changed in a tunnel's manager for the pause, and what to give back:
/// NetworkManager's `connection.autoconnect`, held off so NetworkManager cannot bring the
/// connection back by itself, and restored to the user's value when the pause ends.
public struct ManagerHold: Hashable, Sendable {
  public var kind: TunnelManager.Kind
  /// The manager's id for the connection (NetworkManager: its UUID).
  public var id: String
  /// The setting held (`connection.autoconnect`) and the user's value, to restore.
  public var setting: String
  public var restore: String

  public init(kind: TunnelManager.Kind, id: String, setting: String, restore: String) {
    self.kind = kind
    self.id = id
    self.setting = setting
    self.restore = restore
  }

  /// `networkmanager UUID connection.autoconnect yes`.
  var text: String { [kind.rawValue, id, setting, restore].map(EnforcerPresence.oneLine).joined(separator: " ") }

  init?(parsing text: String) {
    let words = text.split(separator: " ").map(String.init)
    guard words.count == 4, let kind = TunnelManager.Kind(rawValue: words[0]) else { return nil }
    self.init(kind: kind, id: words[1], setting: words[2], restore: words[3])
  }
}
