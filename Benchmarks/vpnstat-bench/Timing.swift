import VPNStatSimulation

#if canImport(Glibc)
  import Glibc
#endif

/// Nanoseconds of CLOCK_MONOTONIC: the one clock every figure in the bench is taken with
/// (never set, and the bench does not care about suspend).
@inline(__always)
func monotonicNanoseconds() -> Int64 {
  var spec = timespec()
  clock_gettime(CLOCK_MONOTONIC, &spec)
  return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
}

/// The order in which the things a benchmark compares run in each round: shuffled every round
/// from a fixed seed (SplitMix64), so every run of the benchmark shuffles alike. A rotation kept
/// each thing right after the same other one in all but one round of each turn, and what follows
/// a heavy command runs slower (see `CommandBenchmark.time`).
struct RoundOrder {
  private var random = SplitMix(seed: 0x5EED_0F0D_E5)
  private var order: [Int]

  init(_ count: Int) { order = Array(0..<count) }

  /// The positions 0..<count, in this round's order.
  mutating func nextRound() -> [Int] {
    order.shuffle(using: &random)
    return order
  }
}

/// Many timings of one thing, in nanoseconds, summarised by median and p10/p90: on a shared
/// 2-core machine the noise is one-sided and long-tailed, which a mean would carry and a median does not.
struct Distribution: Sendable {
  let median: Double
  let p10: Double
  let p90: Double
  let count: Int

  init(_ samples: [Int64]) {
    let sorted = samples.sorted()
    count = sorted.count
    func percentile(_ p: Double) -> Double {
      guard !sorted.isEmpty else { return .nan }
      // Linear interpolation between the closest ranks.
      let position = p * Double(sorted.count - 1)
      let lower = Int(position.rounded(.down))
      let upper = min(lower + 1, sorted.count - 1)
      let fraction = position - Double(lower)
      return Double(sorted[lower]) * (1 - fraction) + Double(sorted[upper]) * fraction
    }
    median = percentile(0.5)
    p10 = percentile(0.1)
    p90 = percentile(0.9)
  }

  init(median: Double, p10: Double, p90: Double, count: Int) {
    self.median = median
    self.p10 = p10
    self.p90 = p90
    self.count = count
  }
}

/// Decides how long a timing loop goes on: at least `minimumRounds`, then until `budget` is
/// spent, never more than `maximumRounds`. Budgets keep a full run near its time limit whatever N is.
struct RoundBudget: Sendable {
  var budgetNanoseconds: Int64
  var minimumRounds: Int
  var maximumRounds: Int

  func shouldContinue(rounds: Int, startedAt start: Int64) -> Bool {
    if rounds < minimumRounds { return true }
    if rounds >= maximumRounds { return false }
    return monotonicNanoseconds() - start < budgetNanoseconds
  }
}

// MARK: - Formatting (no Foundation: `String(format:)` is not in FoundationEssentials)

/// `value` with exactly `decimals` digits after the point.
func fixed(_ value: Double, _ decimals: Int) -> String {
  guard value.isFinite else { return "–" }
  var scale = 1.0
  for _ in 0..<decimals { scale *= 10 }
  let scaled = (abs(value) * scale).rounded()
  let whole = Int(scaled / scale)
  let fraction = Int(scaled - Double(whole) * scale)
  var text = (value < 0 && scaled != 0 ? "-" : "") + String(whole)
  if decimals > 0 {
    let digits = String(fraction)
    text += "." + String(repeating: "0", count: decimals - digits.count) + digits
  }
  return text
}

/// A duration in nanoseconds as people read it: µs below a millisecond, ms below a second,
/// with three significant digits or so.
func formatDuration(_ nanoseconds: Double) -> String {
  guard nanoseconds.isFinite else { return "–" }
  let micro = nanoseconds / 1_000
  if micro < 10 { return fixed(micro, 2) + " µs" }
  if micro < 1_000 { return fixed(micro, 1) + " µs" }
  let milli = micro / 1_000
  if milli < 10 { return fixed(milli, 3) + " ms" }
  if milli < 1_000 { return fixed(milli, 2) + " ms" }
  return fixed(milli / 1_000, 3) + " s"
}

/// How a summary judges a target.
func verdict(_ met: Bool) -> String { met ? "met" : "MISSED" }

/// A ratio such as `1.37×`.
func formatRatio(_ ratio: Double) -> String {
  guard ratio.isFinite else { return "–" }
  return fixed(ratio, ratio < 10 ? 2 : 1) + "×"
}
