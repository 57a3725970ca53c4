/// The classes vpnstat reports traffic by; the Apple names are `en0`, `pdp_ip*` and `utun*`.
public enum InterfaceClass: String, Hashable, Sendable, CaseIterable, Comparable {
  case tunnel
  case wifi
  case cellular
  case ethernet
  case loopback
  case other

  /// Display order: the tunnel first, then the links it may run over.
  @inlinable
  public static func < (a: InterfaceClass, b: InterfaceClass) -> Bool { a.rank < b.rank }

  /// The position in `allCases` (sorting a thousand reports compares classes ten thousand times).
  @usableFromInline
  package var rank: Int {
    switch self {
    case .tunnel: 0
    case .wifi: 1
    case .cellular: 2
    case .ethernet: 3
    case .loopback: 4
    case .other: 5
    }
  }
}

/// Which piece of evidence decided a class, strongest first. Printed as `class_by`, so a wrong
/// guess can be traced and corrected with `--class NAME=CLASS`.
public enum ClassEvidence: String, Hashable, Sendable, CaseIterable {
  /// The user's `--class NAME=CLASS`.
  case override
  /// The rtnetlink link kind (`IFLA_INFO_KIND`: tun, wireguard, veth …).
  case kind
  /// sysfs `uevent` DEVTYPE (wlan, wwan, wireguard, bridge …).
  case devtype
  /// sysfs `wireless/` or `phy80211` entry.
  case wireless
  /// sysfs `tun_flags`: a tun or tap device.
  case tunFlags = "tun_flags"
  /// The ARPHRD type (`type`).
  case type
  /// The interface name, by convention.
  case name
  /// Nothing decided it.
  case none
}

/// What is known about an interface that bears on its class. Everything is optional: readers
/// and fixture trees know different things.
public struct InterfaceFacts: Hashable, Sendable {
  public var kind: String?
  public var devtype: String?
  public var hasWireless = false
  public var hasTunFlags = false
  public var arpType: UInt16?
  /// True when sysfs shows no `device` link: a software device, not a NIC.
  public var isVirtual: Bool?
  /// The link speed in Mbit/s where the kernel knows a real one.
  public var speedMbps: UInt64?

  /// Inlinable: made where it is stored (a catalog entry for each link), not built here and
  /// copied out, the local then destroyed.
  @inlinable
  public init(
    kind: String? = nil, devtype: String? = nil, hasWireless: Bool = false,
    hasTunFlags: Bool = false, arpType: UInt16? = nil, isVirtual: Bool? = nil,
    speedMbps: UInt64? = nil
  ) {
    self.kind = kind
    self.devtype = devtype
    self.hasWireless = hasWireless
    self.hasTunFlags = hasTunFlags
    self.arpType = arpType
    self.isVirtual = isVirtual
    self.speedMbps = speedMbps
  }
}

/// Decides an interface's class from its facts by the evidence order of ARCHITECTURE.md:
/// override, then link kind / DEVTYPE / wireless / tun_flags, then ARPHRD type, then the name.
public struct Classifier: Sendable {
  public var overrides: [InterfaceName: InterfaceClass]

  public init(overrides: [InterfaceName: InterfaceClass] = [:]) { self.overrides = overrides }

  /// True when netlink's link kind settles the class, so sysfs need not be read at all.
  public static func kindDecides(_ kind: String?) -> Bool {
    guard let kind else { return false }
    return classByKind(kind) != nil
  }

  /// The class of a link that netlink alone decides, from the name, kind and ARPHRD type: what
  /// `classify(_:_:)` says for it (an override first, then the kind, then a loopback type); nil
  /// when the facts are needed. A loopback device has no DEVTYPE, wireless or tun_flags entry
  /// to outrank its type, so `lo` costs no sysfs reads (14 system calls, a tenth of a small
  /// `status --json`).
  public func classify(_ name: InterfaceName, kind: String?, arpType: UInt16?) -> (
    InterfaceClass, ClassEvidence
  )? {
    let decided: (InterfaceClass, ClassEvidence)
    if let kind, let byKind = Self.classByKind(kind) {
      decided = (byKind, .kind)
    } else if let arpType, Self.classByType(arpType) == .loopback {
      decided = (.loopback, .type)
    } else {
      return nil
    }
    if let chosen = overrides[name] { return (chosen, .override) }
    return decided
  }

  public func classify(_ name: InterfaceName, _ facts: InterfaceFacts) -> (
    InterfaceClass, ClassEvidence
  ) {
    if let chosen = overrides[name] { return (chosen, .override) }
    if let kind = facts.kind, let decided = Self.classByKind(kind) { return (decided, .kind) }
    if let devtype = facts.devtype, let decided = Self.classByDevtype(devtype) {
      return (decided, .devtype)
    }
    if facts.hasWireless { return (.wifi, .wireless) }
    if facts.hasTunFlags { return (.tunnel, .tunFlags) }
    if let type = facts.arpType, let decided = Self.classByType(type) { return (decided, .type) }
    if let decided = Self.classByName(name) { return (decided, .name) }
    if facts.arpType == 1 {
      // Plain Ethernet framing: a NIC is wired Ethernet; a software device (veth, ifb …) is not.
      return (facts.isVirtual == true ? .other : .ethernet, .type)
    }
    return (.other, .none)
  }

  /// Switches rather than tables, like `classByType`: the first `[String: …]` a process makes
  /// has the Swift runtime scan every protocol conformance in the program for `String: Hashable`
  /// (~170,000 instructions, a fifth of a `status --json` on a small machine). By length first,
  /// so a kind is compared with the few of its length, not three dozen; then as one word of its
  /// bytes against words the compiler makes of the literals: two Strings that differ are
  /// compared by a call into the standard library (~20 instructions each, five for an `ifb`).
  static func classByKind(_ kind: String) -> InterfaceClass? {
    // Its bytes as they lie (the UTF-8 view's index steps were most of this function).
    var bytes = kind
    let (count, word) = bytes.withUTF8 { utf8 -> (Int, UInt64) in
      guard utf8.count <= 8 else { return (utf8.count, 0) }
      var word: UInt64 = 0
      for i in utf8.indices { word |= UInt64(utf8[i]) &<< UInt64(8 &* i) }
      return (utf8.count, word)
    }
    switch count {
    case 3:
      switch word {
      case Self.word("tun"), Self.word("sit"), Self.word("gre"), Self.word("vti"), Self.word("ppp"): return .tunnel
      case Self.word("ifb"), Self.word("vrf"), Self.word("hsr"): return .other
      default: return nil
      }
    case 4:
      switch word {
      case Self.word("ovpn"), Self.word("ipip"), Self.word("vti6"), Self.word("xfrm"): return .tunnel
      case Self.word("wwan"): return .cellular
      case Self.word("veth"), Self.word("bond"), Self.word("team"), Self.word("vlan"): return .other
      default: return nil
      }
    case 5:
      switch word {
      case Self.word("vxlan"): return .tunnel
      case Self.word("rmnet"): return .cellular
      case Self.word("dummy"), Self.word("nlmon"): return .other
      default: return nil
      }
    case 6:
      switch word {
      case Self.word("gretap"), Self.word("ip6gre"), Self.word("ip6tnl"), Self.word("geneve"): return .tunnel
      case Self.word("bridge"), Self.word("ipvlan"), Self.word("ipvtap"), Self.word("netkit"), Self.word("batadv"):
        return .other
      default: return nil
      }
    case 7: return word == Self.word("macvlan") || word == Self.word("macvtap") ? .other : nil
    case 8: return word == Self.word("l2tp_eth") ? .tunnel : nil
    case 9: return classByLongKind(kind)
    default: return nil
    }
  }

  /// The kinds of nine bytes, too long for a word.
  private static func classByLongKind(_ kind: String) -> InterfaceClass? {
    switch kind {
    case "wireguard", "ip6gretap": .tunnel
    case "netdevsim": .other
    default: nil
    }
  }

  /// A literal kind's bytes as the word `classByKind` makes of a kind (the first byte lowest):
  /// folded to a constant where it is written.
  @inline(__always)
  private static func word(_ literal: StaticString) -> UInt64 {
    var word: UInt64 = 0
    for i in 0..<min(literal.utf8CodeUnitCount, 8) {
      word |= UInt64(literal.utf8Start[i]) &<< UInt64(8 * i)
    }
    return word
  }

  static func classByDevtype(_ devtype: String) -> InterfaceClass? {
    switch devtype {
    case "wlan": .wifi
    case "wwan": .cellular
    case "wireguard", "ppp": .tunnel
    case "bridge", "vlan", "bond", "macsec": .other
    default: nil
    }
  }

  /// A switch rather than a table: a `[UInt16: InterfaceClass]` would be the only dictionary
  /// of its key type in a `status`, and the runtime's first set-up of one costs more than
  /// classifying every interface of a small machine.
  static func classByType(_ type: UInt16) -> InterfaceClass? {
    switch type {
    case 65534: .tunnel  // ARPHRD_NONE: tun, wireguard
    case 512: .tunnel  // ARPHRD_PPP
    case 519: .cellular  // ARPHRD_RAWIP: cellular modems
    case 768: .tunnel  // ARPHRD_TUNNEL (IP-in-IP)
    case 769: .tunnel  // ARPHRD_TUNNEL6
    case 776: .tunnel  // ARPHRD_SIT
    case 778: .tunnel  // ARPHRD_IPGRE
    case 823: .tunnel  // ARPHRD_IP6GRE
    case 772: .loopback  // ARPHRD_LOOPBACK
    default: nil
    }
  }

  static func classByName(_ name: InterfaceName) -> InterfaceClass? {
    let bytes = name.bytes
    func starts(_ prefix: String) -> Bool { bytes.starts(with: prefix.utf8) }
    if bytes == Array("lo".utf8) { return .loopback }
    if bytes == Array("en0".utf8) { return .wifi }
    if starts("pdp_ip") || starts("wwan") || starts("rmnet") || starts("ccmni") { return .cellular }
    if starts("utun") || starts("tun") || starts("wg") || starts("ppp") || starts("ipsec")
      || starts("tap")
    {
      return .tunnel
    }
    if starts("wlan") || starts("wlp") || starts("wlx") { return .wifi }
    if starts("eth") || starts("en") { return .ethernet }
    return nil
  }
}
