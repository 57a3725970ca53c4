import VPNStatModel
import VPNStatSystem

/// Where vpnstat's notices reach the person at the desktop: the seam `vpnstat notify` uses, so
/// a test can record what it would show. The real one is `FreedesktopNotifications`.
package protocol DesktopNotifications: AnyObject {
  /// Shows `notification` — in the place of the one it replaces, when that is still shown —
  /// and returns the id the server gave it (the one to replace or close later).
  func notify(_ notification: DesktopNotification) throws(NotificationFailure) -> DesktopNotification.ID
  /// Takes a notification off the screen; one already gone is no error.
  func close(_ id: DesktopNotification.ID) throws(NotificationFailure)
}

/// The seam between the notifications and the session bus: one method call, its reply's body.
package protocol BusMethodCalling: AnyObject {
  func call(_ call: BusMethodCall) throws(DesktopBusConnection.Failure) -> [BusValue]
}

extension DesktopBusConnection: BusMethodCalling {}

/// The notification server that answered, as it describes itself: what a message names.
package struct NotificationServer: Hashable, Sendable, CustomStringConvertible {
  package var name: String
  package var vendor: String
  package var version: String
  /// The version of the notification specification it follows.
  package var specificationVersion: String
  /// What it can do (`body`, `body-markup`, `actions`, `persistence`, …).
  package var capabilities: [String]

  package init(name: String, vendor: String, version: String, specificationVersion: String, capabilities: [String]) {
    self.name = name
    self.vendor = vendor
    self.version = version
    self.specificationVersion = specificationVersion
    self.capabilities = capabilities
  }

  /// True when it reads a body as markup (so `<`, `>` and `&` must be escaped to show as
  /// themselves).
  package var readsMarkup: Bool { capabilities.contains("body-markup") }

  /// `dunst 1.9.0 (2022-06-27) by knopwob`: text from another program, made safe to print.
  package var description: String {
    TerminalText.sanitize("\(name) \(version) by \(vendor)")
  }
}

/// Why a notice could not reach the desktop. Every case means something needed is not there
/// (the command line's 69).
package enum NotificationFailure: Error, Hashable, Sendable, CustomStringConvertible {
  /// No session bus in this process's environment: it does not run in a desktop session.
  case noDesktopBus(DesktopBusUnavailable)
  /// The session bus could not be reached or would not take this connection.
  case busUnreachable(address: String, DesktopBusConnection.Failure)
  /// Nothing on the bus owns `org.freedesktop.Notifications`, and the bus could not start
  /// anything that does (the bus's words).
  case noServer(String)
  /// The server answered a call with an error.
  case refused(BusErrorReply)
  /// The server answered a call with values the specification does not give it.
  case unexpectedAnswer(method: String, signature: String)
  /// The connection failed during a call (timed out, closed, broke the protocol).
  case bus(DesktopBusConnection.Failure)

  package var description: String {
    switch self {
    case .noDesktopBus(let reason): "\(reason); vpnstat notify runs in a desktop session"
    case .busUnreachable(let address, let failure):
      "cannot use the session bus at \(TerminalText.sanitize(address)): \(failure)"
    case .noServer(let message):
      "no notification server on the session bus (nothing owns \(FreedesktopNotifications.service)\(message.isEmpty ? "" : ": " + TerminalText.sanitize(message))); start the desktop's, or one such as dunst or mako"
    case .refused(let reply): "the notification server refused: \(reply)"
    case .unexpectedAnswer(let method, let signature):
      "the notification server answered \(method) with (\(TerminalText.sanitize(signature))), which the specification does not give it"
    case .bus(let failure): "the session bus failed: \(failure)"
    }
  }
}

/// Notifications through the freedesktop.org Desktop Notifications service on the session bus
/// (`org.freedesktop.Notifications`: dunst, mako, GNOME Shell, Plasma, xfce4-notifyd): vpnstat's
/// own D-Bus client (`DesktopBusConnection`), so `notify` needs nothing a desktop does not
/// already run, and a machine without a desktop gets no new dependency.
package final class FreedesktopNotifications: DesktopNotifications {
  static let service = "org.freedesktop.Notifications"
  static let path = "/org/freedesktop/Notifications"
  /// The name servers show as the sender, and the `desktop-entry` hint.
  static let application = "vpnstat"

  /// Who answered (asked once, when connecting: it also proves a server is there).
  package let server: NotificationServer
  private let bus: any BusMethodCalling

  /// Connects to the session bus of a process with `environment` and asks its notification
  /// server who it is.
  package static func connect(environment: [String: String], limits: DesktopBusConnection.Limits = .standard)
    throws(NotificationFailure) -> FreedesktopNotifications
  {
    let addresses: [DesktopBusAddress]
    do {
      addresses = try DesktopBusAddress.find(environment: environment)
    } catch {
      throw .noDesktopBus(error)
    }
    let connection: DesktopBusConnection
    do {
      connection = try DesktopBusConnection.connect(to: addresses, limits: limits)
    } catch {
      throw .busUnreachable(address: addresses.map(\.description).joined(separator: ";"), error)
    }
    return try FreedesktopNotifications(bus: connection)
  }

  /// Notifications over `bus`, whose server is asked who it is and what it can do.
  package init(bus: any BusMethodCalling) throws(NotificationFailure) {
    self.bus = bus
    let information = try Self.call(bus, "GetServerInformation")
    guard information.count == 4, case .string(let name) = information[0], case .string(let vendor) = information[1],
      case .string(let version) = information[2], case .string(let specification) = information[3]
    else {
      throw .unexpectedAnswer(
        method: "GetServerInformation", signature: information.map(\.signature).joined())
    }
    let capabilities = try Self.call(bus, "GetCapabilities")
    guard capabilities.count == 1, case .array("s", let elements) = capabilities[0] else {
      throw .unexpectedAnswer(method: "GetCapabilities", signature: capabilities.map(\.signature).joined())
    }
    server = NotificationServer(
      name: name, vendor: vendor, version: version, specificationVersion: specification,
      capabilities: elements.compactMap { if case .string(let text) = $0 { text } else { nil } })
  }

  package func notify(_ notification: DesktopNotification) throws(NotificationFailure) -> DesktopNotification.ID {
    let reply = try Self.call(bus, "Notify", Self.arguments(notification, markup: server.readsMarkup))
    guard reply.count == 1, case .uint32(let id) = reply[0] else {
      throw .unexpectedAnswer(method: "Notify", signature: reply.map(\.signature).joined())
    }
    return DesktopNotification.ID(id)
  }

  package func close(_ id: DesktopNotification.ID) throws(NotificationFailure) {
    _ = try Self.call(bus, "CloseNotification", [.uint32(id.rawValue)])
  }

  /// `Notify`'s arguments: app_name, replaces_id, app_icon, summary, body, actions, hints
  /// (urgency, category, desktop-entry), expire_timeout in milliseconds (-1: the server's
  /// default, 0: never).
  static func arguments(_ notification: DesktopNotification, markup: Bool) -> [BusValue] {
    let timeout: Int32
    switch notification.expiry {
    case .serverDefault: timeout = -1
    case .never: timeout = 0
    case .after(let duration):
      timeout = Int32(clamping: max(1, (duration.nanoseconds + 999_999) / 1_000_000))
    }
    return [
      .string(application), .uint32(notification.replaces?.rawValue ?? 0), .string(""),
      .string(text(notification.summary, lines: false, markup: false)),
      .string(text(notification.body, lines: true, markup: markup)), .strings([]),
      .dictionary([
        ("urgency", .byte(notification.urgency.rawValue)), ("category", .string(notification.category.rawValue)),
        ("desktop-entry", .string(application)),
      ]),
      .int32(timeout),
    ]
  }

  /// Text as the server must get it to show it as written: controls and other unsafe
  /// characters escaped as on a terminal (a name may hold any byte; a NUL would make no valid
  /// message), newlines kept in a body and made spaces in a summary, and for a server that reads
  /// markup `&`, `<` and `>` as entities (the specification's summary is never markup).
  static func text(_ text: String, lines: Bool, markup: Bool) -> String {
    let safe = text.split(separator: "\n", omittingEmptySubsequences: false).map { TerminalText.sanitize(String($0)) }
      .joined(separator: lines ? "\n" : " ")
    guard markup else { return safe }
    var escaped = ""
    for character in safe {
      switch character {
      case "&": escaped += "&amp;"
      case "<": escaped += "&lt;"
      case ">": escaped += "&gt;"
      default: escaped.append(character)
      }
    }
    return escaped
  }

  private static func call(_ bus: any BusMethodCalling, _ member: String, _ arguments: [BusValue] = [])
    throws(NotificationFailure) -> [BusValue]
  {
    do {
      return try bus.call(
        BusMethodCall(destination: service, path: path, interface: service, member: member, arguments: arguments))
    } catch .error(let reply) where reply.name == BusErrorReply.serviceUnknown {
      throw .noServer(reply.message)
    } catch .error(let reply) {
      throw .refused(reply)
    } catch {
      throw .bus(error)
    }
  }
}
