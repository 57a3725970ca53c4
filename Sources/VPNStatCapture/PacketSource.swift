@preconcurrency import CPcap
import CPcapLoader
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// Why a capture could not start or go on: what kind of trouble (the command line maps each kind
/// to an exit status) and a message for people.
package struct CaptureError: Error, CustomStringConvertible {
  package enum Kind: Sendable {
    /// Capturing needs CAP_NET_RAW, or a file may not be read.
    case notPermitted
    /// No such interface or file, an interface that is not up, no libpcap.
    case unavailable
    /// A filter libpcap rejects.
    case badFilter
    /// A file that is not a capture, or is truncated or corrupt.
    case badFile
    /// The capture file could not be written.
    case cannotWrite
    /// libpcap failed where it never should.
    case internalFailure
  }
  package var kind: Kind
  package var message: String
  package init(_ kind: Kind, _ message: String) {
    self.kind = kind
    self.message = message
  }
  package var description: String { message }

  static func noPermission(_ interface: InterfaceName, _ detail: String) -> CaptureError {
    CaptureError(
      .notPermitted,
      "no permission to capture on '\(interface.terminalText)': capturing needs CAP_NET_RAW "
        + "(run as root, or grant it with 'setcap cap_net_raw=ep' on the binary) (\(TerminalText.sanitize(detail)))"
    )
  }
  static func noSuchInterface(_ interface: InterfaceName) -> CaptureError {
    CaptureError(.unavailable, "no interface named '\(interface.terminalText)'")
  }
  static func badFilter(_ expression: String, _ detail: String) -> CaptureError {
    CaptureError(.badFilter, "bad filter '\(TerminalText.sanitize(expression))': \(TerminalText.sanitize(detail))")
  }
  static func unsupportedLinkType(_ dlt: Int32, where place: String, kind: Kind) -> CaptureError {
    let description =
      pcap_datalink_val_to_description(dlt).map { " (" + String(cString: $0) + ")" } ?? ""
    return CaptureError(
      kind,
      "unsupported link type \(CaptureLinkType.name(dlt: dlt))\(TerminalText.sanitize(description)) in \(place): "
        + "vpnstat reads raw IP, Ethernet and Linux cooked (v1, v2) captures")
  }
}

/// One captured frame. `bytes` points into the source's buffer: valid until its next `next()`.
package struct CapturedPacket {
  package var timestamp: Timestamp
  /// The frame's length on the wire (pcap's `len`); `bytes` may hold less (the snapshot length).
  package var wireLength: Int
  package var bytes: UnsafeRawBufferPointer

  package init(timestamp: Timestamp, wireLength: Int, bytes: UnsafeRawBufferPointer) {
    self.timestamp = timestamp
    self.wireLength = wireLength
    self.bytes = bytes
  }
}

/// Drop counts from libpcap's statistics (`pcap_stats`), since the capture was opened.
package struct CaptureDrops: Hashable, Sendable {
  /// Dropped because the capture buffer was full (`ps_drop`).
  package var dropped: UInt64
  /// Dropped by the interface or its driver (`ps_ifdrop`).
  package var interfaceDropped: UInt64
  package init(dropped: UInt64 = 0, interfaceDropped: UInt64 = 0) {
    self.dropped = dropped
    self.interfaceDropped = interfaceDropped
  }
  static func + (a: CaptureDrops, b: CaptureDrops) -> CaptureDrops {
    CaptureDrops(
      dropped: a.dropped + b.dropped, interfaceDropped: a.interfaceDropped + b.interfaceDropped)
  }
}

/// Where packets come from: a live interface or a capture file. The flow code only sees this,
/// so tests can drive it with packets they made.
package protocol PacketSource: AnyObject {
  var linkType: CaptureLinkType { get }
  /// The next packet, or nil when none is waiting (live) or the file has ended.
  func next() throws(CaptureError) -> CapturedPacket?
}

/// A live capture: a source that can be polled and can report drops.
package protocol LivePacketSource: PacketSource {
  /// A descriptor that becomes readable when packets wait (poll(2)).
  var selectableDescriptor: Int32 { get }
  /// The ifindex of the instance being captured (0 for `any`).
  var interfaceIndex: Int32 { get }
  func drops() -> CaptureDrops?
  func close()
}

/// Shared handling of a libpcap handle: filters, errors.
enum Pcap {
  static func errorText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  static func lastError(_ handle: OpaquePointer) -> String {
    pcap_geterr(handle).map { String(cString: $0) } ?? "unknown libpcap error"
  }

  /// Compiles and installs a BPF filter; a bad one is a usage error with libpcap's words.
  static func apply(filter expression: String, to handle: OpaquePointer) throws(CaptureError) {
    var program = bpf_program()
    let compiled = pcap_compile(handle, &program, expression, 1, PCAP_NETMASK_UNKNOWN)
    guard compiled == 0 else { throw .badFilter(expression, lastError(handle)) }
    defer { pcap_freecode(&program) }
    guard pcap_setfilter(handle, &program) == 0 else {
      throw .badFilter(expression, lastError(handle))
    }
  }

  /// A filter compiled for a link type without any capture (and without privileges), for
  /// `pcap_offline_filter`; the caller frees it (`pcap_freecode`, then `deallocate`).
  static func compiled(filter expression: String, dlt: Int32, snapshotLength: Int32) throws(CaptureError)
    -> UnsafeMutablePointer<bpf_program>
  {
    guard let handle = pcap_open_dead(dlt, snapshotLength) else {
      var why: UnsafePointer<CChar>?
      // Without libpcap the open fails: say what is missing.
      guard vpnstat_pcap_available(&why) != 0 else {
        throw CaptureError(.unavailable, why.map { String(cString: $0) } ?? "libpcap could not be loaded")
      }
      throw CaptureError(.internalFailure, "pcap_open_dead failed")
    }
    defer { pcap_close(handle) }
    let program = UnsafeMutablePointer<bpf_program>.allocate(capacity: 1)
    program.initialize(to: bpf_program())
    guard pcap_compile(handle, program, expression, 1, PCAP_NETMASK_UNKNOWN) == 0 else {
      program.deallocate()
      throw .badFilter(expression, lastError(handle))
    }
    return program
  }

  /// Checks a filter for a link type without any capture (and without privileges).
  static func check(
    filter expression: String, linkType: CaptureLinkType, snapshotLength: Int32 = 262_144
  )
    throws(CaptureError)
  {
    let program = try compiled(filter: expression, dlt: linkType.dlt, snapshotLength: snapshotLength)
    pcap_freecode(program)
    program.deallocate()
  }

  /// A packet's time, or nil when it is before 1970 or after 2262 (a pcapng file can say either):
  /// within that range any two packet times, and a time plus a slice of at most 100 days, are
  /// differences and sums that cannot overflow.
  static func timestamp(seconds: Int, nanoseconds: Int) -> Timestamp? {
    guard seconds >= 0, let time = Timestamp(checkedSeconds: Int64(seconds), nanoseconds: Int64(nanoseconds)),
      time.nanoseconds >= 0
    else { return nil }
    return time
  }

  /// What a packet time outside `timestamp`'s range is called in errors.
  static func badTime(seconds: Int) -> String {
    "a time vpnstat cannot represent (\(seconds) s since 1970; only 1970 to 2262 are)"
  }
}

/// A capture file: a classic pcap file read by `ClassicPcapFile`, anything else by libpcap
/// (pcapng as far as libpcap reads it, the older pcap variants, standard input, a pipe).
package final class PcapFileSource: PacketSource {
  package let path: String
  package let linkType: CaptureLinkType
  /// The snapshot length the file was written with.
  package let snapshotLength: Int32
  /// One of the two: the file read here, or libpcap's handle.
  @exclusivity(unchecked) private var classic: ClassicPcapFile?
  private let handle: OpaquePointer?
  /// The filter `classic`'s packets pass through (libpcap's handle has its own).
  private let program: UnsafeMutablePointer<bpf_program>?
  /// Packets and their captured bytes returned so far (to say where a broken file broke).
  /// Private, so the optimiser sees every access and checks none at run time for each packet.
  private var packetsRead: UInt64 = 0
  private var bytesRead: UInt64 = 0

  /// `libpcapOnly`: libpcap reads even a classic pcap file (for tests that compare the two).
  package init(path: String, filter: String? = nil, libpcapOnly: Bool = false) throws(CaptureError) {
    self.path = path
    let shown = TerminalText.sanitize(path)
    // "-" is standard input (libpcap reads it): `tcpdump -w - | vpnstat flows --read -`.
    if path != "-" {
      do {
        try FileSystem.checkReadable(path)
      } catch {
        if error.meansNotPermitted {
          throw CaptureError(.notPermitted, "cannot read capture file '\(shown)': \(error)")
        }
        throw CaptureError(.unavailable, "cannot read capture file '\(shown)': \(error)")
      }
    }
    // A regular file only, looked at before it is opened: a FIFO is libpcap's to wait on, as it
    // always was. Even a brief open of one wakes a writer waiting in its own open, which, should
    // it write before libpcap opens the FIFO again, writes to no reader (SIGPIPE).
    if path != "-", !libpcapOnly, FileStatus.of(path)?.isRegular == true,
      let fd = try? FileDescriptor.openRegularFile(SystemPath(path))
    {
      if let file = ClassicPcapFile(fd: fd) {
        // Compiled before anything is stored: a bad filter throws from a half-made source, whose
        // deinit does not run, and the file would stay open with its buffer.
        do throws(CaptureError) {
          program = try filter.map { (filter) throws(CaptureError) in
            try Pcap.compiled(filter: filter, dlt: file.dlt, snapshotLength: file.snapshotLength)
          }
        } catch {
          file.close()
          throw error
        }
        classic = file
        handle = nil
        linkType = file.linkType
        snapshotLength = file.snapshotLength
        return
      }
      fd.close()
    }
    var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
    guard
      let opened = pcap_open_offline_with_tstamp_precision(
        path, UInt32(PCAP_TSTAMP_PRECISION_NANO), &errorBuffer)
    else {
      throw CaptureError(
        .badFile,
        "'\(shown)' is not a capture file vpnstat can read: \(TerminalText.sanitize(Pcap.errorText(errorBuffer)))"
      )
    }
    let dlt = pcap_datalink(opened)
    guard let linkType = CaptureLinkType(dlt: dlt) else {
      pcap_close(opened)
      throw .unsupportedLinkType(dlt, where: "'\(shown)'", kind: .badFile)
    }
    self.linkType = linkType
    classic = nil
    program = nil
    handle = opened
    snapshotLength = pcap_snapshot(opened)
    // Fully initialised from here: a throw runs deinit, which closes the handle.
    if let filter { try Pcap.apply(filter: filter, to: opened) }
  }

  deinit {
    classic?.close()
    if let handle { pcap_close(handle) }
    if let program {
      pcap_freecode(program)
      program.deallocate()
    }
  }

  package func next() throws(CaptureError) -> CapturedPacket? {
    let seconds: Int
    let nanoseconds: Int
    let wireLength: UInt32
    let bytes: UnsafeRawBufferPointer
    if classic != nil {
      var record: ClassicPcapFile.Record?
      do throws(ClassicPcapFile.Damage) {
        record = try classic!.next()
        if let program {
          // What libpcap's handle does for its own filter, with the same compiled program.
          while let packet = record, !Self.passes(packet, program) { record = try classic!.next() }
        }
      } catch {
        throw damaged(error.detail)
      }
      guard let record else { return nil }
      (seconds, nanoseconds, wireLength, bytes) = (record.seconds, record.nanoseconds, record.wireLength, record.bytes)
    } else {
      // Locals, not the instance's properties: each access to a class's stored property is an
      // exclusivity check at run time, a tenth of a packet's cost here.
      var header: UnsafeMutablePointer<pcap_pkthdr>?
      var data: UnsafePointer<UInt8>?
      switch pcap_next_ex(handle, &header, &data) {
      case 1:
        guard let header, let data else { return nil }
        // Handles are opened with nanosecond precision: tv_usec holds nanoseconds.
        (seconds, nanoseconds, wireLength) = (header.pointee.ts.tv_sec, header.pointee.ts.tv_usec, header.pointee.len)
        bytes = UnsafeRawBufferPointer(start: data, count: Int(header.pointee.caplen))
      case PCAP_ERROR_BREAK, 0:
        return nil
      default:
        throw damaged(handle.map(Pcap.lastError) ?? "")
      }
    }
    guard let timestamp = Pcap.timestamp(seconds: seconds, nanoseconds: nanoseconds) else {
      throw CaptureError(
        .badFile,
        "capture file '\(TerminalText.sanitize(path))' is corrupt: packet \(packetsRead + 1) has \(Pcap.badTime(seconds: seconds))"
      )
    }
    packetsRead += 1
    bytesRead += UInt64(bytes.count)
    return CapturedPacket(timestamp: timestamp, wireLength: Int(wireLength), bytes: bytes)
  }

  private func damaged(_ detail: String) -> CaptureError {
    CaptureError(
      .badFile,
      "capture file '\(TerminalText.sanitize(path))' is truncated or corrupt after \(packetsRead) packets "
        + "(\(bytesRead) captured bytes): \(TerminalText.sanitize(detail))")
  }

  private static func passes(_ record: ClassicPcapFile.Record, _ program: UnsafeMutablePointer<bpf_program>) -> Bool {
    var header = pcap_pkthdr()
    header.caplen = UInt32(record.bytes.count)
    header.len = record.wireLength
    return pcap_offline_filter(program, &header, record.bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)) != 0
  }
}

/// A live capture on one interface with libpcap: immediate mode (packets reach vpnstat as they
/// come, not when a buffer block fills), non-blocking reads driven by poll(2).
package final class PcapLiveSource: LivePacketSource {
  package let interface: InterfaceName
  package let linkType: CaptureLinkType
  package let interfaceIndex: Int32
  package let selectableDescriptor: Int32
  let handle: OpaquePointer
  private var header: UnsafeMutablePointer<pcap_pkthdr>?
  private var data: UnsafePointer<UInt8>?
  private var closed = false

  /// Opens and activates the capture. Errors: no permission (77, names CAP_NET_RAW), no such
  /// interface (69), bad filter (64), a link type vpnstat cannot parse (69).
  package init(
    interface: InterfaceName, snapshotLength: Int32, bufferSize: Int32 = 4 << 20,
    filter: String? = nil
  ) throws(CaptureError) {
    self.interface = interface
    var errorBuffer = [CChar](repeating: 0, count: Int(PCAP_ERRBUF_SIZE) + 1)
    let created = SystemPath(bytes: interface.bytes).withCString { pcap_create($0, &errorBuffer) }
    guard let created else {
      throw CaptureError(
        .unavailable,
        "cannot capture on '\(interface.terminalText)': \(TerminalText.sanitize(Pcap.errorText(errorBuffer)))"
      )
    }
    pcap_set_snaplen(created, snapshotLength)
    pcap_set_promisc(created, 0)
    pcap_set_immediate_mode(created, 1)
    pcap_set_timeout(created, 100)
    pcap_set_buffer_size(created, bufferSize)
    pcap_set_tstamp_precision(created, PCAP_TSTAMP_PRECISION_NANO)
    let status = pcap_activate(created)
    let cause = Errno.current
    if status < 0 {
      let detail = Pcap.lastError(created)
      pcap_close(created)
      switch status {
      case PCAP_ERROR_PERM_DENIED, PCAP_ERROR_PROMISC_PERM_DENIED:
        throw .noPermission(interface, detail)
      case PCAP_ERROR_NO_SUCH_DEVICE:
        throw .noSuchInterface(interface)
      case PCAP_ERROR_IFACE_NOT_UP:
        throw CaptureError(.unavailable, "interface '\(interface.terminalText)' is not up")
      default:
        let text = detail.isEmpty ? String(cString: pcap_statustostr(status)) : detail
        // libpcap reports a refused socket as a generic error on some paths: errno says which.
        if cause == .notPermitted || cause == .permissionDenied { throw .noPermission(interface, text) }
        throw CaptureError(
          .unavailable,
          "cannot capture on '\(interface.terminalText)': \(TerminalText.sanitize(text))")
      }
    }
    let dlt = pcap_datalink(created)
    guard let linkType = CaptureLinkType(dlt: dlt) else {
      pcap_close(created)
      throw .unsupportedLinkType(dlt, where: "'\(interface.terminalText)'", kind: .unavailable)
    }
    self.linkType = linkType
    handle = created
    if let filter {
      do {
        try Pcap.apply(filter: filter, to: created)
      } catch {
        pcap_close(created)
        throw error
      }
    }
    pcap_setnonblock(created, 1, &errorBuffer)
    selectableDescriptor = pcap_get_selectable_fd(created)
    interfaceIndex = (try? LinkAddresses.index(of: interface)) ?? 0
  }

  deinit { close() }

  package func close() {
    guard !closed else { return }
    closed = true
    pcap_close(handle)
  }

  /// The next waiting packet. A capture whose interface went down or away fails with 69 and
  /// libpcap's words; the caller decides whether to follow the interface.
  package func next() throws(CaptureError) -> CapturedPacket? {
    switch pcap_next_ex(handle, &header, &data) {
    case 1:
      guard let header, let data else { return nil }
      // Opened with nanosecond precision: tv_usec holds nanoseconds.
      let seconds = header.pointee.ts.tv_sec
      guard let timestamp = Pcap.timestamp(seconds: seconds, nanoseconds: header.pointee.ts.tv_usec) else {
        throw CaptureError(
          .unavailable, "capture on '\(interface.terminalText)' stopped: a packet has \(Pcap.badTime(seconds: seconds))"
        )
      }
      return CapturedPacket(
        timestamp: timestamp, wireLength: Int(header.pointee.len),
        bytes: UnsafeRawBufferPointer(start: data, count: Int(header.pointee.caplen)))
    case 0, PCAP_ERROR_BREAK:
      return nil
    default:
      throw CaptureError(
        .unavailable,
        "capture on '\(interface.terminalText)' stopped: \(TerminalText.sanitize(Pcap.lastError(handle)))"
      )
    }
  }

  package func drops() -> CaptureDrops? {
    var stats = pcap_stat()
    guard pcap_stats(handle, &stats) == 0 else { return nil }
    return CaptureDrops(dropped: UInt64(stats.ps_drop), interfaceDropped: UInt64(stats.ps_ifdrop))
  }
}

/// Saves captured frames as a pcap file (nanosecond timestamps), flushed at every report so a
/// reader of the file sees whole intervals.
package final class CaptureFileWriter {
  package let linkType: CaptureLinkType
  private let deadHandle: OpaquePointer
  private let dumper: OpaquePointer
  private var closed = false

  package init(path: String, linkType: CaptureLinkType, snapshotLength: Int32) throws(CaptureError) {
    self.linkType = linkType
    guard
      let dead = pcap_open_dead_with_tstamp_precision(
        linkType.dlt, snapshotLength, UInt32(PCAP_TSTAMP_PRECISION_NANO))
    else { throw CaptureError(.internalFailure, "pcap_open_dead failed") }
    guard let dumper = pcap_dump_open(dead, path) else {
      let cause = Errno.current
      let detail = Pcap.lastError(dead)
      pcap_close(dead)
      throw CaptureError(
        cause.meansNotPermitted ? .notPermitted : .cannotWrite,
        "cannot write capture file '\(TerminalText.sanitize(path))': \(TerminalText.sanitize(detail))"
      )
    }
    deadHandle = dead
    self.dumper = dumper
  }

  deinit { close() }

  package func write(_ packet: CapturedPacket) {
    var header = pcap_pkthdr()
    header.ts.tv_sec = Int(packet.timestamp.nanoseconds.floorDivided(by: 1_000_000_000))
    header.ts.tv_usec = Int(packet.timestamp.nanoseconds - Int64(header.ts.tv_sec) * 1_000_000_000)
    header.caplen = UInt32(packet.bytes.count)
    header.len = UInt32(packet.wireLength)
    let user = UnsafeMutableRawPointer(dumper).assumingMemoryBound(to: UInt8.self)
    pcap_dump(user, &header, packet.bytes.baseAddress?.assumingMemoryBound(to: UInt8.self))
  }

  package func flush() throws(CaptureError) {
    guard pcap_dump_flush(dumper) == 0 else {
      throw CaptureError(.cannotWrite, "cannot write the capture file: \(Errno.current)")
    }
  }

  package func close() {
    guard !closed else { return }
    closed = true
    pcap_dump_close(dumper)
    pcap_close(deadHandle)
  }
}
