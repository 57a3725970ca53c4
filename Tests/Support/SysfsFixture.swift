import Foundation

import VPNStatKernel
import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// A fixture `/sys/class/net` tree in a temporary directory, for devices this kernel cannot make.
/// Removed when the value goes away.
final class SysfsFixture: @unchecked Sendable {
  let directory: URL

  init() throws {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "vpnstat-sysfs-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
  }

  var root: SysfsRoot { SysfsRoot(SystemPath(directory.path)) }

  /// Adds an interface. `attributes` are files relative to its directory; `directories` are made
  /// empty (e.g. `phy80211`, `device`).
  func add(
    _ name: String, index: Int, rx: UInt64 = 1000, tx: UInt64 = 2000, type: Int? = 1,
    uevent: String? = nil, directories: [String] = [], attributes: [String: String] = [:],
    omitStatistics: [String] = []
  ) throws {
    let base = directory.appendingPathComponent(name)
    try FileManager.default.createDirectory(
      at: base.appendingPathComponent("statistics"), withIntermediateDirectories: true)
    var files: [String: String] = [
      "ifindex": "\(index)\n", "operstate": "up\n", "flags": "0x1003\n", "carrier": "1\n",
      "statistics/rx_bytes": "\(rx)\n", "statistics/tx_bytes": "\(tx)\n",
      "statistics/rx_packets": "\(rx / 100)\n", "statistics/tx_packets": "\(tx / 100)\n",
      "statistics/rx_errors": "0\n", "statistics/tx_errors": "0\n",
      "statistics/rx_dropped": "0\n", "statistics/tx_dropped": "0\n",
    ]
    if let type { files["type"] = "\(type)\n" }
    files["uevent"] = (uevent.map { $0 + "\n" } ?? "") + "INTERFACE=\(name)\nIFINDEX=\(index)\n"
    for (key, value) in attributes { files[key] = value }
    for omitted in omitStatistics { files[omitted] = nil }
    for (path, content) in files {
      try Data(content.utf8).write(to: base.appendingPathComponent(path))
    }
    for sub in directories {
      try FileManager.default.createDirectory(
        at: base.appendingPathComponent(sub), withIntermediateDirectories: true)
    }
  }

  /// An entry that lists but whose device is gone (a dangling symlink, as sysfs shows mid-removal).
  func addGhost(_ name: String) throws {
    try FileManager.default.createSymbolicLink(
      atPath: directory.appendingPathComponent(name).path, withDestinationPath: "/nonexistent/\(name)")
  }

  deinit { try? FileManager.default.removeItem(at: directory) }
}

/// A clock the tests set by hand.
final class ManualTimeSource: TimeSource, @unchecked Sendable {
  private let lock = NSLock()
  private var reading: ClockReading

  init(wall: Int64 = 1_800_000_000, bootID: String = "boot-a") {
    reading = ClockReading(
      wall: Timestamp(seconds: wall), boottime: 1_000_000_000_000, monotonic: 1_000_000_000_000,
      bootID: bootID)
  }

  func now() -> ClockReading {
    lock.lock()
    defer { lock.unlock() }
    return reading
  }

  /// A sleep lets the time pass at once: waits in the code under test cost no real time.
  func sleep(for duration: Duration) { advance(duration) }

  /// Time passes: all three clocks move (the machine is awake).
  func advance(_ duration: Duration) {
    lock.lock()
    reading.wall = reading.wall + duration
    reading.boottime += duration.nanoseconds
    reading.monotonic += duration.nanoseconds
    lock.unlock()
  }

  /// The machine sleeps: wall clock and boottime move, monotonic does not.
  func suspend(_ duration: Duration) {
    lock.lock()
    reading.wall = reading.wall + duration
    reading.boottime += duration.nanoseconds
    lock.unlock()
  }

  /// Someone sets the wall clock; boottime and monotonic are untouched.
  func setWall(by offset: Duration) {
    lock.lock()
    reading.wall = reading.wall + offset
    lock.unlock()
  }

  func reboot(bootID: String) {
    lock.lock()
    reading.bootID = bootID
    reading.boottime = 5_000_000_000
    reading.monotonic = 5_000_000_000
    lock.unlock()
  }
}

/// Where a String's bytes are stored: two Strings at one address are one String (a boot id
/// shared, not copied).
func storage(of text: String) -> UnsafeRawPointer? {
  var text = text
  return text.withUTF8 { UnsafeRawPointer($0.baseAddress) }
}
