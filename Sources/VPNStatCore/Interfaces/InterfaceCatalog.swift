/// What vpnstat has learnt about each interface instance: its sysfs facts, read once per new
/// ifindex (never per sample), and the class they decide.
public struct InterfaceCatalog {
  public let root: SysfsRoot
  public var classifier: Classifier
  private var known: [Key: Entry] = [:]
  /// How many times sysfs facts were read; tests check that it grows only with new instances.
  public private(set) var factReads = 0

  struct Key: Hashable {
    var index: Int32
    var name: InterfaceName
  }

  /// One interface instance as classified.
  public struct Entry: Hashable, Sendable {
    public var facts: InterfaceFacts
    public var interfaceClass: InterfaceClass
    public var evidence: ClassEvidence
  }

  public init(root: SysfsRoot = .system, classifier: Classifier = Classifier()) {
    self.root = root
    self.classifier = classifier
  }

  /// The entry for a sampled interface, reading sysfs only for an instance not seen before and
  /// only when netlink's link kind does not already decide the class.
  public mutating func entry(for sample: InterfaceSample) -> Entry {
    let key = Key(index: sample.index, name: sample.name)
    if let entry = known[key] { return entry }
    var facts: InterfaceFacts
    if Classifier.kindDecides(sample.link.kind) {
      facts = InterfaceFacts(kind: sample.link.kind, arpType: sample.link.arpType, isVirtual: true)
    } else {
      facts = InterfaceFacts.read(sample.name, in: root)
      factReads += 1
      facts.kind = sample.link.kind
      if facts.arpType == nil { facts.arpType = sample.link.arpType }
    }
    let (interfaceClass, evidence) = classifier.classify(sample.name, facts)
    let entry = Entry(facts: facts, interfaceClass: interfaceClass, evidence: evidence)
    known[key] = entry
    return entry
  }

  /// Forgets instances absent from `sample`, so a long-running sampler's memory stays bounded.
  public mutating func forgetAbsent(from sample: CounterSample) {
    guard known.count > sample.interfaces.count else { return }
    let present = Set(sample.interfaces.map { Key(index: $0.index, name: $0.name) })
    known = known.filter { present.contains($0.key) }
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

  public init(_ link: LinkAttributes) {
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
