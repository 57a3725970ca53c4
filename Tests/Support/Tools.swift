import Foundation

/// The programs and modules some tests need besides vpnstat, with the Debian package that has
/// each (scripts/install-deps --test installs them all). A test that needs one checks first, so a
/// missing tool fails as "TOOL is missing", never as a confusing symptom further on.
enum Tool {
  static let packages: [String: String] = [
    "/usr/bin/python3": "python3", "/usr/bin/tcpdump": "tcpdump", "/usr/bin/mandoc": "mandoc",
    "/usr/bin/tmux": "tmux", "/usr/sbin/ip": "iproute2", "/usr/bin/setpriv": "util-linux",
    "/usr/bin/pkill": "procps", "/usr/bin/chromium": "chromium", "/usr/bin/prometheus": "prometheus",
    "/usr/bin/promtool": "prometheus", "/usr/bin/curl": "curl", "/usr/bin/systemd-analyze": "systemd",
    "/lib/systemd/system/wg-quick@.service": "wireguard-tools",
    "/lib/systemd/system/openvpn-client@.service": "openvpn",
    "/usr/bin/script": "bsdutils", "/usr/bin/zsh": "zsh", "/usr/bin/fish": "fish", "/usr/bin/bash": "bash",
    "/usr/bin/dbus-daemon": "dbus", "/usr/bin/dbus-monitor": "dbus-bin", "/usr/bin/gdbus": "libglib2.0-bin",
    "/usr/bin/Xvfb": "xvfb", "/usr/bin/dunst": "dunst", "/usr/bin/dunstctl": "dunst", "/usr/bin/import": "imagemagick",
    "/usr/bin/unshare": "util-linux", "/usr/bin/nsenter": "util-linux", "/usr/bin/setfacl": "acl",
    "/usr/bin/jq": "jq", "/usr/bin/make": "make", "/usr/bin/systemd-nspawn": "systemd-container",
  ]

  /// The error for a missing program.
  static func missing(_ path: String) -> TestSetupError {
    let package = packages[path] ?? "the package that has it"
    return TestSetupError(
      "\((path as NSString).lastPathComponent) is missing (\(path)): run scripts/install-deps --test (it installs \(package)), then test again"
    )
  }

  /// Throws unless `path` is an executable program.
  static func require(_ path: String) throws {
    guard FileManager.default.isExecutableFile(atPath: path) else { throw missing(path) }
  }

  /// Throws unless Debian's python3 can import `module` (from `package`).
  static func requirePythonModule(_ module: String, package: String) throws {
    try require("/usr/bin/python3")
    let probe = try run("/usr/bin/python3", ["-c", "import \(module)"])
    guard probe.status == 0 else {
      throw TestSetupError(
        "python3 module \(module) is missing: run scripts/install-deps --test (it installs \(package)), then test again"
      )
    }
  }
}
