import VPNStatModel
import VPNStatSystem

/// The reference reader: `/sys/class/net/<if>/statistics/*`, 64-bit, works in any sandbox.
/// Its root is injectable, so tests read fixture trees through exactly this code.
///
/// The attribute files of each interface are opened once and kept: every later sample reads
/// them again with `pread` (one system call per value instead of three), which is what makes a
/// sysfs sample of a thousand interfaces cost milliseconds rather than tens of them. A kept file
/// is never read as another device's: the files are kept per directory entry, and an entry whose
/// identity changed (a device deleted and created again under the same name, or renamed away and
/// replaced) is opened afresh; a deleted device's files answer with an error, never a value.
/// Files are kept for as many interfaces as the descriptors left to the process allow with room
/// to spare; those beyond are opened, read and closed at each sample, slower but all there.
package struct SysfsCounterSource: CounterSource {
  package var kind: CounterSourceKind { .sysfs }
  package let root: SysfsRoot
  /// The open files of the interfaces of the last sample, by name.
  private var kept = KeptFiles()

  /// For how many interfaces files are kept open (each keeps up to 6).
  let keepLimit: Int

  package init(root: SysfsRoot = .system, keepLimit: Int? = nil) {
    self.root = root
    // A quarter of what is left is kept for everything else the process opens (a database,
    // sockets, the recorder's listener and its clients).
    self.keepLimit = keepLimit ?? max(0, CurrentProcess.openFilesLeft * 3 / 4 / 6)
  }

  /// How many interfaces have their files open now (tests look).
  var keptCount: Int { kept.byName.count }

  package mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
    let listing: [(name: InterfaceName, identity: UInt64)]
    do {
      listing = try root.interfaceEntries()
    } catch let error as Errno {
      throw error.meansNotPermitted
        ? .notPermitted(.sysfs, "\(root.path): \(error)")
        : .unavailable(.sysfs, "\(root.path): \(error)")
    } catch {
      throw .unavailable(.sysfs, "\(root.path): \(error)")
    }
    var interfaces: [InterfaceSample] = []
    var problems: [SampleProblem] = []
    interfaces.reserveCapacity(listing.count)
    var fresh: [InterfaceName: InterfaceFiles] = [:]
    fresh.reserveCapacity(listing.count)
    let taken = clock.now()
    var buffer = ReadBuffer()
    for (name, identity) in listing.sorted(by: { $0.name < $1.name }) {
      var result: Result<InterfaceSample, ReadFailure>?
      if let files = kept.byName[name], files.identity == identity {
        result = files.read(name, root: root, buffer: &buffer)
        if case .success = result { fresh[name] = files }
        // A kept file that failed (the device went away) is dropped, and the name opened again.
        if case .failure(.vanished) = result { result = nil }
      }
      if result == nil {
        switch InterfaceFiles.open(name, identity: identity, root: root) {
        case .success(let files):
          result = files.read(name, root: root, buffer: &buffer)
          if case .success = result, fresh.count < keepLimit { fresh[name] = files }
        case .failure(let failure):
          result = .failure(failure)
        }
      }
      switch result {
      case .success(let sample): interfaces.append(sample)
      case .failure(.unreadable(let message)): problems.append(SampleProblem(name: name, message: message))
      case .failure(.vanished), nil: continue
      }
    }
    // The files of interfaces gone from the listing (or unreadable now) are closed.
    kept.byName = fresh
    return CounterSample(interfaces: interfaces, source: .sysfs, problems: problems, taken: taken)
  }

  enum ReadFailure: Error {
    /// The interface disappeared while being read: leave it out, silently.
    case vanished
    /// A counter is missing or holds garbage: leave it out and say so.
    case unreadable(String)
  }

  /// A small buffer for the values, reused for every read of a sample (sysfs values are short).
  struct ReadBuffer: ~Copyable {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
    deinit { bytes.deallocate() }
  }
}

/// The open files of the interfaces a sysfs reader has seen: closed when it forgets them.
final class KeptFiles {
  var byName: [InterfaceName: InterfaceFiles] = [:]
}

/// One interface's attribute files, open: the four counters, `operstate`, and `carrier` once a
/// state of `unknown` makes it needed. Its ifindex is read once, when they are opened: a kept
/// file belongs to one device for its whole life.
final class InterfaceFiles {
  let identity: UInt64
  let index: Int32
  private let counters: [FileDescriptor]
  private let operstate: FileDescriptor?
  private var carrier: FileDescriptor?
  private var carrierTried = false

  /// Errors and drops are left to the netlink reader, and `flags` too: an interface that is
  /// administratively down has `operstate` down, so only the counters and the state are read.
  static let counterAttributes = [
    "statistics/rx_bytes", "statistics/tx_bytes", "statistics/rx_packets", "statistics/tx_packets",
  ]

  private init(identity: UInt64, index: Int32, counters: [FileDescriptor], operstate: FileDescriptor?) {
    self.identity = identity
    self.index = index
    self.counters = counters
    self.operstate = operstate
  }

  deinit {
    for fd in counters { fd.close() }
    operstate?.close()
    carrier?.close()
  }

  /// Opens the files of `name`, reading its ifindex. An interface whose directory or ifindex is
  /// gone has vanished (one being deleted loses its attributes, then its directory, and the
  /// kernel answers EINVAL for a device no longer alive); one still whole with a missing or
  /// broken counter is unreadable.
  static func open(_ name: InterfaceName, identity: UInt64, root: SysfsRoot) -> Result<
    InterfaceFiles, SysfsCounterSource.ReadFailure
  > {
    func isGone() -> Bool {
      guard SmallFile.exists(root.path.appending(name)) else { return true }
      do {
        _ = try root.unsigned(name, "ifindex")
        return false
      } catch let error as Errno {
        // Out of descriptors (EMFILE, ENFILE) or memory says nothing of the device: it is there,
        // unread, and said so rather than left out as if it had gone.
        return error == .noSuchFile || error == .noSuchDevice || error == .invalidArgument
      } catch {
        return false  // readable but garbage: the interface is there and broken
      }
    }
    let index: UInt64
    do {
      index = try root.unsigned(name, "ifindex")
    } catch let error as Errno {
      return isGone() ? .failure(.vanished) : .failure(.unreadable("ifindex: \(error)"))
    } catch {
      return isGone() ? .failure(.vanished) : .failure(.unreadable("\(error)"))
    }
    guard index <= UInt64(Int32.max) else { return .failure(.unreadable("ifindex out of range")) }
    var counters: [FileDescriptor] = []
    counters.reserveCapacity(counterAttributes.count)
    for attribute in counterAttributes {
      do {
        // A regular file, opened without waiting: a FIFO in a fixture tree would hold the
        // sample (and `status`) for ever.
        counters.append(try FileDescriptor.openRegularFile(root.attribute(name, attribute)))
      } catch let error as NotARegularFile {
        for fd in counters { fd.close() }
        return .failure(.unreadable(error.description))
      } catch {
        for fd in counters { fd.close() }
        return isGone() ? .failure(.vanished) : .failure(.unreadable("\(attribute): \(error)"))
      }
    }
    let operstate = try? FileDescriptor.openRegularFile(root.attribute(name, "operstate"))
    return .success(
      InterfaceFiles(identity: identity, index: Int32(index), counters: counters, operstate: operstate))
  }

  /// Reads the counters and the state again.
  func read(_ name: InterfaceName, root: SysfsRoot, buffer: inout SysfsCounterSource.ReadBuffer) -> Result<
    InterfaceSample, SysfsCounterSource.ReadFailure
  > {
    var values: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    for (i, fd) in counters.enumerated() {
      let value: UInt64
      do {
        let count = try SmallFile.reread(fd, into: buffer.bytes)
        let bytes = UnsafeRawBufferPointer(rebasing: buffer.bytes[0..<count])
        guard let parsed = parseUnsigned(Self.trimmed(bytes)) else {
          let attribute = Self.counterAttributes[i]
          return .failure(
            .unreadable(SysfsValueError(attribute: attribute, bytes: Array(bytes.prefix(32))).description))
        }
        value = parsed
      } catch {
        // ENODEV: the device is gone (a kept sysfs file outlives its device only as an error).
        return .failure(.vanished)
      }
      switch i {
      case 0: values.0 = value
      case 1: values.1 = value
      case 2: values.2 = value
      default: values.3 = value
      }
    }
    var link = LinkAttributes()
    link.operState = value(operstate, buffer: &buffer).flatMap { OperState(sysfs: $0) }
    if link.operState == .unknown || link.operState == nil {
      // tun, ifb and loopback say "unknown"; carrier tells (it fails with EINVAL while down).
      if !carrierTried {
        carrier = try? FileDescriptor.openRegularFile(root.attribute(name, "carrier"))
        carrierTried = true
      }
      link.carrier = value(carrier, buffer: &buffer).flatMap { parseUnsigned($0) }.map { $0 != 0 }
    }
    return .success(
      InterfaceSample(
        name: name, index: index,
        counters: InterfaceCounters(
          TrafficCounts(rxBytes: values.0, txBytes: values.1, rxPackets: values.2, txPackets: values.3)),
        width: .bits64, link: link))
  }

  /// The value of a kept file, without the whitespace around it; nil when it cannot be read.
  /// Valid until the next read into `buffer`.
  private func value(_ fd: FileDescriptor?, buffer: inout SysfsCounterSource.ReadBuffer) -> UnsafeRawBufferPointer? {
    guard let fd, let count = try? SmallFile.reread(fd, into: buffer.bytes) else { return nil }
    return Self.trimmed(UnsafeRawBufferPointer(rebasing: buffer.bytes[0..<count]))
  }

  /// `bytes` without the ASCII whitespace at either end (sysfs values end in a newline).
  static func trimmed(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
    func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D }
    var start = 0
    var end = bytes.count
    while start < end, isSpace(bytes[start]) { start += 1 }
    while end > start, isSpace(bytes[end - 1]) { end -= 1 }
    return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
  }
}
