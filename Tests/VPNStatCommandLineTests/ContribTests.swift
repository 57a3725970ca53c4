import Foundation
import Testing

@testable import VPNStatTestSupport

/// The systemd files in contrib/, checked the one way this machine allows (systemd does not run
/// here): `systemd-analyze verify` on the units and on Debian's wg-quick@ and openvpn-client@
/// units with vpnstat's drop-ins, the shipped vpnstat path pointed at the built binary.
struct ContribTests {
  static let analyze = "/usr/bin/systemd-analyze"
  static let contrib = Built.packageRoot.appendingPathComponent("contrib")

  /// contrib/ and Debian's units in a directory of their own, `/usr/local/bin/vpnstat` replaced by
  /// `binary` in every file.
  static func unitDirectory(binary: String) throws -> TemporaryDirectory {
    for unit in ["/lib/systemd/system/wg-quick@.service", "/lib/systemd/system/openvpn-client@.service"]
    where !FileManager.default.fileExists(atPath: unit) {
      throw Tool.missing(unit)
    }
    let directory = try TemporaryDirectory("units")
    let files = [
      "vpnstat-enforce@.service", "vpnstat-record.service", "wg-quick@.service.d/vpnstat-gate.conf",
      "openvpn-client@.service.d/vpnstat-gate.conf", "vpnstat-notify.service",
    ]
    for file in files {
      let text = try String(contentsOf: contrib.appendingPathComponent(file), encoding: .utf8)
      try #require(text.contains("/usr/local/bin/vpnstat"), "\(file) no longer runs /usr/local/bin/vpnstat")
      let target = directory.file(file)
      try FileManager.default.createDirectory(
        atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
      try Data(text.replacingOccurrences(of: "/usr/local/bin/vpnstat", with: binary).utf8).write(
        to: URL(fileURLWithPath: target))
    }
    for unit in ["wg-quick@.service", "openvpn-client@.service"] {
      try FileManager.default.copyItem(atPath: "/lib/systemd/system/" + unit, toPath: directory.file(unit))
    }
    return directory
  }

  static func verify(_ unit: String, in directory: TemporaryDirectory) throws -> CommandResult {
    try run(
      analyze, ["--man=no", "verify", directory.file(unit)],
      environment: ["SYSTEMD_UNIT_PATH": directory.path + ":"])
  }

  @Test(
    "systemd-analyze verify finds nothing to say about the enforcer and recorder units, nor about wg-quick@ and openvpn-client@ with vpnstat's gate"
  )
  func unitsVerify() throws {
    try Tool.require(Self.analyze)
    let directory = try Self.unitDirectory(binary: Built.vpnstat)
    for unit in [
      "vpnstat-enforce@wg0.service", "vpnstat-record.service", "wg-quick@wg0.service", "openvpn-client@work.service",
      // A user unit; verified as a system one (no user manager here), the same syntax.
      "vpnstat-notify.service",
    ] {
      let result = try Self.verify(unit, in: directory)
      #expect(result.status == 0, "\(unit): \(result.errors)")
      // Unknown keys are only warnings, with status 0: the output must be empty too.
      #expect(result.output.isEmpty && result.errors.isEmpty, "\(unit): \(result.output)\(result.errors)")
    }
  }

  @Test(
    "make install puts vpnstat notify's user unit and XDG autostart entry where systemd --user and the desktops look, running the installed binary; uninstall takes them"
  )
  func notifyAgentInstalled() throws {
    try Tool.require("/usr/bin/make")
    let scratch = try TemporaryDirectory("scratch")
    try FileManager.default.createDirectory(atPath: scratch.file("release"), withIntermediateDirectories: true)
    // A link, not a copy: a fresh copy is "text file busy" while a parallel test's child holds it
    // between its fork and its exec.
    try FileManager.default.createSymbolicLink(
      atPath: scratch.file("release/vpnstat"), withDestinationPath: Built.vpnstat)
    let stage = try TemporaryDirectory("stage")
    let arguments = [
      "-s", "-C", Built.packageRoot.path, "DESTDIR=" + stage.path, "SCRATCH=" + scratch.path, "PREFIX=/usr",
    ]
    let installed = try run("/usr/bin/make", arguments + ["install"])
    try #require(installed.status == 0, "\(installed.errors)")
    let unit = try String(contentsOfFile: stage.file("usr/lib/systemd/user/vpnstat-notify.service"), encoding: .utf8)
    #expect(unit.contains("\nExecStart=/usr/bin/vpnstat notify\n"), "\(unit)")
    #expect(unit.contains("\nWantedBy=graphical-session.target\n"), "\(unit)")
    let entry = try String(contentsOfFile: stage.file("etc/xdg/autostart/vpnstat-notify.desktop"), encoding: .utf8)
    #expect(entry.hasPrefix("[Desktop Entry]\n") && entry.contains("\nExec=/usr/bin/vpnstat notify\n"), "\(entry)")
    #expect(entry.contains("\nType=Application\n"), "\(entry)")
    let removed = try run("/usr/bin/make", arguments + ["uninstall"])
    #expect(removed.status == 0, "\(removed.errors)")
    for file in ["usr/lib/systemd/user/vpnstat-notify.service", "etc/xdg/autostart/vpnstat-notify.desktop"] {
      #expect(!FileManager.default.fileExists(atPath: stage.file(file)), "\(file) left by uninstall")
    }
  }

  @Test("the drop-ins are read: a gate that cannot run makes verify complain about it")
  func dropInsAreRead() throws {
    try Tool.require(Self.analyze)
    let directory = try Self.unitDirectory(binary: "/nonexistent/vpnstat")
    for unit in ["wg-quick@wg0.service", "openvpn-client@work.service"] {
      let result = try Self.verify(unit, in: directory)
      #expect(result.errors.contains("/nonexistent/vpnstat"), "\(unit): \(result.errors)")
    }
  }

  @Test("the enforcer unit disconnects through the tunnel's manager; the drop-ins gate with session check")
  func whatTheyRun() throws {
    let enforce = try String(
      contentsOf: Self.contrib.appendingPathComponent("vpnstat-enforce@.service"), encoding: .utf8)
    #expect(enforce.contains("\nExecStart=/usr/local/bin/vpnstat enforce %I --action auto\n"))
    for dropIn in ["wg-quick@.service.d/vpnstat-gate.conf", "openvpn-client@.service.d/vpnstat-gate.conf"] {
      let text = try String(contentsOf: Self.contrib.appendingPathComponent(dropIn), encoding: .utf8)
      #expect(text.contains("\nExecStartPre=/usr/local/bin/vpnstat session check\n"), "\(dropIn)")
    }
    // What the unit's ExecStart asks for is what vpnstat accepts.
    let accepted = try run(Built.vpnstat, ["enforce", "--action", "auto", "--help"])
    #expect(accepted.status == 0, "\(accepted.errors)")
    let refused = try run(Built.vpnstat, ["enforce", "wg0", "--action", "bogus"])
    #expect(refused.status == 64 && refused.errors.contains("auto, link-down, delete"), "\(refused.errors)")
    // A unit that is not a service is refused before anything runs.
    for value in ["wg0=bogus", "=x.service", "wg0=.service", "wg0=a b.service"] {
      let unit = try run(
        Built.vpnstat, ["status", "--systemd-unit", value], environment: ["VPNSTAT_CONFIG": "/nonexistent"])
      #expect(unit.status == 64 && unit.errors.contains("NAME=UNIT"), "\(value): \(unit.errors)")
    }
  }
}
