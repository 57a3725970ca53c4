import VPNStatModel
import VPNStatStore

/// `vpnstat alert`: the traffic of the selected names, or classes (the tunnel class when nothing
/// is selected), in the current period against a limit, read as every reader of buckets reads it
/// (`RecordedTraffic`: the stored buckets and the traffic not yet saved, in one read).
package struct LimitCheck: Sendable {
  package var limit: DataCap
  package var selection: InterfaceSelection

  package init(limit: DataCap, selection: InterfaceSelection) {
    self.limit = limit
    self.selection = selection
  }

  /// The limit against the period's traffic, at the trusted "now" of the sample.
  package struct Result: Sendable {
    package var status: DataCapStatus
    /// The classes counted; none when names were selected.
    package var classes: [InterfaceClass]
    package var at: Timestamp
  }

  /// Samples over `store`'s ledger, tells the sample's warnings to `warn`, has `requireKnown`
  /// refuse names that neither the kernel nor the ledger knows, then adds up the period.
  package func run(
    _ sampler: inout TrafficSampler, store: Store, warn: (String) -> Void,
    requireKnown: (CounterSample, Ledger?) throws -> Void
  ) throws -> Result {
    let read = try ReaderSample.take(&sampler, store: store)
    for warning in read.warnings { warn(warning) }
    try requireKnown(read.sample, read.ledger)
    let now = try store.trustedNow(read.sample.taken)
    let start = limit.period.start(of: now, in: store.calendar)
    let classes = selection.names.isEmpty ? (selection.classes.isEmpty ? [.tunnel] : selection.classes.sorted()) : []
    let used = try RecordedTraffic.reading(store, ledger: read.ledger) { traffic in
      var used = TrafficCounts.zero
      for name in selection.names.sorted() { used += try traffic.usage(since: start, of: nil, name: name) }
      for interfaceClass in classes { used += try traffic.usage(since: start, of: interfaceClass) }
      return used
    }
    return Result(status: limit.status(used: used, at: now, in: store.calendar), classes: classes, at: now)
  }
}
