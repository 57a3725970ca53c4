import VPNStatModel

/// The reader the user asked for, opened: netlink by default, falling back to sysfs when the
/// netlink socket is refused (some sandboxes forbid it), with the reason kept on every sample.
package struct CounterReader: CounterSource {
  private var source: any CounterSource
  /// Why the requested reader is not the one in use, if it is not.
  package private(set) var fallbackReason: String?
  package var kind: CounterSourceKind { source.kind }
  package let requested: CounterSourceKind

  /// Opens `requested`. `openNetlink` is the seam tests use to refuse the socket.
  package init(
    _ requested: CounterSourceKind, root: SysfsRoot = .system,
    openNetlink: () throws -> NetlinkCounterSource = { try NetlinkCounterSource() }
  ) {
    self.requested = requested
    switch requested {
    case .sysfs:
      source = SysfsCounterSource(root: root)
    case .getifaddrs:
      source = GetifaddrsCounterSource()
    case .netlink:
      do {
        source = try openNetlink()
      } catch {
        source = SysfsCounterSource(root: root)
        fallbackReason = "netlink socket refused (\(error)); read sysfs instead"
      }
    }
    self.root = root
  }

  /// A reader of the caller's own (a test's kernel), with no fallback.
  package init(source: any CounterSource) {
    self.source = source
    self.requested = source.kind
    self.root = .system
  }

  private let root: SysfsRoot

  /// The netlink reader in use, if that is what is in use (for link notifications).
  package var netlink: NetlinkCounterSource? { source as? NetlinkCounterSource }

  /// Runs `body` on the netlink reader in use, changing it in place; nil, without running it, when
  /// another reader is in use.
  package mutating func withNetlink<T>(_ body: (inout NetlinkCounterSource) throws -> T) rethrows -> T? {
    guard var netlink = source as? NetlinkCounterSource else { return nil }
    // Out of the box while it changes: the copy is then the only one of its table, which changes
    // where it lies.
    source = Lent()
    defer { source = netlink }
    return try body(&netlink)
  }

  package mutating func apply(_ record: LinkRecord, deleted: Bool) {
    withNetlink { $0.apply(record, deleted: deleted) }
  }

  /// What holds the netlink reader's place while `withNetlink` changes it.
  private struct Lent: CounterSource {
    var kind: CounterSourceKind { .netlink }
    mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
      throw .unavailable(.netlink, "the reader is in use")
    }
  }

  package mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
    do {
      var sample = try source.sample(at: clock)
      sample.fallbackReason = fallbackReason
      return sample
    } catch {
      // The socket opened but the dump was refused: the same fallback, decided once.
      guard source.kind == .netlink, case .notPermitted(_, let why) = error else { throw error }
      source = SysfsCounterSource(root: root)
      fallbackReason = "netlink refused (\(why)); read sysfs instead"
      var sample = try source.sample(at: clock)
      sample.fallbackReason = fallbackReason
      return sample
    }
  }
}
