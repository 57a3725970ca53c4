import VPNStatModel
import VPNStatSystem

/// What vpnstat has learnt about each interface instance: its sysfs facts, read once per new
/// ifindex (never per sample), and the class they decide.
package struct InterfaceCatalog {
  package let root: SysfsRoot
  package var classifier: Classifier
  /// The instances sorted by ifindex, each with the name it had: an instance is an ifindex and
  /// a name, and a new name at a known ifindex replaces the old one. A sorted table rather than
  /// a Dictionary: a dump lists links in ifindex order, so new instances are appended; a lookup
  /// (a report makes several per interface: classifying, WireGuard, the session's tunnel) is a
  /// binary search on integers, cheaper than hashing a name; and a one-off command pays no
  /// run-time set-up of a Dictionary type of its own (more than classifying a small machine).
  private var known: [Instance] = []
  /// How many times sysfs facts were read; tests check that it grows only with new instances.
  package private(set) var factReads = 0

  private struct Instance {
    var index: Int32
    var name: InterfaceName
    var entry: Entry
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

  /// Makes room for `count` instances at once: a catalog grown one insertion at a time copies
  /// itself into fresh memory at every doubling, and each new page is a fault.
  package mutating func reserve(_ count: Int) { known.reserveCapacity(count) }

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

  /// The entry of an instance already classified (by `entry(for:)`), without reading anything.
  package func classified(index: Int32, name: InterfaceName) -> Entry? {
    let at = position(of: index)
    guard at < known.count, known[at].index == index, known[at].name == name else { return nil }
    return known[at].entry
  }

  /// Where `index` is in `known`, or where it would go.
  private func position(of index: Int32) -> Int {
    if let last = known.last, last.index < index { return known.count }
    // Ifindexes are mostly dense from 1 (lo): the instance is then at index − 1.
    let guess = Int(index) - 1
    if guess >= 0, guess < known.count, known[guess].index == index { return guess }
    var low = 0
    var high = known.count
    while low < high {
      let middle = (low + high) / 2
      if known[middle].index < index { low = middle + 1 } else { high = middle }
    }
    return low
  }

  /// An entry's plain fields, read where the entry lies: what is asked of every interface at every
  /// sample, for which a copy of the entry (its facts' strings) would cost more than the lookup.
  package struct Verdict: Sendable {
    package var interfaceClass: InterfaceClass
    package var evidence: ClassEvidence
    /// The link speed in Mbit/s where the kernel knows a real one (`InterfaceFacts.speedMbps`).
    package var speedMbps: UInt64?
  }

  /// `entry(for:)`'s class, evidence and speed.
  package mutating func verdict(for sample: InterfaceSample) -> Verdict {
    // Two statements: in `verdict(at: position(classifying: …))` Swift reads `self` for the call
    // before the argument inserts into `known`, and the position is then past the old table's end.
    let at = position(classifying: sample.name, index: sample.index, link: sample.link)
    return verdict(at: at)
  }

  /// The verdict on the interface at `position` in `interfaces` (a sample's): read from the
  /// array where it lies, since an interface passed on its own is a copy (its name and kind).
  package mutating func verdict(of interfaces: [InterfaceSample], at position: Int) -> Verdict {
    let index = interfaces[position].index
    var at = self.position(of: index)
    if !holds(at, index: index, name: interfaces[position].name) {
      at = classify(interfaces[position].name, index: index, link: interfaces[position].link, at: at)
    }
    return verdict(at: at)
  }

  private func verdict(at position: Int) -> Verdict {
    Verdict(
      interfaceClass: known[position].entry.interfaceClass, evidence: known[position].entry.evidence,
      speedMbps: known[position].entry.facts.speedMbps)
  }

  private mutating func entry(name: InterfaceName, index: Int32, link: LinkAttributes) -> Entry {
    let at = position(classifying: name, index: index, link: link)
    return known[at].entry
  }

  /// Where the instance is in `known`, classified first if it is not there yet.
  private mutating func position(classifying name: InterfaceName, index: Int32, link: LinkAttributes) -> Int {
    let at = position(of: index)
    if holds(at, index: index, name: name) { return at }
    return classify(name, index: index, link: link, at: at)
  }

  /// Whether `known[at]` is the instance: its ifindex with its name (a new name at a known
  /// ifindex is another interface, classified anew).
  private func holds(_ at: Int, index: Int32, name: InterfaceName) -> Bool {
    at < known.count && known[at].index == index && known[at].name == name
  }

  /// Classifies an instance `known` lacks (or has under another name) and puts it at `at`, where
  /// `position(of:)` says it goes; returns its position.
  private mutating func classify(_ name: InterfaceName, index: Int32, link: LinkAttributes, at: Int) -> Int {
    let found = at < known.count && known[at].index == index
    let entry: Entry
    if let (interfaceClass, evidence) = classifier.classify(name, kind: link.kind, arpType: link.arpType) {
      entry = Entry(
        facts: InterfaceFacts(kind: link.kind, arpType: link.arpType, isVirtual: true),
        interfaceClass: interfaceClass, evidence: evidence)
    } else {
      var facts = InterfaceFacts.read(name, in: root)
      factReads += 1
      facts.kind = link.kind
      if facts.arpType == nil { facts.arpType = link.arpType }
      let (interfaceClass, evidence) = classifier.classify(name, facts)
      entry = Entry(facts: facts, interfaceClass: interfaceClass, evidence: evidence)
    }
    if found {
      known[at] = Instance(index: index, name: name, entry: entry)
    } else if at == known.count {
      // A dump lists links by ifindex, so a first sample adds each at the end: an append, not
      // an insert (Array's insert goes through replaceSubrange, some 270 instructions a link).
      known.append(Instance(index: index, name: name, entry: entry))
    } else {
      known.insert(Instance(index: index, name: name, entry: entry), at: at)
    }
    return at
  }

  /// Forgets instances absent from `sample`, so a long-running sampler's memory stays bounded.
  package mutating func forgetAbsent(from sample: CounterSample) {
    guard known.count > sample.interfaces.count else { return }
    // Both sorted by ifindex, walked together.
    let present = sample.interfaces.map { (index: $0.index, name: $0.name) }.sorted { $0.index < $1.index }
    var next = 0
    known = known.filter { instance in
      while next < present.count && present[next].index < instance.index { next += 1 }
      return next < present.count && present[next].index == instance.index && present[next].name == instance.name
    }
  }
}
