import Testing

@testable import VPNStatModel

/// Who manages a tunnel, decided from the evidence: every rule of `TunnelManager.identify`, and
/// the enforcer's presence record as it is written and read back.
struct TunnelManagerTests {
  static let wg0 = InterfaceName("wg0")

  static func process(
    _ pid: Int32, _ command: String, _ arguments: [String], group: String? = "/user.slice/session-2.scope",
    standing: TunnelProcess.Standing = .root
  ) -> TunnelProcess {
    TunnelProcess(
      pid: pid, startTime: 42, command: command, arguments: arguments, controlGroup: group, standing: standing)
  }

  static let wireguardGo = process(812, "wireguard-go", ["wireguard-go", "wg0"])
  static let openVPN = process(
    900, "openvpn", ["/usr/sbin/openvpn", "--dev", "tun7", "--management", "/run/ovpn.sock", "unix"])
  /// NetworkManager's OpenVPN plugin runs openvpn as the user nm-openvpn, in NetworkManager.service;
  /// its parent is the plugin (nm-openvpn-service, root's).
  static let nmOpenVPN = process(
    901, "openvpn",
    [
      "/usr/sbin/openvpn", "--dev", "tun8", "--management",
      "/var/run/NetworkManager/nm-openvpn-6a1b2c3d-0000-4000-8000-000000000001", "unix",
    ], group: "/system.slice/NetworkManager.service", standing: .networkManagerPlugin)
  static let nmVPN = NetworkManagerConnection(uuid: "6a1b2c3d-0000-4000-8000-000000000001", name: "work", type: "vpn")
  static let nmVPNs = [nmVPN.uuid: nmVPN]
  /// A process of the user nobody, named and argued like NetworkManager's openvpn, holding a tun
  /// it owns: nothing about it is evidence.
  static let impostor = process(
    666, "openvpn",
    ["openvpn", "--management", "/tmp/nm-openvpn-6a1b2c3d-0000-4000-8000-000000000001", "unix"],
    standing: .unprivileged)

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
      // NM's OpenVPN plugin: the plugin's openvpn names the connection, NetworkManager says it
      // is an active VPN, and that beats the NetworkManager.service control group it runs in.
      (
        ManagerEvidence(
          interface: .init("tun8"), linkKind: "tun", holders: [nmOpenVPN], networkManagerVPNs: nmVPNs,
          systemdRunning: true), .networkManager, "6a1b2c3d-0000-4000-8000-000000000001"
      ),
      // Without NetworkManager's word that the connection is an active VPN, the plugin's
      // openvpn is an OpenVPN process (stopped on its own socket).
      (
        ManagerEvidence(interface: .init("tun8"), linkKind: "tun", holders: [nmOpenVPN], systemdRunning: true),
        .openVPN, "/var/run/NetworkManager/nm-openvpn-6a1b2c3d-0000-4000-8000-000000000001"
      ),
      // Another user's process is no evidence, whatever its name and arguments say — even when
      // they name a VPN NetworkManager has active.
      (
        ManagerEvidence(
          interface: .init("tunU"), linkKind: "tun", holders: [impostor], networkManagerVPNs: nmVPNs,
          systemdRunning: true), .none, nil
      ),
      // …nor is a unit a user's own systemd runs, however it is named.
      (
        ManagerEvidence(
          interface: .init("tun7"), linkKind: "tun",
          holders: [
            process(
              7, "openvpn", ["openvpn"],
              group: "/user.slice/user-1000.slice/user@1000.service/app.slice/openvpn-client@work.service",
              standing: .unprivileged)
          ], systemdRunning: true), .none, nil
      ),
      // A system service's main process that dropped root (systemd says it is the main one) is
      // still the service's…
      (
        ManagerEvidence(
          interface: .init("tun7"), linkKind: "tun",
          holders: [
            process(
              7, "openvpn", ["openvpn"],
              group: "/system.slice/system-openvpn\\x2dclient.slice/openvpn-client@work.service",
              standing: .serviceMainProcess)
          ], systemdRunning: true), .systemd, "openvpn-client@work.service"
      ),
      // …but a process a service merely started as some user (cron's jobs) is not.
      (
        ManagerEvidence(
          interface: .init("tun7"), linkKind: "tun",
          holders: [process(7, "openvpn", ["openvpn"], group: "/system.slice/cron.service", standing: .unprivileged)],
          systemdRunning: true), .none, nil
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
      // Kernel WireGuard whose configuration others could write: not wg-quick's to run.
      (
        ManagerEvidence(
          interface: wg0, linkKind: "wireguard",
          wgQuickConfigRefused: "the wg-quick configuration /tmp/wg0.conf is not used"),
        .none, nil
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
    #expect(
      decided(ManagerEvidence(interface: .init("tun8"), holders: [Self.nmOpenVPN], networkManagerVPNs: Self.nmVPNs))
        == .holder)
    #expect(decided(ManagerEvidence(interface: .init("tunU"), linkKind: "tun", holders: [Self.impostor])) == .nothing)
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
    #expect(nobody.evidence == "no process of root or of a system service holds tun9")
    let refused = TunnelManager.identify(
      ManagerEvidence(
        interface: Self.wg0, linkKind: "wireguard",
        wgQuickConfigRefused: "the wg-quick configuration /srv/wg0.conf is not used: /srv is writable by other users"))
    #expect(refused.evidence == "the wg-quick configuration /srv/wg0.conf is not used: /srv is writable by other users")
    // A hostile process name cannot repaint a terminal through the evidence.
    let hostile = TunnelManager.identify(
      ManagerEvidence(interface: .init("tun9"), linkKind: "tun", holders: [Self.process(4, "x\u{1B}[2J", [])]))
    #expect(!hostile.evidence.contains("\u{1B}"))
  }

  @Test("what a holder's arguments and control group say, and who may be a manager")
  func holderFacts() {
    #expect(Self.openVPN.managementSocket == "/run/ovpn.sock")
    #expect(Self.process(1, "openvpn", ["openvpn", "--management", "127.0.0.1", "7505"]).managementSocket == nil)
    #expect(Self.process(1, "openvpn", ["openvpn", "--management"]).managementSocket == nil)
    #expect(Self.openVPN.systemdUnit == nil)
    #expect(Self.nmOpenVPN.systemdUnit == "NetworkManager.service")
    #expect(Self.wireguardGo.isWireGuardGo && !Self.openVPN.isWireGuardGo)
    #expect(Self.openVPN.mayBeManager && Self.nmOpenVPN.mayBeManager && !Self.impostor.mayBeManager)
    // The walk's form of the rule: every user id root's, a system service's control group (for
    // systemd to confirm), or a child of NetworkManager's plugin.
    #expect(TunnelProcess.mayHaveStanding(userIDs: [0, 0, 0, 0], controlGroup: nil, pluginParent: false))
    #expect(
      !TunnelProcess.mayHaveStanding(
        userIDs: [0, 65534, 0, 0], controlGroup: "/user.slice/session-2.scope", pluginParent: false))
    #expect(!TunnelProcess.mayHaveStanding(userIDs: nil, controlGroup: nil, pluginParent: false))
    #expect(
      TunnelProcess.mayHaveStanding(
        userIDs: [104, 104, 104, 104], controlGroup: "/system.slice/x.service", pluginParent: false))
    #expect(TunnelProcess.mayHaveStanding(userIDs: [104, 104, 104, 104], controlGroup: "/", pluginParent: true))
    #expect(TunnelProcess.isNetworkManagerPlugin(executable: "/usr/lib/NetworkManager/nm-openvpn-service"))
    #expect(!TunnelProcess.isNetworkManagerPlugin(executable: "/tmp/NetworkManager/nm-openvpn-service"))
    #expect(!TunnelProcess.isNetworkManagerPlugin(executable: "/usr/lib/NetworkManager/NetworkManager-dispatcher"))
    // Only the plugin's own process names a NetworkManager connection.
    #expect(Self.nmOpenVPN.networkManagerConnection == "6a1b2c3d-0000-4000-8000-000000000001")
    #expect(Self.impostor.networkManagerConnection == nil)
    for (group, unit) in [
      ("/system.slice/openvpn-client@work.service", "openvpn-client@work.service"),
      ("/system.slice/system-wg\\x2dquick.slice/wg-quick@wg0.service", "wg-quick@wg0.service"),
      ("/system.slice/NetworkManager.service/extra", "NetworkManager.service"),
      ("/user.slice/user-0.slice/user@0.service/app.slice/openvpn-client@work.service", nil),
      ("/system.slice/session-2.scope", nil), ("/system.slice", nil), ("/", nil),
    ] as [(String, String?)] {
      #expect(Self.process(1, "x", [], group: group, standing: .unprivileged).systemdUnit == unit, "\(group)")
    }
  }

  @Test("names handed to systemctl and nmcli: systemd's unit names without a leading dash, UUIDs as NM writes them")
  func managerNames() {
    for good in [
      "wg-quick@wg0.service", "openvpn-client@work.service", "wg-quick@wg\\x2dhome.service", "a:b_c.service",
    ] {
      #expect(ManagerName.unitProblem(good) == nil, "\(good)")
    }
    for bad in [
      "", "--force.service", "-h.service", ".hidden.service", "a b.service", "a/b.service", "x\n.service",
      String(repeating: "a", count: 250) + ".service",
    ] {
      #expect(ManagerName.unitProblem(bad) != nil, "\(bad)")
    }
    #expect(ManagerName.isUUID("6a1b2c3d-0000-4000-8000-000000000001"))
    #expect(ManagerName.isUUID("6A1B2C3D-0000-4000-8000-00000000000F"))
    for bad in [
      "", "--help", "6a1b2c3d00004000800000000000000001", "6a1b2c3d-0000-4000-8000-00000000000g",
      "6a1b2c3d-0000-4000-8000-0000000000001", "-a1b2c3d-0000-4000-8000-000000000001",
    ] {
      #expect(!ManagerName.isUUID(bad), "\(bad)")
    }
  }

  @Test("the one rule for a name connect, disconnect and enforce are given: no control character, as typed")
  func tunnelNameArgument() {
    for good in ["wg0", "a\\x01b", "tun-ünïcödé", "/etc/wireguard/wg0.conf", "My VPN", "q\\xff"] {
      #expect(TunnelNameArgument.problem(good) == nil, "\(good.debugDescription)")
    }
    for bad in ["a\u{01}b", "a\u{7F}b", "a\u{1B}b", "a\nb", "a\tb", "\u{00}", "x\r"] {
      #expect(
        TunnelNameArgument.problem(bad) == "holds a control character; write such a byte as \\xHH",
        "\(bad.debugDescription)")
    }
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
      ], wgQuickDirectories: ["/srv/wg", "/etc/wireguard"])
    let read = try #require(EnforcerPresence(parsing: presence.text))
    #expect(read.wgQuickDirectories == ["/srv/wg", "/etc/wireguard"], "order is the order they are looked in")
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
