import VPNStatModel
import VPNStatSystem

/// The directory that holds one entry per interface, `/sys/class/net` by default. Tests point it
/// at fixture trees to stand in for devices this kernel cannot make (Wi‑Fi, WWAN, wireguard).
package struct SysfsRoot: Hashable, Sendable {
  package var path: SystemPath
  package init(_ path: SystemPath = "/sys/class/net") { self.path = path }

  package static let system = SysfsRoot()

  /// The entries of the root: every interface name, as raw bytes.
  package func interfaceNames() throws -> [InterfaceName] {
    try SmallFile.directoryEntries(path).map { InterfaceName(bytes: $0) }
  }

  /// Every interface name with the identity of its entry (see `SmallFile.DirectoryEntry`).
  package func interfaceEntries() throws -> [(name: InterfaceName, identity: UInt64)] {
    try SmallFile.directoryListing(path).map { (InterfaceName(bytes: $0.name), $0.identity) }
  }

  /// `<root>/<name>/<attribute>`.
  package func attribute(_ name: InterfaceName, _ attribute: String) -> SystemPath {
    path.appending(name).appending(attribute)
  }

  /// Reads an attribute as trimmed text; nil when missing, unreadable or not a regular file.
  /// Every attribute sysfs serves is a regular file; a tree given with `--sysfs-root` may hold
  /// anything, and a FIFO there must not hold the reader (`SmallFile.readRegularFile`).
  package func text(_ name: InterfaceName, _ attribute: String) -> String? {
    guard let bytes = try? SmallFile.readRegularFile(self.attribute(name, attribute)) else { return nil }
    return String(decoding: bytes.trimmingASCIIWhitespace(), as: UTF8.self)
  }

  /// Reads an attribute that must hold a decimal unsigned integer (from a regular file only).
  package func unsigned(_ name: InterfaceName, _ attribute: String) throws -> UInt64 {
    let bytes = try SmallFile.readRegularFile(self.attribute(name, attribute), limit: 64)
    guard let value = parseUnsigned(bytes.trimmingASCIIWhitespace()) else {
      throw SysfsValueError(attribute: attribute, bytes: Array(bytes.prefix(32)))
    }
    return value
  }

  package func exists(_ name: InterfaceName, _ attribute: String) -> Bool {
    SmallFile.exists(self.attribute(name, attribute))
  }
}

/// A sysfs attribute that held something other than the number it should.
package struct SysfsValueError: Error, CustomStringConvertible {
  package var attribute: String
  package var bytes: [UInt8]
  package var description: String {
    bytes.isEmpty
      ? "\(attribute) is empty"
      : "\(attribute) is not a number: \"\(InterfaceName(bytes: bytes).escaped)\""
  }
}

/// Parses decimal (or `0x` hexadecimal) digits without allocation; nil for anything else or
/// for a value that overflows 64 bits.
func parseUnsigned<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64? {
  guard !bytes.isEmpty else { return nil }
  var value: UInt64 = 0
  if bytes.count > 2, bytes.first == 0x30, bytes[bytes.index(after: bytes.startIndex)] | 0x20 == 0x78 {
    for byte in bytes.dropFirst(2) {
      let digit: UInt64
      switch byte {
      case 0x30...0x39: digit = UInt64(byte - 0x30)
      case 0x61...0x66: digit = UInt64(byte - 0x61 + 10)
      case 0x41...0x46: digit = UInt64(byte - 0x41 + 10)
      default: return nil
      }
      let (shifted, overflow) = value.multipliedReportingOverflow(by: 16)
      if overflow { return nil }
      value = shifted + digit
    }
    return value
  }
  for byte in bytes {
    guard byte >= 0x30, byte <= 0x39 else { return nil }
    let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
    let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - 0x30))
    if overflow1 || overflow2 { return nil }
    value = sum
  }
  return value
}

extension InterfaceFacts {
  /// Reads the sysfs facts of one interface: `uevent`, `wireless`, `phy80211`, `tun_flags`,
  /// `type`, `device` and `speed`. Done once per new ifindex, never per sample.
  package static func read(_ name: InterfaceName, in root: SysfsRoot) -> InterfaceFacts {
    var facts = InterfaceFacts()
    if let uevent = root.text(name, "uevent") { facts.devtype = ueventValue("DEVTYPE=", in: uevent) }
    facts.hasWireless = root.exists(name, "wireless") || root.exists(name, "phy80211")
    facts.hasTunFlags = root.exists(name, "tun_flags")
    facts.arpType = (try? root.unsigned(name, "type")).map { UInt16(truncatingIfNeeded: $0) }
    facts.isVirtual = !root.exists(name, "device")
    // tun reports a fake 10 Mbit/s; a speed is evidence only for real devices.
    if !facts.hasTunFlags, facts.isVirtual == false, let speed = try? root.unsigned(name, "speed"),
      speed > 0, speed < 10_000_000
    {
      facts.speedMbps = speed
    }
    return facts
  }

  /// What follows `key` (`DEVTYPE=`) on a line of a `uevent` file that starts with it, the last
  /// such line's; nil when none does. Lines end at a line feed. A scan of the bytes: `split`
  /// made an array of substrings, and at its first use the runtime built their types, some
  /// 17,000 instructions of a one-shot command.
  package static func ueventValue(_ key: StaticString, in text: String) -> String? {
    var text = text
    return text.withUTF8 { bytes in
      let key = UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
      var value: String?
      var start = 0
      while start < bytes.count {
        var end = start
        while end < bytes.count, bytes[end] != 0x0A { end += 1 }
        if end - start >= key.count, bytes[start..<start + key.count].elementsEqual(key) {
          value = String(decoding: bytes[start + key.count..<end], as: UTF8.self)
        }
        start = end + 1
      }
      return value
    }
  }
}
