import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// The TCP and UDP sockets of this network namespace, from /proc/net/{tcp,tcp6,udp,udp6}:
/// which socket inode holds which local (and, when connected, remote) endpoint.
/// /proc/net shows the namespace of the process that reads it.
struct SocketTable {
  struct Endpoints: Hashable {
    var ipProtocol: UInt8
    var local: IPAddress
    var localPort: UInt16
    var remote: IPAddress
    var remotePort: UInt16
  }
  struct Bound: Hashable {
    var ipProtocol: UInt8
    var local: IPAddress
    var localPort: UInt16
  }
  struct Wildcard: Hashable {
    var ipProtocol: UInt8
    var port: UInt16
    /// A `::` socket (IPv6 table) takes IPv4 too unless IPV6_V6ONLY, which /proc does not show.
    var fromIPv6Table: Bool
  }

  /// Connected sockets (TCP connections, connected UDP) by both endpoints.
  var connected: [Endpoints: UInt64] = [:]
  /// TCP listeners and unconnected UDP sockets bound to one address.
  var bound: [Bound: UInt64] = [:]
  /// Listeners and unconnected UDP sockets bound to every address.
  var wildcard: [Wildcard: UInt64] = [:]

  static let tcpListen: UInt8 = 0x0A

  /// Reads the four tables under `procRoot`; a table that cannot be read is left out.
  static func read(procRoot: SystemPath) -> SocketTable {
    var table = SocketTable()
    for (file, ipProtocol, v6) in [
      ("tcp", UInt8(6), false), ("tcp6", 6, true), ("udp", 17, false), ("udp6", 17, true),
    ] {
      guard
        let bytes = try? SmallFile.read(procRoot.appending("net").appending(file), limit: 1 << 28)
      else {
        continue
      }
      table.parse(bytes, ipProtocol: ipProtocol, fromIPv6Table: v6)
    }
    return table
  }

  /// Adds the entries of one /proc/net table. Addresses there are hex of the in-memory 32-bit
  /// words: `0100007F` is 127.0.0.1 on a little-endian machine.
  mutating func parse(_ bytes: [UInt8], ipProtocol: UInt8, fromIPv6Table: Bool) {
    var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: true)[...]
    _ = lines.popFirst()  // the header
    for line in lines {
      let fields = line.split(separator: 0x20, omittingEmptySubsequences: true)
      guard fields.count >= 10,
        let local = Self.endpoint(fields[1]), let remote = Self.endpoint(fields[2]),
        let state = Self.hex(fields[3]), let inode = UInt64(decimal: fields[9]), inode != 0
      else { continue }
      let isListener = ipProtocol == 6 && state == UInt64(Self.tcpListen)
      let remoteUnset = remote.address.isUnspecified && remote.port == 0
      if !isListener, !remoteUnset {
        connected[
          Endpoints(
            ipProtocol: ipProtocol, local: local.address, localPort: local.port,
            remote: remote.address, remotePort: remote.port)] = inode
      } else if ipProtocol == 17 || isListener {
        if local.address.isUnspecified {
          wildcard[
            Wildcard(ipProtocol: ipProtocol, port: local.port, fromIPv6Table: fromIPv6Table)] =
            inode
        } else {
          bound[Bound(ipProtocol: ipProtocol, local: local.address, localPort: local.port)] = inode
        }
      }
    }
  }

  /// The socket inode for traffic between `local:localPort` and `remote:remotePort`: a
  /// connected socket first, then one bound to the local address, then one bound to all.
  func inode(
    ipProtocol: UInt8, local: IPAddress, localPort: UInt16, remote: IPAddress, remotePort: UInt16
  ) -> UInt64? {
    if let inode = connected[
      Endpoints(
        ipProtocol: ipProtocol, local: local, localPort: localPort, remote: remote,
        remotePort: remotePort)]
    {
      return inode
    }
    if let inode = bound[Bound(ipProtocol: ipProtocol, local: local, localPort: localPort)] {
      return inode
    }
    if let inode = wildcard[Wildcard(ipProtocol: ipProtocol, port: localPort, fromIPv6Table: true)] {
      return inode
    }
    if local.isIPv4,
      let inode = wildcard[Wildcard(ipProtocol: ipProtocol, port: localPort, fromIPv6Table: false)]
    {
      return inode
    }
    return nil
  }

  var inodes: Set<UInt64> {
    Set(connected.values).union(bound.values).union(wildcard.values)
  }

  static func endpoint(_ field: ArraySlice<UInt8>) -> (address: IPAddress, port: UInt16)? {
    guard let colon = field.firstIndex(of: 0x3A), let port = hex(field[(colon + 1)...]),
      port <= 0xFFFF
    else { return nil }
    let addressHex = field[..<colon]
    var words: [UInt32] = []
    var cursor = addressHex.startIndex
    while cursor < addressHex.endIndex {
      let end =
        addressHex.index(cursor, offsetBy: 8, limitedBy: addressHex.endIndex) ?? addressHex.endIndex
      guard end - cursor == 8, let word = hex(addressHex[cursor..<end]) else { return nil }
      // The kernel printed the word as it sits in memory: its native bytes are network order.
      words.append(UInt32(truncatingIfNeeded: word))
      cursor = end
    }
    var network: [UInt8] = []
    for word in words { withUnsafeBytes(of: word) { network.append(contentsOf: $0) } }
    switch network.count {
    case 4:
      return (
        IPAddress(bytes: [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + network), UInt16(port)
      )
    case 16: return (IPAddress(bytes: network), UInt16(port))
    default: return nil
    }
  }

  static func hex(_ field: ArraySlice<UInt8>) -> UInt64? {
    guard !field.isEmpty, field.count <= 16 else { return nil }
    var value: UInt64 = 0
    for c in field {
      let digit: UInt8
      switch c {
      case 0x30...0x39: digit = c - 0x30
      case 0x41...0x46: digit = c - 0x41 + 10
      case 0x61...0x66: digit = c - 0x61 + 10
      default: return nil
      }
      value = value << 4 | UInt64(digit)
    }
    return value
  }
}

extension UInt64 {
  init?(decimal field: some Collection<UInt8>) {
    guard !field.isEmpty, field.count <= 19 else { return nil }
    var value: UInt64 = 0
    for c in field {
      guard c >= 0x30, c <= 0x39 else { return nil }
      value = value * 10 + UInt64(c - 0x30)
    }
    self = value
  }
}

extension Int32 {
  /// A /proc entry's name as a pid: digits only.
  init?(decimalDigits name: some Collection<UInt8>) {
    guard let value = UInt64(decimal: name), value <= UInt64(Int32.max) else { return nil }
    self = Int32(value)
  }
}

/// Which process holds which socket inode: the `socket:[INODE]` links under /proc/PID/fd.
/// Reading every descriptor of every process is the expensive part of attribution, so a scan
/// stops as soon as every inode it was asked for is found.
package struct SocketInodeOwners {
  package var owners: [UInt64: Int32] = [:]
  /// Process names by pid, read when a pid is first needed after a scan.
  var commands: [Int32: String?] = [:]

  /// Scans /proc/*/fd until every inode in `wanted` is found (or every process was read).
  package init() {}

  package mutating func scan(procRoot: SystemPath, wanted: Set<UInt64>) {
    var remaining = wanted
    guard let directory = try? OpenDirectory(procRoot) else { return }
    // Names are read where readdir left them and links into one buffer: the walk allocates
    // per process (its descriptor directory), never per descriptor.
    let link = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
    defer { link.deallocate() }
    try? directory.forEachEntry { entry in
      guard let pid = Int32(decimalDigits: entry.name),
        let fds = try? directory.directory(entry, appending: "fd")
      else { return true }
      try? fds.forEachEntry { fdEntry in
        guard fdEntry.name.first != 0x2E, let count = try? fds.symbolicLink(fdEntry, into: link),
          let inode = Self.socketInode(UnsafeRawBufferPointer(rebasing: link[..<count]))
        else { return true }
        if owners[inode] == nil { owners[inode] = pid }
        remaining.remove(inode)
        return true
      }
      return wanted.isEmpty || !remaining.isEmpty
    }
  }

  /// The inode a `socket:[12345]` link names; nil for any other target.
  static func socketInode(_ link: UnsafeRawBufferPointer) -> UInt64? {
    let count = link.count
    guard count > 9, link[0] == 0x73, link[6] == 0x3A, link[7] == 0x5B, link[count - 1] == 0x5D else { return nil }
    return UInt64(decimal: link[8..<(count - 1)])
  }

  mutating func command(pid: Int32, procRoot: SystemPath) -> String? {
    if let known = commands[pid] { return known }
    let path = procRoot.appending(String(pid)).appending("comm")
    let text: String? = (try? SmallFile.read(path, limit: 256)).map {
      String(decoding: $0.trimmingASCIIWhitespace(), as: UTF8.self)
    }
    commands[pid] = text
    return text
  }
}

/// Finds the process behind each flow: socket inodes from /proc/net mapped to pids through
/// /proc/PID/fd. Rescans only when a flow misses the tables it has, and at most once per
/// `minimumInterval`, so a busy host does not pay for a /proc walk per new connection.
package final class SocketOwnerResolver {
  package let procRoot: SystemPath
  package let minimumInterval: Duration
  private var sockets = SocketTable()
  private var inodeOwners = SocketInodeOwners()
  private var lastScan: Int64?
  /// How many times /proc was walked (for tests and the cost note).
  package private(set) var scans = 0

  package init(procRoot: SystemPath = "/proc", minimumInterval: Duration = .milliseconds(200)) {
    self.procRoot = procRoot
    self.minimumInterval = minimumInterval
  }

  /// Reads the socket tables again, then walks /proc/*/fd until the owners of the sockets that
  /// `flows` need are known (owners found before are kept while their sockets exist). With no
  /// flows (the start of a capture) it learns the owner of every socket, so flows of sockets
  /// that already exist resolve without another walk.
  func rescan(for flows: [Flow], at monotonicNanoseconds: Int64) {
    sockets = SocketTable.read(procRoot: procRoot)
    let present = sockets.inodes
    inodeOwners.owners = inodeOwners.owners.filter { present.contains($0.key) }
    var wanted = Set<UInt64>()
    if flows.isEmpty { wanted = present }
    for flow in flows {
      for (local, localPort, remote, remotePort) in [
        (flow.localAddress, flow.localPort, flow.remoteAddress, flow.remotePort),
        (flow.remoteAddress, flow.remotePort, flow.localAddress, flow.localPort),
      ] {
        if let inode = sockets.inode(
          ipProtocol: flow.ipProtocol, local: local, localPort: localPort, remote: remote,
          remotePort: remotePort), inodeOwners.owners[inode] == nil
        {
          wanted.insert(inode)
        }
        if flow.localBy != .firstPacket { break }
      }
    }
    if !wanted.isEmpty { inodeOwners.scan(procRoot: procRoot, wanted: wanted) }
    inodeOwners.commands.removeAll(keepingCapacity: true)
    lastScan = monotonicNanoseconds
    scans += 1
  }

  /// Whether the rate limit allows a rescan at this time.
  package func mayRescan(at monotonicNanoseconds: Int64) -> Bool {
    guard let lastScan else { return true }
    return monotonicNanoseconds - lastScan >= minimumInterval.nanoseconds
  }

  /// When the next rescan is allowed (nil: now).
  package func nextRescan() -> Int64? {
    lastScan.map { $0 + minimumInterval.nanoseconds }
  }

  /// The owner of `flow` in the tables read last. A flow whose local end was only guessed
  /// (first packet) is also tried the other way round.
  func owner(of flow: Flow) -> (owner: SocketOwner, reversed: Bool)? {
    if let owner = owner(
      flow.ipProtocol, flow.localAddress, flow.localPort, flow.remoteAddress, flow.remotePort)
    {
      return (owner, false)
    }
    if flow.localBy == .firstPacket,
      let owner = owner(
        flow.ipProtocol, flow.remoteAddress, flow.remotePort, flow.localAddress, flow.localPort)
    {
      return (owner, true)
    }
    return nil
  }

  private func owner(
    _ ipProtocol: UInt8, _ local: IPAddress, _ localPort: UInt16, _ remote: IPAddress,
    _ remotePort: UInt16
  ) -> SocketOwner? {
    guard
      let inode = sockets.inode(
        ipProtocol: ipProtocol, local: local, localPort: localPort, remote: remote,
        remotePort: remotePort),
      let pid = inodeOwners.owners[inode]
    else { return nil }
    return SocketOwner(pid: pid, command: inodeOwners.command(pid: pid, procRoot: procRoot))
  }

  /// Attributes what can be attributed in `table`. Pending flows are tried against the tables
  /// in hand; when some miss, /proc is read again if the rate limit allows (or `force`), and
  /// what still misses then is unmatched. Returns whether /proc was read.
  @discardableResult
  package func resolve(
    _ table: inout FlowTable, at monotonicNanoseconds: Int64, wall: Timestamp, force: Bool
  )
    -> Bool
  {
    guard table.pendingCount > 0 else { return false }
    let stillPending = table.attribute(final: false, retryUnmatched: false, now: wall) {
      owner(of: $0)
    }
    guard stillPending > 0, force || mayRescan(at: monotonicNanoseconds) else { return false }
    rescan(
      for: table.flows(where: {
        switch $0.attribution {
        case .pending: true
        case .unmatched(let since): $0.lastSeen > since
        default: false
        }
      }), at: monotonicNanoseconds)
    table.attribute(final: true, retryUnmatched: true, now: wall) { owner(of: $0) }
    return true
  }
}
