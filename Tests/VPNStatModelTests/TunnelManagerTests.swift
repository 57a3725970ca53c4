import Testing

@testable import VPNStatModel

/// Who manages a tunnel, decided from the evidence: every rule of `TunnelManager.identify`, and
/// the enforcer's presence record as it is written and read back.
struct TunnelManagerTests {
  static let wg0 = InterfaceName("wg0")

  static func process(
    _ pid: Int32, _ command: String, _ arguments: [String], group: String? = "/user.slice/session-2.scope"
  ) -> TunnelProcess {
    TunnelProcess(pid: pid, startTime: 42, command: command, arguments: arguments, controlGroup: group)
  }

  static let wireguardGo = process(812, "wireguard-go", ["wireguard-go", "wg0"])
  static let openVPN = process(
    900, "openvpn", ["/usr/sbin/openvpn", "--dev", "tun7", "--management", "/run/ovpn.sock", "unix"])
  static let nmOpenVPN = process(
    901, "openvpn",
    [
      "/usr/sbin/openvpn", "--dev", "tun8", "--management",
      "/var/run/NetworkManager/nm-openvpn-6a1b2c3d-0000-4000-8000-000000000001", "unix",
    ], group: "/system.slice/NetworkManager.service")

  @Test(
    "the rule, strongest evidence first",
    arguments: [
      // NetworkManager's own connection on the device wins over everything.
      (
        ManagerEvidence(
          interface: wg0, linkKind: "tun", holders: [wireguardGo],
          networkManager: NetworkManagerDevice(device: wg0, state: "connected", connection: "vpnt", uuid: "U1"),
          wgQuickConfig: "/etc/wireguard/wg0.conf"), TunnelManager.Kind.networkManager, "U1"
      ),
      // …but not a connection NM only generated to describe someone else's device.
      (
        ManagerEvidence(
          interface: wg0, linkKind: "tun", holders: [wireguardGo],
          networkManager: NetworkManagerDevice(
            device: wg0, state: "connected (externally)", connection: "wg0", uuid: "U2"),
          wgQuickConfig: "/etc/wireguard/wg0.conf"), .wgQuick, "/etc/wireguard/wg0.conf"
      ),
      // NM's OpenVPN plugin: the connection's UUID is in its management socket's name, and it
      // beats the NetworkManager.service control group it runs in.
      (
        ManagerEvidence(interface: .init("tun8"), linkKind: "tun", holders: [nmOpenVPN], systemdRunning: true),
        .networkManager, "6a1b2c3d-0000-4000-8000-000000000001"
      ),
      // A systemd service's control group, where systemd runs.
      (
        ManagerEvidence(
          interface: .init("tun7"), linkKind: "tun",
          holders: [process(7, "openvpn", ["openvpn"], group: "/system.slice/openvpn-client@work.service")],
          systemdRunning: true), .systemd, "openvpn-client@work.service"
      ),
      // The same without systemd: a plain OpenVPN process, stopped by its pid.
      (
        ManagerEvidence(
          interface: .init("tun7"), linkKind: "tun",
          holders: [process(7, "openvpn", ["openvpn"], group: "/system.slice/openvpn-client@work.service")]),
        .openVPN, "pid 7"
      ),
      // Kernel WireGuard under wg-quick@wg0: no process, a unit systemd says is active.
      (
        ManagerEvidence(
          interface: wg0, linkKind: "wireguard", systemdRunning: true, activeUnits: ["wg-quick@wg0.service"],
          wgQuickConfig: "/etc/wireguard/wg0.conf"), .systemd, "wg-quick@wg0.service"
      ),
      // A unit the configuration names (and systemd says is active) wins over the well-known ones.
      (
        ManagerEvidence(
          interface: wg0, linkKind: "wireguard", systemdRunning: true, activeUnits: ["wg-quick@wg0.service"],
          configuredUnit: "my-vpn.service"), .systemd, "my-vpn.service"
      ),
      // Kernel WireGuard with a configuration, no systemd: wg-quick.
      (
        ManagerEvidence(interface: wg0, linkKind: "wireguard", wgQuickConfig: "/etc/wireguard/wg0.conf"), .wgQuick,
        "/etc/wireguard/wg0.conf"
      ),
      // wireguard-go for another name is not this device's.
      (
        ManagerEvidence(
          interface: wg0, linkKind: "tun", holders: [process(5, "wireguard-go", ["wireguard-go", "wg1"])],
          wgQuickConfig: "/etc/wireguard/wg0.conf"), .none, nil
      ),
      // OpenVPN with a management socket: the socket is the id.
      (ManagerEvidence(interface: .init("tun7"), linkKind: "tun", holders: [openVPN]), .openVPN, "/run/ovpn.sock"),
      // A WireGuard device without a configuration, a bare tun, a tun nobody holds.
      (ManagerEvidence(interface: wg0, linkKind: "tun", holders: [wireguardGo]), .none, nil),
      (
        ManagerEvidence(interface: .init("tun9"), linkKind: "tun", holders: [process(3, "vpnstat-testpe", ["x"])]),
        .none, nil
      ),
      (ManagerEvidence(interface: .init("tun9"), linkKind: "tun"), .none, nil),
    ] as [(ManagerEvidence, TunnelManager.Kind, String?)])
  func rule(evidence: ManagerEvidence, kind: TunnelManager.Kind, id: String?) {
    let manager = TunnelManager.identify(evidence)
    #expect(manager.kind == kind, "\(manager.evidence)")
    #expect(manager.id == id)
    #expect(!manager.evidence.isEmpty)
  }

  @Test("found_by names the evidence that decided, as class_by does for classes")
  func evidenceKinds() {
    func decided(_ evidence: ManagerEvidence) -> TunnelManager.Evidence { TunnelManager.identify(evidence).foundBy }
    let device = NetworkManagerDevice(device: Self.wg0, state: "connected", connection: "vpnt", uuid: "U")
    #expect(decided(ManagerEvidence(interface: Self.wg0, networkManager: device)) == .networkManager)
    #expect(decided(ManagerEvidence(interface: .init("tun8"), holders: [Self.nmOpenVPN])) == .holder)
    let service = Self.process(7, "openvpn", ["openvpn"], group: "/system.slice/openvpn-client@work.service")
    #expect(
      decided(ManagerEvidence(interface: .init("tun7"), holders: [service], systemdRunning: true)) == .controlGroup)
    #expect(
      decided(ManagerEvidence(interface: Self.wg0, systemdRunning: true, activeUnits: ["wg-quick@wg0.service"]))
        == .unit)
    #expect(decided(ManagerEvidence(interface: Self.wg0, linkKind: "wireguard", wgQuickConfig: "/x/wg0.conf")) == .kind)
    #expect(
      decided(ManagerEvidence(interface: Self.wg0, holders: [Self.wireguardGo], wgQuickConfig: "/x/wg0.conf"))
        == .holder)
    #expect(decided(ManagerEvidence(interface: .init("tun9"), holders: [Self.process(3, "x", [])])) == .holder)
    #expect(decided(ManagerEvidence(interface: .init("tun9"), linkKind: "tun")) == .nothing)
  }

  @Test("the evidence is said in words: who holds the device, which file, what is missing")
  func evidenceInWords() {
    let wgQuick = TunnelManager.identify(
      ManagerEvidence(
        interface: Self.wg0, linkKind: "tun", holders: [Self.wireguardGo], wgQuickConfig: "/etc/wireguard/wg0.conf"))
    #expect(wgQuick.evidence == "wireguard-go (pid 812) holds wg0; /etc/wireguard/wg0.conf")
    let missing = TunnelManager.identify(
      ManagerEvidence(
        interface: Self.wg0, linkKind: "tun", holders: [Self.wireguardGo],
        wgQuickConfigSearched: "/etc/wireguard/wg0.conf"))
    #expect(missing.evidence == "wg0 is a WireGuard device without a wg-quick configuration (/etc/wireguard/wg0.conf)")
    let nobody = TunnelManager.identify(ManagerEvidence(interface: .init("tun9"), linkKind: "tun"))
    #expect(nobody.evidence == "no process holds tun9")
    // A hostile process name cannot repaint a terminal through the evidence.
    let hostile = TunnelManager.identify(
      ManagerEvidence(interface: .init("tun9"), linkKind: "tun", holders: [Self.process(4, "x\u{1B}[2J", [])]))
    #expect(!hostile.evidence.contains("\u{1B}"))
  }

  @Test("what a holder's arguments and control group say")
  func holderFacts() {
    #expect(Self.openVPN.managementSocket == "/run/ovpn.sock")
    #expect(Self.process(1, "openvpn", ["openvpn", "--management", "127.0.0.1", "7505"]).managementSocket == nil)
    #expect(Self.process(1, "openvpn", ["openvpn", "--management"]).managementSocket == nil)
    #expect(Self.nmOpenVPN.networkManagerConnection == "6a1b2c3d-0000-4000-8000-000000000001")
    #expect(Self.openVPN.networkManagerConnection == nil)
    #expect(Self.openVPN.systemdUnit == nil)
    #expect(Self.nmOpenVPN.systemdUnit == "NetworkManager.service")
    #expect(Self.wireguardGo.isWireGuardGo(for: Self.wg0) && !Self.wireguardGo.isWireGuardGo(for: .init("wg1")))
  }

  @Test("systemd instance names are escaped as systemd-escape does")
  func unitNames() {
    #expect(ManagerEvidence.systemdEscaped(.init("wg0")) == "wg0")
    #expect(ManagerEvidence.systemdEscaped(.init("wg-home")) == "wg\\x2dhome")
    #expect(ManagerEvidence.systemdEscaped(.init(".x")) == "\\x2ex")
    #expect(ManagerEvidence.systemdEscaped(InterfaceName(bytes: [0x74, 0xFF])) == "t\\xff")
    #expect(
      ManagerEvidence.wellKnownUnits(for: .init("wg-home")) == [
        "wg-quick@wg\\x2dhome.service", "openvpn-client@wg\\x2dhome.service", "openvpn@wg\\x2dhome.service",
      ])
  }

  @Test("an enforcer's presence is written and read back exactly; anything else is not one")
  func presenceRecord() throws {
    let presence = EnforcerPresence(
      pid: 4242, startTime: 123_456, since: Timestamp(seconds: 1_800_000_000) + .milliseconds(250),
      action: "exec /bin/sh\nx", tunnel: InterfaceName(bytes: [0x77, 0x1B, 0x5C]),
      holds: [
        ManagerHold(kind: .networkManager, id: "f2e6ce48", setting: "connection.autoconnect", restore: "yes")
      ])
    let read = try #require(EnforcerPresence(parsing: presence.text))
    #expect(read.pid == 4242 && read.startTime == 123_456 && read.since == presence.since)
    #expect(read.tunnel == presence.tunnel)
    #expect(read.action == "exec /bin/sh x", "a line break in the action would split the record")
    #expect(read.holds == presence.holds)
    for garbage in ["", "pid=x\n", "garbage", "pid=1\nsince=never\naction=a\ninterface=wg0\n", "pid=0\n"] {
      #expect(EnforcerPresence(parsing: garbage) == nil, "\(garbage)")
    }
    #expect(EnforcerPresence(parsing: presence.text + "hold=bogus\n") == nil)
  }
}
