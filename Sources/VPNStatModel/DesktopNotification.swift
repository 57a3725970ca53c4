/// A notice for the person at the desktop: a warning that the session ends soon, the stop, a
/// refusal in the pause, a data cap nearly or fully used. What it says is decided here, in
/// values; how it reaches the screen is the engine's (`DesktopNotifications`).
public struct DesktopNotification: Hashable, Sendable {
  /// The number a notification server gave a notification it shows: the one to replace or close.
  public struct ID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public var description: String { "\(rawValue)" }
  }

  /// How urgent the server should treat it (the specification's three levels; a critical one
  /// usually stays until the person dismisses it).
  public enum Urgency: UInt8, Hashable, Sendable, CaseIterable {
    case low = 0
    case normal = 1
    case critical = 2
  }

  /// How long it stays on the screen.
  public enum Expiry: Hashable, Sendable {
    /// As long as the server shows notifications of its urgency.
    case serverDefault
    /// Until the person dismisses it.
    case never
    case after(Duration)
  }

  /// The kind of event, from the specification's list (servers may style or filter by it).
  public enum Category: String, Hashable, Sendable, CaseIterable {
    case network = "network"
    case networkConnected = "network.connected"
    case networkDisconnected = "network.disconnected"
    case networkError = "network.error"
  }

  /// One line, shown emphasised.
  public var summary: String
  /// Plain text (never markup), lines separated by newlines.
  public var body: String
  public var urgency: Urgency
  public var category: Category
  public var expiry: Expiry
  /// The notification this one takes the place of, so vpnstat's notices replace each other
  /// instead of piling up; nil for a new one.
  public var replaces: ID?

  public init(
    summary: String, body: String = "", urgency: Urgency = .normal, category: Category = .network,
    expiry: Expiry = .serverDefault, replaces: ID? = nil
  ) {
    self.summary = summary
    self.body = body
    self.urgency = urgency
    self.category = category
    self.expiry = expiry
    self.replaces = replaces
  }
}
