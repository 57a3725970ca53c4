import Foundation
import Testing

@testable import VPNStatTestSupport

/// The package's units under a real systemd (`BootedSystem`): readiness, the watchdog, the
/// status line, the journal's fields and catalog, the gate's drop-in, restarts, removal, and
/// the systemd trust rules against real services. Each test boots a system of its own.
@Suite(.enabled(if: SystemdHarness.available, SystemdHarness.reason))
struct SystemdUnitTests {
  @Test(
    "vpnstat-record.service: ready once it holds the database, a status line, a watchdog; report answers; stopped, it leaves DB.published on disk, started, links it again; dpkg -r stops it"
  )
  func recorderUnit() throws {
    let system = try BootedSystem("record")
    let started = try system.sh("systemctl enable --now vpnstat-record.service")
    try #require(started.status == 0, "\(started.errors)")
    #expect(system.property("Type", of: "vpnstat-record.service") == "notify")
    #expect(system.property("WatchdogUSec", of: "vpnstat-record.service") == "30s")
    // Ready means the database is held: it exists the moment `systemctl start` returns, and the
    // status line says what is recorded.
    #expect(system.property("ActiveState", of: "vpnstat-record.service") == "active")
    let status = system.property("StatusText", of: "vpnstat-record.service")
    #expect(status.contains("recording") && status.contains("/var/lib/vpnstat/vpnstat.db"), "\(status)")
    // What it publishes every save is on tmpfs (RuntimeDirectory=), linked beside the database.
    let link = try system.sh(
      """
      for i in $(seq 50); do [ -L /var/lib/vpnstat/vpnstat.db.published ] && break; sleep 0.1; done
      target=$(readlink /var/lib/vpnstat/vpnstat.db.published) && test -f "$target" && stat -f -c %T "$target" && echo "$target"
      """)
    #expect(link.status == 0, "\(link.output) \(link.errors)")
    #expect(link.output.contains("tmpfs\n/run/vpnstat/vpnstat.db-"), "\(link.output)")
    let report = try system.sh("vpnstat report --json")
    #expect(report.status == 0, "\(report.errors)")
    #expect(report.output.contains("\"recorded\":true,\"saved_at\":\"20"), "\(report.output)")
    // Stopped, it leaves the file itself on the database's disk, which a reboot does not empty.
    let stopped = try system.sh(
      """
      systemctl stop vpnstat-record.service
      test -f /var/lib/vpnstat/vpnstat.db.published && ! test -L /var/lib/vpnstat/vpnstat.db.published \
        && test -z "$(ls /run/vpnstat)" && echo kept
      """)
    #expect(stopped.output == "kept\n", "\(stopped.output) \(stopped.errors)")
    // Started again, its first save links the file to tmpfs again.
    let restarted = try system.sh(
      """
      systemctl start vpnstat-record.service || exit 1
      for i in $(seq 50); do [ -L /var/lib/vpnstat/vpnstat.db.published ] && echo linked && break; sleep 0.1; done
      """)
    #expect(restarted.output == "linked\n", "\(restarted.output) \(restarted.errors)")
    let removed = try system.sh("dpkg -r vpnstat")
    #expect(removed.status == 0, "\(removed.errors)")
    #expect(system.property("ActiveState", of: "vpnstat-record.service") != "active")
    print("systemd harness: booted and installed in \(String(format: "%.1f", system.bootSeconds)) s")
  }

  @Test(
    "vpnstat-enforce@wg0 with wg-quick@wg0 and the shipped gate: ready when it holds the tunnel, the deadline stops the unit, the pause refuses it with the journal's reasons, kill -9 and a hung enforcer are restarted and hold the pause, after the pause it starts"
  )
  func enforcerWithWgQuick() throws {
    let system = try BootedSystem("enforce")
    try system.configure(session: "15s", pause: "50s", gateFor: "wg-quick@")
    let setUp = try system.sh(
      """
      set -e
      mkdir -p /etc/wireguard
      umask 077
      printf '[Interface]\\nPrivateKey = %s\\nAddress = 169.254.77.1/24\\n[Peer]\\nPublicKey = %s\\nAllowedIPs = 169.254.77.2/32\\n' \\
        "$(wg genkey)" "$(wg genkey | wg pubkey)" > /etc/wireguard/wg0.conf
      """)
    try #require(setUp.status == 0, "\(setUp.errors)")
    let enforcer = "vpnstat-enforce@wg0.service"

    // Ready only once it holds the tunnel's state: the status line is there when start returns.
    let start = try system.sh("systemctl start \(enforcer)")
    try #require(start.status == 0, "\(start.errors)")
    #expect(system.property("Type", of: enforcer) == "notify")
    let waiting = system.property("StatusText", of: enforcer)
    #expect(waiting.contains("wg0 down"), "status when start returned: '\(waiting)'")

    // Up: a window opens; the journal says so with its fields; the status line counts down.
    let up = try system.sh("systemctl start wg-quick@wg0.service")
    try #require(up.status == 0, "\(up.errors)")
    #expect(
      system.eventually(10) { system.property("StatusText", of: enforcer).contains("left on wg0") },
      "\(system.property("StatusText", of: enforcer))")
    let opened = system.journal("MESSAGE_ID=\(EventKindIDs.windowOpened)")
    #expect(opened.count == 1, "\(opened)")
    #expect(opened.first?["VPNSTAT_INTERFACE"] as? String == "wg0", "\(opened)")
    #expect(opened.first?["PRIORITY"] as? String == "5", "\(opened)")
    #expect((opened.first?["VPNSTAT_UNTIL"] as? String)?.hasSuffix("Z") == true, "\(opened)")
    #expect(opened.first?["_SYSTEMD_UNIT"] as? String == enforcer, "\(opened)")

    // The deadline: the enforcer stops the unit through systemd, and says why.
    #expect(
      system.eventually(30) { system.property("ActiveState", of: "wg-quick@wg0.service") == "inactive" },
      "wg-quick@wg0 still \(system.property("ActiveState", of: "wg-quick@wg0.service")): \((try? system.sh("journalctl --no-pager -u \(enforcer) -u wg-quick@wg0"))?.output ?? "")"
    )
    #expect((try system.sh("ip link show wg0")).status != 0, "wg0 is still there")
    let ended = system.journal("MESSAGE_ID=\(EventKindIDs.sessionEnded)")
    #expect(ended.first?["VPNSTAT_REASON"] as? String == "free-limit", "\(ended)")
    #expect(ended.first?["VPNSTAT_UNTIL"] != nil, "\(ended)")
    #expect(system.property("StatusText", of: enforcer).hasPrefix("pause until"))

    // In the pause the gate refuses the unit, and the journal says why, explained by the catalog.
    let refused = try system.sh("systemctl start wg-quick@wg0.service")
    #expect(refused.status != 0, "wg-quick@wg0 started in the pause")
    let refusals = system.journal("MESSAGE_ID=\(EventKindIDs.connectRefused) _SYSTEMD_UNIT=wg-quick@wg0.service")
    #expect(refusals.first?["VPNSTAT_REASON"] as? String == "pause", "\(refusals)")
    #expect((refusals.first?["MESSAGE"] as? String)?.contains("free plan pause") == true, "\(refusals)")
    let explained = try system.sh("journalctl --no-pager -x MESSAGE_ID=\(EventKindIDs.connectRefused)")
    #expect(
      explained.output.contains("Subject: vpnstat: connecting wg0 was refused")
        || explained.output.contains("Subject: vpnstat: connecting"), "\(explained.output)")
    #expect(explained.output.contains("Wait until the time given"), "\(explained.output)")

    // kill -9 in the pause: systemd restarts it, and the new one holds the pause.
    let first = system.property("MainPID", of: enforcer)
    try system.sh("kill -9 \(first)")
    #expect(
      system.eventually(15) {
        let pid = system.property("MainPID", of: enforcer)
        return pid != first && pid != "0" && system.property("ActiveState", of: enforcer) == "active"
      }, "not restarted after kill -9")
    #expect((try system.sh("systemctl start wg-quick@wg0.service")).status != 0, "started after the restart")

    // A hung enforcer (stopped by SIGSTOP): the watchdog kills it, systemd restarts it.
    let second = system.property("MainPID", of: enforcer)
    try system.sh("kill -STOP \(second)")
    #expect(
      system.eventually(45) {
        let pid = system.property("MainPID", of: enforcer)
        return pid != second && pid != "0" && system.property("ActiveState", of: enforcer) == "active"
      }, "the watchdog did not restart a hung enforcer")
    let log = try system.sh("journalctl --no-pager -u \(enforcer)")
    #expect(log.output.contains("Watchdog timeout"), "\(log.output)")
    #expect(system.property("NRestarts", of: enforcer) == "2")

    // After the pause it starts again.
    #expect(
      system.eventually(60) { (try? system.sh("vpnstat session check -q"))?.status == 0 }, "the pause never ended")
    let again = try system.sh("systemctl start wg-quick@wg0.service")
    #expect(again.status == 0, "\(again.errors)")
    #expect((try system.sh("ip link show wg0")).status == 0)
    // dpkg -r stops the enforcer.
    #expect((try system.sh("dpkg -r vpnstat")).status == 0)
    #expect(system.property("ActiveState", of: enforcer) != "active")
  }

  @Test(
    "vpnstat-enforce@tun0 with openvpn-client@work and the shipped gate: the deadline stops the unit through systemd, the pause refuses it, after the pause it starts"
  )
  func enforcerWithOpenVPNClient() throws {
    let system = try BootedSystem("openvpn")
    // A point-to-point client with a static key: its tun is up before any peer answers.
    try system.configure(session: "10s", pause: "20s", gateFor: "openvpn-client@")
    let setUp = try system.sh(
      """
      set -e
      cd /etc/openvpn/client
      openvpn --genkey secret static.key
      printf 'dev tun0\\ndev-type tun\\nproto udp\\nremote 127.0.0.1\\nrport 1195\\nifconfig 169.254.88.1 169.254.88.2\\nsecret static.key 0\\ncipher AES-256-CBC\\nverb 3\\n' > work.conf
      systemctl start vpnstat-enforce@tun0.service
      """)
    try #require(setUp.status == 0, "\(setUp.errors)")
    let client = "openvpn-client@work.service"
    let up = try system.sh("systemctl start \(client)")
    try #require(up.status == 0, "\(up.errors)")
    let enforcer = "vpnstat-enforce@tun0.service"
    #expect(system.eventually(10) { system.property("StatusText", of: enforcer).contains("left on tun0") })
    #expect(
      system.eventually(30) { system.property("ActiveState", of: client) == "inactive" },
      "\(client) still \(system.property("ActiveState", of: client)): \((try? system.sh("journalctl --no-pager -u vpnstat-enforce@tun0"))?.output ?? "")"
    )
    let log = try system.sh("journalctl --no-pager -u vpnstat-enforce@tun0")
    #expect(log.output.contains("stopped through systemd \(client)"), "\(log.output)")
    let refused = try system.sh("systemctl start \(client)")
    #expect(refused.status != 0, "\(client) started in the pause")
    let refusals = system.journal("MESSAGE_ID=\(EventKindIDs.connectRefused) _SYSTEMD_UNIT=\(client)")
    #expect(refusals.first?["VPNSTAT_REASON"] as? String == "pause", "\(refusals)")
    #expect(
      system.eventually(40) { (try? system.sh("vpnstat session check -q"))?.status == 0 }, "the pause never ended")
    #expect((try system.sh("systemctl start \(client)")).status == 0)
    #expect(system.eventually(10) { (try? system.sh("ip link show tun0"))?.status == 0 })
  }

  @Test(
    "the systemd trust rules against real services: a service's main process running as nobody is believed, a child it forked is not, nor a user's own unit named like a system one"
  )
  func trustRulesUnderSystemd() throws {
    let system = try BootedSystem("trust")
    let setUp = try system.sh(
      """
      set -e
      useradd -m alice
      for name in tunmain tunfork; do ip tuntap add $name mode tun user nobody; done
      ip tuntap add tunuser mode tun user alice
      printf '[Service]\\nUser=nobody\\nExecStart=/usr/local/bin/vpnstat-testpeer tun tunmain\\n' \\
        > /etc/systemd/system/trust-main.service
      printf '[Service]\\nUser=nobody\\nExecStart=/bin/sh -c "/usr/local/bin/vpnstat-testpeer tun tunfork & exec sleep infinity"\\n' \\
        > /etc/systemd/system/trust-fork.service
      systemctl daemon-reload
      systemctl start trust-main.service trust-fork.service
      loginctl enable-linger alice
      uid=$(id -u alice)
      for i in $(seq 100); do systemctl is-active -q user@$uid.service && break; sleep 0.1; done
      # A unit of alice's own manager, named like the system's OpenVPN client units.
      mkdir -p /home/alice/.config/systemd/user
      printf '[Service]\\nExecStart=/usr/local/bin/vpnstat-testpeer tun tunuser\\n' \\
        > /home/alice/.config/systemd/user/openvpn-client@work.service
      chown -R alice: /home/alice/.config
      runuser -u alice -- env XDG_RUNTIME_DIR=/run/user/$uid systemctl --user start openvpn-client@work.service
      """)
    try #require(setUp.status == 0, "\(setUp.output) \(setUp.errors)")
    var managers: [String: String] = [:]
    let seen = system.eventually(10) {
      managers = Self.managers(try? system.sh("vpnstat status --json"))
      return ["tunmain", "tunfork", "tunuser"].allSatisfy { managers[$0] != nil }
    }
    #expect(seen, "\(managers)")
    #expect(managers["tunmain"] == "systemd trust-main.service", "\(managers)")
    #expect(managers["tunfork"] == "none", "a forked child was believed: \(managers)")
    #expect(managers["tunuser"] == "none", "a user's unit was believed: \(managers)")
    // The user's process really is in its manager's unit: the rule, not the setup, refused it.
    let group = try system.sh("cat /proc/$(pgrep -xf '/usr/local/bin/vpnstat-testpeer tun tunuser')/cgroup")
    #expect(
      group.output.contains("/user.slice/") && group.output.contains("openvpn-client@work.service"), "\(group.output)")
  }

  /// Each tunnel's manager in `vpnstat status --json` as "KIND ID" ("none" for none).
  private static func managers(_ result: CommandResult?) -> [String: String] {
    guard let result, let json = try? JSONSerialization.jsonObject(with: result.stdout) else { return [:] }
    var found: [String: String] = [:]
    func walk(_ value: Any) {
      if let object = value as? [String: Any] {
        if let name = object["name"] as? String, object.keys.contains("manager") {
          let manager = object["manager"] as? [String: Any]
          let kind = manager?["kind"] as? String ?? "none"
          found[name] = kind == "none" ? kind : "\(kind) \(manager?["id"] as? String ?? "?")"
        }
        object.values.forEach(walk)
      } else if let array = value as? [Any] {
        array.forEach(walk)
      }
    }
    walk(json)
    return found
  }
}

/// The journal's MESSAGE_IDs, as contrib/vpnstat.catalog and `EventKind.messageID` have them.
enum EventKindIDs {
  static let windowOpened = "cdc6fcb861da4fc897b70d20ef6eea5f"
  static let sessionEnded = "e904c896704f443e8976359f21833ff3"
  static let connectRefused = "59269207c5f44ea8b9f20743b4a6856a"
}
