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
  ]

  static func run(ifbCount: Int, quick: Bool) throws -> [Measurement] {
    var samples = [[Int64]](repeating: [], count: stages.count)
    var interfaces = 0
    var renderedBytes = 0
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
      for (stage, elapsed) in [t1 - t0, t2 - t1, t3 - t2, t3 - t0].enumerated() {
        samples[stage].append(elapsed)
      }
      interfaces = snapshot.interfaces.count
      renderedBytes = json.count
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
    return stages.indices.map { s in
      Measurement(
        section: .pipeline, label: stages[s], ifbCount: ifbCount, interfaces: interfaces,
        timing: Distribution(samples[s]), failures: 0)
    }
  }
}
