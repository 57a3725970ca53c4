import Foundation
import Testing

@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The sysfs reader keeps each interface's files open across samples: on fixture trees, values
/// change in place and are read again, and a device deleted and created again under the same
/// name is never read through the old device's files.
struct SysfsReaderTests {
  let clock = ManualTimeSource()

  func file(_ tree: SysfsFixture, _ name: String, _ attribute: String) -> URL {
    tree.directory.appendingPathComponent(name).appendingPathComponent(attribute)
  }

  /// Rewrites a value in place, as the kernel's counters change: the same file, new content.
  func set(_ tree: SysfsFixture, _ name: String, _ attribute: String, _ value: String) throws {
    let handle = try FileHandle(forWritingTo: file(tree, name, attribute))
    try handle.truncate(atOffset: 0)
    try handle.write(contentsOf: Data(value.utf8))
    try handle.close()
  }

  /// The device is deleted and another one takes its name: a new directory entry (sysfs never
  /// gives it the identity of the removed one: made before the old one goes, it cannot).
  func recreate(_ tree: SysfsFixture, _ name: String, index: Int, rx: UInt64, tx: UInt64) throws {
    let staging = try SysfsFixture()
    try staging.add(name, index: index, rx: rx, tx: tx)
    let fresh = tree.directory.appendingPathComponent(".new-\(name)")
    try FileManager.default.moveItem(at: staging.directory.appendingPathComponent(name), to: fresh)
    try FileManager.default.removeItem(at: tree.directory.appendingPathComponent(name))
    try FileManager.default.moveItem(at: fresh, to: tree.directory.appendingPathComponent(name))
  }

  func interface(_ sample: CounterSample, _ name: String) -> InterfaceSample? {
    sample.interfaces.first { $0.name == InterfaceName(name) }
  }

  @Test("files stay open between samples, and every sample reads the values as they are now")
  func keptFilesReadAgain() throws {
    let tree = try SysfsFixture()
    try tree.add("eth0", index: 2, rx: 1000, tx: 2000)
    try tree.add("wg0", index: 3, rx: 50, tx: 60, type: 65534)
    var reader = SysfsCounterSource(root: tree.root)
    let first = try reader.sample(at: clock)
    #expect(interface(first, "eth0")?.counters.traffic.rxBytes == 1000)
    #expect(reader.keptCount == 2)
    try set(tree, "eth0", "statistics/rx_bytes", "123456789\n")
    try set(tree, "eth0", "statistics/tx_packets", "77\n")
    try set(tree, "wg0", "operstate", "down\n")
    let second = try reader.sample(at: clock)
    let eth0 = try #require(interface(second, "eth0"))
    #expect(eth0.counters.traffic.rxBytes == 123_456_789 && eth0.counters.traffic.txPackets == 77)
    #expect(LinkState(try #require(interface(second, "wg0")).link) == .down)
    #expect(reader.keptCount == 2)
  }

  @Test("beyond the files it may keep, the reader opens, reads and closes: every interface there, every value now")
  func beyondTheKeepLimit() throws {
    let tree = try SysfsFixture()
    for i in 0..<5 { try tree.add("eth\(i)", index: 10 + i, rx: UInt64(1000 + i), tx: 2000) }
    var reader = SysfsCounterSource(root: tree.root, keepLimit: 2)
    let first = try reader.sample(at: clock)
    #expect(first.interfaces.map(\.name.description) == (0..<5).map { "eth\($0)" })
    #expect(reader.keptCount == 2)
    for i in 0..<5 { try set(tree, "eth\(i)", "statistics/rx_bytes", "\(5000 + i)\n") }
    let second = try reader.sample(at: clock)
    #expect(second.interfaces.map(\.counters.traffic.rxBytes) == (0..<5).map { UInt64(5000 + $0) })
    #expect(reader.keptCount == 2 && second.problems.isEmpty)
  }

  @Test(
    "a process allowed 64 open files, 30 of them held from its parent, reads all 300 interfaces of a sysfs tree, sample after sample (it used to leave out those past its descriptors, silently)"
  )
  func fewDescriptors() throws {
    let tree = try SysfsFixture()
    for i in 0..<300 { try tree.add(String(format: "veth%03d", i), index: 10 + i, rx: UInt64(i), tx: 1) }
    let result = try run(
      "/bin/bash",
      [
        "-c",
        "for fd in $(seq 20 49); do eval \"exec $fd</dev/null\"; done; exec /usr/bin/prlimit --nofile=64:64 -- \"$@\"",
        "held", Built.vpnstat, "watch", "--json", "--count", "3", "--interval", "100ms",
        "--sysfs-root", tree.directory.path,
      ])
    #expect(result.status == 0, "\(result.errors)")
    let lines = result.output.split(separator: "\n")
    #expect(lines.count == 3, "\(result.output.prefix(300))")
    for line in lines {
      let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      let interfaces = try #require(object["interfaces"] as? [[String: Any]])
      #expect(interfaces.count == 300)
    }
  }

  @Test("a device deleted and created again under its name, with a new ifindex: read through its own files")
  func vanishAndReappear() throws {
    let tree = try SysfsFixture()
    try tree.add("tun0", index: 5, rx: 900_000, tx: 800_000)
    var reader = SysfsCounterSource(root: tree.root)
    #expect(interface(try reader.sample(at: clock), "tun0")?.index == 5)
    try recreate(tree, "tun0", index: 9, rx: 10, tx: 20)
    let after = try #require(interface(try reader.sample(at: clock), "tun0"))
    #expect(after.index == 9)
    #expect(after.counters.traffic.rxBytes == 10 && after.counters.traffic.txBytes == 20)
    // Gone altogether: left out, and its files closed.
    try FileManager.default.removeItem(at: tree.directory.appendingPathComponent("tun0"))
    let gone = try reader.sample(at: clock)
    #expect(gone.interfaces.isEmpty && gone.problems.isEmpty)
    #expect(reader.keptCount == 0)
    // And back once more.
    try tree.add("tun0", index: 12, rx: 1, tx: 2)
    #expect(interface(try reader.sample(at: clock), "tun0")?.index == 12)
  }

  @Test("renamed away and its old name taken by a new device: each name reads its own device")
  func renamedAndReplaced() throws {
    let tree = try SysfsFixture()
    try tree.add("wg0", index: 4, rx: 4000, tx: 4000)
    var reader = SysfsCounterSource(root: tree.root)
    _ = try reader.sample(at: clock)
    try FileManager.default.moveItem(
      at: tree.directory.appendingPathComponent("wg0"), to: tree.directory.appendingPathComponent("wg1"))
    try tree.add("wg0", index: 8, rx: 1, tx: 1)
    let sample = try reader.sample(at: clock)
    #expect(interface(sample, "wg0")?.index == 8 && interface(sample, "wg0")?.counters.traffic.rxBytes == 1)
    #expect(interface(sample, "wg1")?.index == 4 && interface(sample, "wg1")?.counters.traffic.rxBytes == 4000)
  }

  @Test(
    "garbage in a counter: that interface is a problem, the others are read; once the value is a number again, it is read",
    arguments: ["12abc\n", "\n", "-5\n", "99999999999999999999999\n", "\u{1B}[2J\n", "0x\n"])
  func garbage(value: String) throws {
    let tree = try SysfsFixture()
    try tree.add("eth0", index: 2)
    try tree.add("eth1", index: 3, rx: 5, tx: 6)
    var reader = SysfsCounterSource(root: tree.root)
    _ = try reader.sample(at: clock)
    try set(tree, "eth0", "statistics/tx_bytes", value)
    let broken = try reader.sample(at: clock)
    #expect(interface(broken, "eth0") == nil)
    #expect(interface(broken, "eth1")?.counters.traffic.rxBytes == 5)
    let problem = try #require(broken.problems.first)
    #expect(problem.name == InterfaceName("eth0") && problem.message.contains("tx_bytes"), "\(problem.message)")
    #expect(!problem.message.contains("\u{1B}"))
    try set(tree, "eth0", "statistics/tx_bytes", "31337\n")
    #expect(interface(try reader.sample(at: clock), "eth0")?.counters.traffic.txBytes == 31337)
  }

  @Test("a counter file missing from a new interface: a problem; an entry whose device is gone: left out")
  func missingAndGhost() throws {
    let tree = try SysfsFixture()
    try tree.add("eth0", index: 2, omitStatistics: ["statistics/rx_packets"])
    try tree.addGhost("eth9")
    var reader = SysfsCounterSource(root: tree.root)
    let sample = try reader.sample(at: clock)
    #expect(sample.interfaces.isEmpty)
    #expect(sample.problems.map(\.name) == [InterfaceName("eth0")])
    #expect(reader.keptCount == 0)
  }
}
