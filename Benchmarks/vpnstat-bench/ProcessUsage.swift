import VPNStatSystem

#if canImport(Glibc)
  import Glibc
#endif

/// What a running process has used so far, from /proc: CPU time, the bytes it caused to be
/// written to storage (`write_bytes`: pages it dirtied, whatever the load) and passed to write
/// calls (`wchar`), and its resident memory. Two readings apart give its cost over the time
/// between them: the one way every long-running command is measured here.
struct ProcessUsage {
  /// utime + stime, in clock ticks.
  var cpuTicks: Int64
  /// The time its threads ran, in nanoseconds, from each one's `schedstat` (the scheduler's own
  /// count); nil when it cannot be read. Clock ticks are 10 ms: over a 240 s run of a process at
  /// 0.05 % of a core (120 ms) that is ±8 %, the whole of the differences the recorder's targets
  /// are judged on.
  var cpuNanoseconds: Int64?
  /// cutime + cstime: the children it has waited for (a shell loop's commands).
  var childTicks: Int64
  var writeBytes: Int64
  var writeCalls: Int64
  var residentKiB: Int64

  static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

  /// The usage of `pid` now, or nil when it is gone.
  static func of(_ pid: pid_t) -> ProcessUsage? {
    guard let stat = SmallFile.trimmedText(SystemPath("/proc/\(pid)/stat")) else { return nil }
    // After the command name: state is field 3; utime, stime, cutime and cstime are 14 to 17.
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    guard fields.count > 15 else { return nil }
    let ticks = (Int64(fields[11]) ?? 0) + (Int64(fields[12]) ?? 0)
    let childTicks = (Int64(fields[13]) ?? 0) + (Int64(fields[14]) ?? 0)
    func field(_ text: String?, _ key: String) -> Int64 {
      let line = text?.split(separator: "\n").first { $0.hasPrefix(key) }
      return line.flatMap { Int64($0.dropFirst(key.count).filter { $0.isNumber }) } ?? 0
    }
    let io = SmallFile.trimmedText(SystemPath("/proc/\(pid)/io"))
    let status = SmallFile.trimmedText(SystemPath("/proc/\(pid)/status"))
    var ran: Int64? = 0
    do {
      try OpenDirectory(SystemPath("/proc/\(pid)/task")).forEachEntry { task in
        let thread = String(decoding: task.name, as: UTF8.self)
        let line = SmallFile.trimmedText(SystemPath("/proc/\(pid)/task/\(thread)/schedstat"))
        guard let first = line?.split(separator: " ").first, let nanoseconds = Int64(first) else {
          ran = nil
          return false
        }
        ran? += nanoseconds
        return true
      }
    } catch {
      ran = nil
    }
    return ProcessUsage(
      cpuTicks: ticks, cpuNanoseconds: ran, childTicks: childTicks, writeBytes: field(io, "write_bytes:"),
      writeCalls: field(io, "wchar:"),
      residentKiB: field(status, "VmRSS:"))
  }

  /// The cost between `start` and `self`, `seconds` apart: share of one core (percent), with
  /// the children waited for when `withChildren`, and bytes written per minute (storage and
  /// write calls).
  func since(_ start: ProcessUsage, seconds: Double, withChildren: Bool = false) -> (
    cpuPercent: Double, writePerMinute: Double, wcharPerMinute: Double
  ) {
    var ticks = cpuTicks - start.cpuTicks
    if withChildren { ticks += childTicks - start.childTicks }
    var cpu = Double(ticks) / Self.ticksPerSecond / seconds * 100
    // The scheduler's nanoseconds where they tell it all (children have none).
    if !withChildren, let ran = cpuNanoseconds, let began = start.cpuNanoseconds {
      cpu = Double(ran - began) / 1e9 / seconds * 100
    }
    return (
      cpu, Double(writeBytes - start.writeBytes) / seconds * 60, Double(writeCalls - start.writeCalls) / seconds * 60
    )
  }
}

/// A size in MiB or KiB, as the notes show it.
func formatBytes(_ bytes: Double) -> String {
  bytes >= 1_048_576 ? fixed(bytes / 1_048_576, 2) + " MiB" : fixed(bytes / 1024, 1) + " KiB"
}
