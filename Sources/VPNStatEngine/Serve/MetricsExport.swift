import VPNStatModel
import VPNStatStore

/// What `vpnstat export` prints: the ledger over one sample, with the session and the database's
/// health. Without a database, the kernel's counters of the current instances (Prometheus'
/// `rate()` handles their resets as it handles any counter's), and a warning that says so.
package struct MetricsExport {
  package var read: ReaderSample
  package var ledger: Ledger
  package var session: SessionReport?
  package var warnings: [String]

  package static func take(
    _ sampler: inout TrafficSampler, source: inout LedgerSource, location: StoreLocation, nextLengths: SessionLengths
  ) throws -> MetricsExport {
    let (read, session) = try ReaderSample.takeWithSession(
      &sampler, source: &source, nextLengths: nextLengths, health: true)
    guard let ledger = read.ledger else {
      return MetricsExport(
        read: read, ledger: Ledger(kernelCountersOf: sampler.observations(read.sample)), session: session,
        warnings: read.warnings + [
          "no database at \(location.path): exporting the kernel's counters of the current instances"
        ])
    }
    return MetricsExport(read: read, ledger: ledger, session: session, warnings: read.warnings)
  }
}
