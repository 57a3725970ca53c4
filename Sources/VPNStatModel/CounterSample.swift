/// The counters of one interface instance, as one reader saw them: its traffic, and errors and
/// drops where the reader gets them cheaply (nil when unknown).
public struct InterfaceCounters: Hashable, Sendable {
  public var traffic: TrafficCounts
  public var rxErrors: UInt64?
  public var txErrors: UInt64?
  public var rxDropped: UInt64?
  public var txDropped: UInt64?

  public init(
    _ traffic: TrafficCounts, rxErrors: UInt64? = nil, txErrors: UInt64? = nil, rxDropped: UInt64? = nil,
    txDropped: UInt64? = nil
  ) {
    self.traffic = traffic
    self.rxErrors = rxErrors
    self.txErrors = txErrors
    self.rxDropped = rxDropped
    self.txDropped = txDropped
  }
}

/// How many bits a reader's counters have: 32-bit counters wrap at 2³² and are read as such.
public enum CounterWidth: Int, Hashable, Sendable, CaseIterable {
  case bits32 = 32
  case bits64 = 64
}

/// Which reader produced a sample.
public enum CounterSourceKind: String, Hashable, Sendable, CaseIterable {
  case netlink
  case sysfs
  case getifaddrs
}

/// One interface in one sample: which instance (name and ifindex) and its counters.
public struct InterfaceSample: Hashable, Sendable {
  public var name: InterfaceName
  public var index: Int32
  public var counters: InterfaceCounters
  public var width: CounterWidth
  /// What the link looked like when read, for state and classification.
  public var link: LinkAttributes

  public init(
    name: InterfaceName, index: Int32, counters: InterfaceCounters, width: CounterWidth,
    link: LinkAttributes = LinkAttributes()
  ) {
    self.name = name
    self.index = index
    self.counters = counters
    self.width = width
    self.link = link
  }
}

/// What the kernel says about a link besides its counters. Netlink fills all of it in one dump;
/// sysfs and getifaddrs fill what they can.
public struct LinkAttributes: Hashable, Sendable {
  /// The ARPHRD type (`ifi_type`, sysfs `type`).
  public var arpType: UInt16?
  /// `ifi_flags` (IFF_UP, IFF_RUNNING, IFF_LOWER_UP …).
  public var flags: UInt32?
  /// RFC 2863 operational state (`IFLA_OPERSTATE`, sysfs `operstate`).
  public var operState: OperState?
  /// The rtnetlink link kind (`IFLA_INFO_KIND`: tun, wireguard, veth, ifb …).
  public var kind: String?
  /// sysfs `carrier` where it was read (1 = carrier).
  public var carrier: Bool?

  /// IFF_UP: administratively up (what `ip link set up` sets and the enforcer clears).
  public var isAdministrativelyUp: Bool { (flags ?? 0) & 0x1 != 0 }

  public init(
    arpType: UInt16? = nil, flags: UInt32? = nil, operState: OperState? = nil, kind: String? = nil,
    carrier: Bool? = nil
  ) {
    self.arpType = arpType
    self.flags = flags
    self.operState = operState
    self.kind = kind
    self.carrier = carrier
  }
}

/// RFC 2863 operational states, as `IFLA_OPERSTATE` numbers them and sysfs spells them.
public enum OperState: UInt8, Hashable, Sendable {
  case unknown = 0
  case notPresent = 1
  case down = 2
  case lowerLayerDown = 3
  case testing = 4
  case dormant = 5
  case up = 6

  public init?(sysfs text: UnsafeRawBufferPointer) {
    // Compared as bytes: a sysfs reader reads this for every interface at every sample.
    for (state, spelled) in Self.sysfsSpellings where spelled.count == text.count && text.elementsEqual(spelled) {
      self = state
      return
    }
    return nil
  }

  private static let sysfsSpellings: [(OperState, [UInt8])] = [
    (.up, Array("up".utf8)), (.down, Array("down".utf8)), (.unknown, Array("unknown".utf8)),
    (.dormant, Array("dormant".utf8)), (.lowerLayerDown, Array("lowerlayerdown".utf8)),
    (.notPresent, Array("notpresent".utf8)), (.testing, Array("testing".utf8)),
  ]
}

/// A problem met while reading one interface, kept with the sample instead of a made-up zero.
public struct SampleProblem: Hashable, Sendable {
  public var name: InterfaceName
  public var message: String
  public init(name: InterfaceName, message: String) {
    self.name = name
    self.message = message
  }
}

/// Every interface one reader saw at one moment, and when that moment was.
public struct CounterSample: Sendable {
  public var interfaces: [InterfaceSample]
  /// The reader that produced the counters (after any fallback).
  public var source: CounterSourceKind
  /// Why the requested reader was not used, when it was not (e.g. netlink refused → sysfs).
  public var fallbackReason: String?
  public var problems: [SampleProblem]
  public var taken: ClockReading

  public init(
    interfaces: [InterfaceSample], source: CounterSourceKind, fallbackReason: String? = nil,
    problems: [SampleProblem] = [], taken: ClockReading
  ) {
    self.interfaces = interfaces
    self.source = source
    self.fallbackReason = fallbackReason
    self.problems = problems
    self.taken = taken
  }
}

/// A reader of interface counters. Each call returns a fresh sample; an interface that vanishes
/// while being read is left out of it (never reported as zero).
public protocol CounterSource {
  var kind: CounterSourceKind { get }
  mutating func sample(at clock: any TimeSource) throws(CounterSourceError) -> CounterSample
}

/// Why a reader could not produce a sample at all.
public enum CounterSourceError: Error, Sendable, CustomStringConvertible {
  case unavailable(CounterSourceKind, String)
  case notPermitted(CounterSourceKind, String)

  public var description: String {
    switch self {
    case .unavailable(let kind, let why): "the \(kind.rawValue) reader is unavailable: \(why)"
    case .notPermitted(let kind, let why): "the \(kind.rawValue) reader is not permitted: \(why)"
    }
  }
}

/// What a person means by "is it up": derived from operstate, flags and carrier, because tun and
/// loopback report operstate `unknown` while passing traffic.
public enum LinkState: String, Hashable, Sendable, CaseIterable {
  case up
  case down
  case dormant
  case lowerLayerDown = "lowerlayerdown"
  case notPresent = "notpresent"
  case testing
  case unknown

  /// Borrowing: the state of a link in a sample, read where it lies (taken, each link's
  /// attributes were copied for it and destroyed after).
  public init(_ link: borrowing LinkAttributes) {
    let iffUp: UInt32 = 0x1
    let iffRunning: UInt32 = 0x40
    let iffLowerUp: UInt32 = 0x10000
    if let flags = link.flags, flags & iffUp == 0 {
      self = .down
      return
    }
    switch link.operState {
    case .up: self = .up
    case .down: self = .down
    case .dormant: self = .dormant
    case .lowerLayerDown: self = .lowerLayerDown
    case .notPresent: self = .notPresent
    case .testing: self = .testing
    case .unknown, nil:
      if let flags = link.flags, flags & (iffRunning | iffLowerUp) != 0 {
        self = .up
      } else if link.carrier == true {
        self = .up
      } else if link.carrier == false {
        self = .down
      } else {
        self = .unknown
      }
    }
  }
}
