import VPNStatModel
import VPNStatSystem

/// The reference reader: `/sys/class/net/<if>/statistics/*`, 64-bit, works in any sandbox.
/// Its root is injectable, so tests read fixture trees through exactly this code.
public struct SysfsCounterSource: CounterSource {
  public var kind: CounterSourceKind { .sysfs }
  public let root: SysfsRoot

  public init(root: SysfsRoot = .system) { self.root = root }

  public mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample {
    let names: [InterfaceName]
    do {
      names = try root.interfaceNames()
    } catch let error as Errno {
      throw error.meansNotPermitted
        ? .notPermitted(.sysfs, "\(root.path): \(error)")
        : .unavailable(.sysfs, "\(root.path): \(error)")
    } catch {
      throw .unavailable(.sysfs, "\(root.path): \(error)")
    }
    var interfaces: [InterfaceSample] = []
    var problems: [SampleProblem] = []
    interfaces.reserveCapacity(names.count)
    let taken = clock.now()
    for name in names.sorted() {
      switch read(name) {
      case .success(let sample): interfaces.append(sample)
      case .failure(.vanished): continue
      case .failure(.unreadable(let message)):
        problems.append(SampleProblem(name: name, message: message))
      }
    }
    return CounterSample(interfaces: interfaces, source: .sysfs, problems: problems, taken: taken)
  }

  enum ReadFailure: Error {
    /// The interface disappeared while being read: leave it out, silently.
    case vanished
    /// A counter is missing or holds garbage: leave it out and say so.
    case unreadable(String)
  }

  func read(_ name: InterfaceName) -> Result<InterfaceSample, ReadFailure> {
    func required(_ attribute: String) throws(ReadFailure) -> UInt64 {
      do {
        return try root.unsigned(name, attribute)
      } catch let error as Errno {
        // An interface being deleted loses its attributes, then its directory, and the kernel
        // answers EINVAL for a device no longer alive. Only an interface that is still whole
        // (its directory and ifindex readable) has a broken counter; otherwise it vanished.
        if isGone() { throw .vanished }
        throw .unreadable("\(attribute): \(error)")
      } catch {
        if isGone() { throw .vanished }
        throw .unreadable("\(error)")
      }
    }
    func isGone() -> Bool {
      guard SmallFile.exists(root.path.appending(name)) else { return true }
      do {
        _ = try root.unsigned(name, "ifindex")
        return false
      } catch is Errno {
        return true
      } catch {
        return false  // readable but garbage: the interface is there and broken
      }
    }
    func optional(_ attribute: String) -> UInt64? { try? root.unsigned(name, attribute) }
    do {
      let index = try required("ifindex")
      // Each sysfs attribute is an open, a read and a close: only what a sample needs is read
      // (errors and drops are left to the netlink reader; the ARPHRD type is a fact the catalog
      // reads once per instance).
      let counters = InterfaceCounters(
        TrafficCounts(
          rxBytes: try required("statistics/rx_bytes"), txBytes: try required("statistics/tx_bytes"),
          rxPackets: try required("statistics/rx_packets"), txPackets: try required("statistics/tx_packets")))
      var link = LinkAttributes()
      link.flags = optional("flags").map { UInt32(truncatingIfNeeded: $0) }
      link.operState = root.text(name, "operstate").flatMap(OperState.init(sysfs:))
      if link.operState == .unknown || link.operState == nil {
        // tun and loopback say "unknown"; carrier tells (it fails with EINVAL while down).
        link.carrier = optional("carrier").map { $0 != 0 }
      }
      guard index <= UInt64(Int32.max) else { return .failure(.unreadable("ifindex out of range")) }
      return .success(
        InterfaceSample(
          name: name, index: Int32(index), counters: counters, width: .bits64, link: link))
    } catch {
      return .failure(error)
    }
  }
}
