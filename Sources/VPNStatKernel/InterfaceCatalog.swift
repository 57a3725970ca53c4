import VPNStatModel
import VPNStatSystem

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
    // Room for every interface of a sample at once, rather than growing one by one.
    if known.isEmpty {
      known.reserveCapacity(64)
    } else if known.count == known.capacity {
      known.reserveCapacity(known.count * 4)
    }
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
