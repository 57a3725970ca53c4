import VPNStatModel
import VPNStatSystem

/// What vpnstat has learnt about each interface instance: its sysfs facts, read once per new
/// ifindex (never per sample), and the class they decide.
package struct InterfaceCatalog {
  package let root: SysfsRoot
  package var classifier: Classifier
  private var known: [Key: Entry] = [:]
  /// How many times sysfs facts were read; tests check that it grows only with new instances.
  package private(set) var factReads = 0

  struct Key: Hashable {
    var index: Int32
    var name: InterfaceName
  }

  /// One interface instance as classified.
  package struct Entry: Hashable, Sendable {
    package var facts: InterfaceFacts
    package var interfaceClass: InterfaceClass
    package var evidence: ClassEvidence
  }

  package init(root: SysfsRoot = .system, classifier: Classifier = Classifier()) {
    self.root = root
    self.classifier = classifier
  }

  /// The entry for a sampled interface, reading sysfs only for an instance not seen before and
  /// only when netlink's link kind does not already decide the class.
  package mutating func entry(for sample: InterfaceSample) -> Entry {
    entry(name: sample.name, index: sample.index, link: sample.link)
  }

  /// The entry for a link the kernel described (`NetlinkLinkTable.link(named:)`): how `connect`,
  /// `disconnect` and `enforce` learn the class of the interface they would act on.
  package mutating func entry(for link: LinkRecord) -> Entry {
    entry(name: link.name, index: link.index, link: link.attributes)
  }

  private mutating func entry(name: InterfaceName, index: Int32, link: LinkAttributes) -> Entry {
    let key = Key(index: index, name: name)
    if let entry = known[key] { return entry }
    var facts: InterfaceFacts
    // Room for every interface of a sample at once, rather than growing one by one.
    if known.isEmpty {
      known.reserveCapacity(64)
    } else if known.count == known.capacity {
      known.reserveCapacity(known.count * 4)
    }
    if Classifier.kindDecides(link.kind) {
      facts = InterfaceFacts(kind: link.kind, arpType: link.arpType, isVirtual: true)
    } else {
      facts = InterfaceFacts.read(name, in: root)
      factReads += 1
      facts.kind = link.kind
      if facts.arpType == nil { facts.arpType = link.arpType }
    }
    let (interfaceClass, evidence) = classifier.classify(name, facts)
    let entry = Entry(facts: facts, interfaceClass: interfaceClass, evidence: evidence)
    known[key] = entry
    return entry
  }

  /// Forgets instances absent from `sample`, so a long-running sampler's memory stays bounded.
  package mutating func forgetAbsent(from sample: CounterSample) {
    guard known.count > sample.interfaces.count else { return }
    let present = Set(sample.interfaces.map { Key(index: $0.index, name: $0.name) })
    known = known.filter { present.contains($0.key) }
  }
}
