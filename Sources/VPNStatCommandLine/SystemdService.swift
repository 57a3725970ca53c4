import VPNStatEngine
import VPNStatModel
import VPNStatRender
import VPNStatSystem

extension CommandContext {
  /// Where a long-running command's lines go: the journal, natively and with each event's
  /// fields, when systemd connected stderr to it (`JOURNAL_STREAM`); stderr otherwise, and for a
  /// line the journal would not take.
  func eventLog() -> any EventLog {
    let plain = StandardErrorLog(context: self)
    guard JournalEntry.isJournalStream(standardError, journalStream: environment("JOURNAL_STREAM")),
      let socket = try? ServiceManagerSocket(to: .path(JournalLog.socketPath))
    else { return plain }
    return JournalLog(socket: socket, fallback: plain)
  }

  /// The service manager that started this process, when there is one (`NOTIFY_SOCKET`).
  func supervisor() -> any ServiceSupervisor {
    guard let value = environment("NOTIFY_SOCKET"), let name = ServiceManagerSocket.name(notifySocket: value),
      let socket = try? ServiceManagerSocket(to: name)
    else { return Unsupervised() }
    // The watchdog is this process's only when systemd names it (or names no process).
    var interval: Duration?
    if let text = environment("WATCHDOG_USEC"), let usec = Int64(text), usec > 0,
      environment("WATCHDOG_PID").map({ Int32($0) == CurrentProcess.id }) ?? true
    {
      interval = .microseconds(usec)
    }
    return SystemdSupervisor(socket: socket, watchdogInterval: interval, log: StandardErrorLog(context: self))
  }
}

/// The engine's lines as journal entries (systemd-journald.socket(8)'s native protocol): the
/// line as `MESSAGE`, and for an event an administrator looks for its `MESSAGE_ID` (the catalog
/// explains it: `journalctl -x`), `PRIORITY` and `VPNSTAT_*` fields.
struct JournalLog: EventLog {
  static let socketPath: SystemPath = "/run/systemd/journal/socket"
  let socket: ServiceManagerSocket
  let fallback: StandardErrorLog

  func event(_ entry: LoggedEvent) {
    do {
      try socket.send(JournalEntry.encode(Self.fields(entry)))
    } catch {
      fallback.event(entry)
    }
  }

  static func fields(_ entry: LoggedEvent) -> [(name: String, value: String)] {
    var fields: [(name: String, value: String)] = [
      ("MESSAGE", TerminalText.sanitize(entry.text)), ("PRIORITY", String(entry.kind?.priority ?? 6)),
      ("SYSLOG_IDENTIFIER", "vpnstat"),
    ]
    if let kind = entry.kind {
      fields.append(("MESSAGE_ID", kind.messageID))
      fields.append(("VPNSTAT_EVENT", kind.journalName))
    }
    if let interface = entry.interface { fields.append(("VPNSTAT_INTERFACE", interface.terminalText)) }
    if let reason = entry.reason { fields.append(("VPNSTAT_REASON", reason)) }
    if let until = entry.until { fields.append(("VPNSTAT_UNTIL", until.rfc3339)) }
    return fields
  }
}

/// sd_notify(3)'s datagrams: `READY=1`, `WATCHDOG=1`, `STATUS=…`, `STOPPING=1`. A datagram
/// systemd would not take is said once on stderr; the work goes on.
final class SystemdSupervisor: ServiceSupervisor, @unchecked Sendable {
  let socket: ServiceManagerSocket
  let watchdogInterval: Duration?
  let log: StandardErrorLog
  private var failed = false

  init(socket: ServiceManagerSocket, watchdogInterval: Duration?, log: StandardErrorLog) {
    self.socket = socket
    self.watchdogInterval = watchdogInterval
    self.log = log
  }

  func ready(status: String) { send("READY=1\nSTATUS=\(Self.line(status))") }
  func status(_ text: String) { send("STATUS=\(Self.line(text))") }
  func alive() { send("WATCHDOG=1") }
  func stopping() { send("STOPPING=1") }

  /// A status is one line: the datagram's fields are separated by newlines.
  static func line(_ text: String) -> String {
    String(TerminalText.sanitize(text).map { $0 == "\n" ? " " : $0 })
  }

  private func send(_ message: String) {
    do {
      try socket.send(Array(message.utf8))
      failed = false
    } catch {
      if !failed { log.event("cannot tell systemd '\(message.prefix(40))': \(error)") }
      failed = true
    }
  }
}
