import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// Where an enforcer says it runs: `DB.enforce-IFACE.presence` beside the database (the
/// enforcer's lock is `DB.enforce-IFACE.lock`). The lock proves it to other enforcers but is
/// private to its owner; this file is for every reader (mode 0644, replaced atomically), and is
/// believed only while the process it names — same pid, same start time — runs.
package struct EnforcerPresenceFile {
  package let path: String
  let directory: String
  let name: String

  package init(location: StoreLocation, tunnel: InterfaceName) {
    let path = location.companionPath("enforce-\(tunnel.escaped).presence")
    let slash = path.lastIndex(of: "/")
    self.path = path
    directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    name = slash.map { String(path[path.index(after: $0)...]) } ?? path
  }

  /// The presence this file holds, whether or not its process still runs. Only a regular file
  /// is read: a FIFO planted beside a database in someone's directory would hold the reader
  /// (root's `status` too) until they wrote to it.
  package func read() -> EnforcerPresence? {
    guard let bytes = try? SmallFile.readRegularFile(SystemPath(path), limit: 1 << 16) else { return nil }
    return EnforcerPresence(parsing: String(decoding: bytes, as: UTF8.self))
  }

  package func write(_ presence: EnforcerPresence) throws {
    try AtomicFile.write(Array(presence.text.utf8), named: name, in: directory)
  }

  package func remove() { try? FileSystem.remove(path) }

  /// Whether the process the presence names is still that enforcer.
  package static func isLive(_ presence: EnforcerPresence) -> Bool {
    ProcessTable.isRunning(presence.pid)
      && (presence.startTime == nil || ProcessTable.startTime(of: presence.pid) == presence.startTime)
  }

  /// The enforcers running on the database at `location`, oldest first.
  package static func running(on location: StoreLocation) -> [EnforcerPresence] {
    // Any tunnel's file names the directory and the common prefix: "vpnstat.db.enforce-".
    let any = EnforcerPresenceFile(location: location, tunnel: InterfaceName("x"))
    let prefix = Array(any.name.utf8.dropLast("x.presence".utf8.count))
    let suffix = Array(".presence".utf8)
    let entries = (try? SmallFile.directoryEntries(SystemPath(any.directory))) ?? []
    var found: [EnforcerPresence] = []
    for entry in entries where entry.starts(with: prefix) && entry.count > prefix.count + suffix.count {
      guard entry.suffix(suffix.count).elementsEqual(suffix),
        let bytes = try? SmallFile.readRegularFile(
          SystemPath(bytes: Array(any.directory.utf8) + [0x2F] + entry), limit: 1 << 16),
        let presence = EnforcerPresence(parsing: String(decoding: bytes, as: UTF8.self)), isLive(presence)
      else { continue }
      found.append(presence)
    }
    return found.sorted { $0.since < $1.since }
  }
}
