/// The session window as reports show it. Filled in by the session issue; a placeholder type
/// here so snapshots and renderers have their final shape.
public struct SessionReport: Hashable, Sendable {
  public init() {}
}
