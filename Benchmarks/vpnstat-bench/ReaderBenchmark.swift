import CNetlinkFloor
import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

#if canImport(Glibc)
  import Glibc
#endif

/// One way of reading every interface's counters once, as the reader benchmark drives it.
/// `sample` returns how many interfaces it saw: checked against the floor's count, so the work
/// is both validated and kept from being optimised away.
struct ReaderUnderTest {
  let label: String
  let sample: () throws -> Int
}

/// The in-process cost of one sample for each reader, beside the same RTM_GETSTATS dump in C.
/// Runs in the inner process, which `ip netns exec` started inside the namespace with the
/// namespace's own /sys mounted, so the sysfs reader reads the namespace's interfaces.
enum ReaderBenchmark {
  static func run(ifbCount: Int, quick: Bool) throws -> [Measurement] {
    let clock = SystemTimeSource()
    let floorSocket = netlink_floor_open()
    guard floorSocket >= 0 else {
      throw BenchError(
        "C floor: cannot open a netlink socket: \(String(cString: strerror(-floorSocket)))")
    }
    defer { close(floorSocket) }
    var netlink = try NetlinkCounterSource()
    var sysfs = SysfsCounterSource()
    var getifaddrs = GetifaddrsCounterSource()
    guard sysfs_floor_open("/sys/class/net") >= 0 else { throw BenchError("C sysfs floor: cannot open /sys/class/net") }
    defer { sysfs_floor_close() }
    let readers = [
      ReaderUnderTest(label: Labels.floor) {
        var total: UInt64 = 0
        let count = netlink_floor_sample(floorSocket, &total)
        guard count >= 0 else {
          throw BenchError("C floor: \(String(cString: strerror(Int32(-count))))")
        }
        return count
      },
      ReaderUnderTest(label: Labels.netlinkReader) {
        try netlink.sample(at: clock).interfaces.count
      },
      // What a one-shot `vpnstat status` pays: a new reader has no link table yet, so its first
      // sample is the RTM_GETLINK dump (names, kinds, flags, and each link's counters).
      ReaderUnderTest(label: Labels.netlinkColdReader) {
        var fresh = try NetlinkCounterSource()
        return try fresh.sample(at: clock).interfaces.count
      },
      // The C program making the same dump as that first sample.
      ReaderUnderTest(label: Labels.linkFloor) {
        var total: UInt64 = 0
        let count = netlink_floor_links(floorSocket, &total)
        guard count >= 0 else { throw BenchError("C floor: \(String(cString: strerror(Int32(-count))))") }
        return count
      },
      ReaderUnderTest(label: Labels.sysfsReader) { try sysfs.sample(at: clock).interfaces.count },
      // What a one-shot `status --source sysfs` pays: every file opened, read and kept.
      ReaderUnderTest(label: Labels.sysfsColdReader) {
        var fresh = SysfsCounterSource()
        return try fresh.sample(at: clock).interfaces.count
      },
      ReaderUnderTest(label: Labels.sysfsFloor) {
        var total: UInt64 = 0
        return sysfs_floor_sample(&total)
      },
      ReaderUnderTest(label: "getifaddrs") { try getifaddrs.sample(at: clock).interfaces.count },
    ]

    // Warm-up: the netlink reader learns the link table (one RTM_GETLINK dump) on its first
    // sample and keeps it, as a long-running sampler does; caches and allocators settle.
    let expected = try readers[0].sample()
    for reader in readers { for _ in 0..<3 { _ = try reader.sample() } }

    // Interleaved rounds: each reader gets a slice of every round, so a burst of load from
    // the other engineers' builds lands on all readers alike rather than on one.
    let rounds = quick ? 4 : 10
    let perReader: Int64 = quick ? 250_000_000 : 1_500_000_000
    let slice = perReader / Int64(rounds)
    var samples = [[Int64]](repeating: [], count: readers.count)
    var failures = [Int](repeating: 0, count: readers.count)
    var order = RoundOrder(readers.count)
    for _ in 0..<rounds {
      try Interruption.check()
      for r in order.nextRound() {
        let sliceStart = monotonicNanoseconds()
        repeat {
          let start = monotonicNanoseconds()
          let count = try readers[r].sample()
          let end = monotonicNanoseconds()
          if count == expected { samples[r].append(end - start) } else { failures[r] += 1 }
        } while monotonicNanoseconds() - sliceStart < slice
      }
    }
    return readers.indices.map { r in
      Measurement(
        section: .reader, label: readers[r].label, ifbCount: ifbCount, interfaces: expected,
        timing: Distribution(samples[r]), failures: failures[r])
    }
  }
}
