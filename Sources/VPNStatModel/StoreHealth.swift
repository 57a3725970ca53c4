/// What the ledger could not see, as recorded: shown with the totals it affects.
public struct StoreHealth: Hashable, Sendable {
  /// How often the kernel dropped link notifications because a recorder fell behind.
  public var notificationOverflows: UInt64 = 0
  public var lastNotificationOverflow: Timestamp?

  public init(notificationOverflows: UInt64 = 0, lastNotificationOverflow: Timestamp? = nil) {
    self.notificationOverflows = notificationOverflows
    self.lastNotificationOverflow = lastNotificationOverflow
  }

  /// The warning reports show, for an overflow within the last day (older ones stay counted in
  /// the metrics).
  public func warning(at now: Timestamp) -> String? {
    guard let last = lastNotificationOverflow, now - last < .seconds(86_400) else { return nil }
    return
      "link notifications overflowed \(notificationOverflows) time(s), last at \(last.rfc3339): traffic of links deleted while the recorder fell behind is missing from the totals"
  }
}
