import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

/// Where the in-process time of one `vpnstat status --json` goes, stage by stage, with the same
/// library calls StatusCommand makes: it says which stage to look at when status is slower than
/// ip (start-up, the other part, is measured by the start-up section).
enum PipelineBenchmark {
  static let stages = [
    "read: new netlink reader, one link dump",
    "snapshot: classify, sort",
    "render: JSON",
    "whole (in-process, no start-up)",
    "render: status page of record --listen (HTML)",
  ]

  static func run(ifbCount: Int, quick: Bool) throws -> [Measurement] {
    var samples = [[Int64]](repeating: [], count: stages.count)
    var interfaces = 0
    var renderedBytes = 0
    var pageBytes: [UInt8] = []
    func once() throws {
      let t0 = monotonicNanoseconds()
      let clock = SystemTimeSource()
      var reader = CounterReader(.netlink)
      let sample = try reader.sample(at: clock)
      let t1 = monotonicNanoseconds()
      var catalog = InterfaceCatalog()
      let snapshot = StatusSnapshot.make(
        sample: sample, catalog: &catalog, selection: InterfaceSelection())
      let t2 = monotonicNanoseconds()
      let json = StatusJSON.render(snapshot)
      let t3 = monotonicNanoseconds()
      // The page `/` of `record --listen` serves for the same interfaces, with a rate each,
      // a session and an (empty) chart: what the server renders once per sample.
      let model = StatusPageModel(
        takenAt: sample.taken.wall, session: session(at: sample.taken.wall),
        interfaces: snapshot.interfaces.map {
          StatusPageModel.Interface(
            name: $0.name, interfaceClass: $0.interfaceClass, traffic: $0.counters.traffic,
            rates: StatusPageModel.Rates(rx: 1500, tx: 150))
        },
        history: TrafficHistory.make(
          buckets: [], granularity: .hour, count: 24, now: sample.taken.wall, grouping: .class,
          selection: InterfaceSelection(), calendar: FixedOffsetCalendar.utc), refreshSeconds: 5)
      let t4 = monotonicNanoseconds()
      let page = Array(StatusPage.render(model, options: DisplayOptions()).utf8)
      let t5 = monotonicNanoseconds()
      for (stage, elapsed) in [t1 - t0, t2 - t1, t3 - t2, t3 - t0, t5 - t4].enumerated() {
        samples[stage].append(elapsed)
      }
      interfaces = snapshot.interfaces.count
      renderedBytes = json.count
      pageBytes = page
    }
    for _ in 0..<3 { try once() }
    samples = samples.map { _ in [] }
    let budget = RoundBudget(
      budgetNanoseconds: quick ? 250_000_000 : 1_500_000_000, minimumRounds: 5, maximumRounds: 5_000
    )
    let start = monotonicNanoseconds()
    var rounds = 0
    while budget.shouldContinue(rounds: rounds, startedAt: start) {
      if rounds % 16 == 0 { try Interruption.check() }
      try once()
      rounds += 1
    }
    guard renderedBytes > 0 else { throw BenchError("status rendered nothing") }
    progress(
      "status page at \(interfaces) interfaces: \(pageBytes.count) bytes, \(Gzip.compress(pageBytes, level: 1)?.count ?? 0) gzipped (level 1, as served)"
    )
    return stages.indices.map { s in
      Measurement(
        section: .pipeline, label: stages[s], ifbCount: ifbCount, interfaces: interfaces,
        timing: Distribution(samples[s]), failures: 0)
    }
  }

  /// A free session 150 s into its window.
  static func session(at now: Timestamp) -> SessionReport {
    SessionReport.make(
      SessionRecord(window: SessionWindow.open(at: now - .seconds(150), lengths: .release)), now: now, tunnelUp: true,
      nextLengths: .release, tunnelTotals: .zero, lastStop: nil)
  }
}
