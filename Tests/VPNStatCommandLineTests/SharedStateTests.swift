import Foundation
import Testing

@testable import VPNStatCommandLine
@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// One state for everyone: every user reads the system's database unless they ask for their own,
/// and the system's configuration, with their own file on top for their own commands only.
struct SharedStateTests {
  static func context(_ environment: [String: String], isRoot: Bool) -> CommandContext {
    CommandContext(
      environmentVariables: environment, isRoot: isRoot, clock: SystemTimeSource(), calendar: SystemCalendar())
  }

  @Test("without --db or VPNSTAT_DB every user gets the system's database, whatever HOME and XDG_STATE_HOME say")
  func systemDatabaseForEveryone() {
    let home = ["HOME": "/home/someone", "XDG_STATE_HOME": "/home/someone/.state"]
    #expect(StoreLocation.resolve(option: nil, environment: { home[$0] }).path == "/var/lib/vpnstat/vpnstat.db")
    #expect(StoreLocation.resolve(option: "", environment: { home[$0] }) == .system)
    let asked = home.merging(["VPNSTAT_DB": "/tmp/mine.db"]) { $1 }
    #expect(StoreLocation.resolve(option: nil, environment: { asked[$0] }).path == "/tmp/mine.db")
    #expect(StoreLocation.resolve(option: "/srv/v.db", environment: { asked[$0] }).path == "/srv/v.db")
  }

  @Test("configuration: the system's file for everyone, the user's on top for users, root reads only the system's")
  func configurationLayers() {
    let user = Self.context(["HOME": "/home/someone"], isRoot: false)
    #expect(ConfigFile.paths(user) == ["/etc/vpnstat.conf", "/home/someone/.config/vpnstat/config"])
    let xdg = Self.context(["HOME": "/home/someone", "XDG_CONFIG_HOME": "/cfg"], isRoot: false)
    #expect(ConfigFile.paths(xdg) == ["/etc/vpnstat.conf", "/cfg/vpnstat/config"])
    let relative = Self.context(["HOME": "/home/someone", "XDG_CONFIG_HOME": "cfg"], isRoot: false)
    #expect(ConfigFile.paths(relative) == ["/etc/vpnstat.conf", "/home/someone/.config/vpnstat/config"])
    // Root's commands — the daemons the units start among them — never read a home's file.
    let root = Self.context(["HOME": "/home/someone", "XDG_CONFIG_HOME": "/cfg"], isRoot: true)
    #expect(ConfigFile.paths(root) == ["/etc/vpnstat.conf"])
    let explicit = Self.context(["HOME": "/home/someone", "VPNSTAT_CONFIG": "/srv/one.conf"], isRoot: false)
    #expect(ConfigFile.paths(explicit) == ["/srv/one.conf"])
  }

  @Test(
    "the user's file replaces the system's settings it names (every class line), keeps the rest; errors name the file")
  func userFileOnTop() throws {
    let directory = try TemporaryDirectory("layers")
    let system = directory.file("system.conf")
    let user = directory.file("user.conf")
    try Data("session-length = 7m\npause-length = 3m\nclass = a=tunnel\nclass = b=wifi\n".utf8)
      .write(to: URL(fileURLWithPath: system))
    try Data("pause-length = 4m\nclass = c=cellular\nunits = si\nbits = yes\n".utf8).write(
      to: URL(fileURLWithPath: user))
    var parsed = try parseCommandLine(["status"], root: VPNStat.rootSpec)
    try ConfigFile.apply(to: &parsed, paths: [system, user], settable: VPNStat.settable)
    #expect(parsed.value("session-length") == "7m")
    #expect(parsed.value("pause-length") == "4m")
    #expect(parsed.all("class") == ["c=cellular"])
    #expect(parsed.value("units") == "si")
    #expect(parsed.has("bits"))
    // A missing layer is no layer.
    var alone = try parseCommandLine(["status"], root: VPNStat.rootSpec)
    try ConfigFile.apply(to: &alone, paths: [system, directory.file("none.conf")], settable: VPNStat.settable)
    #expect(alone.value("pause-length") == "3m" && alone.all("class") == ["a=tunnel", "b=wifi"])
    // `bits = no` leaves the flag off; anything else is an error naming the file and line.
    try Data("bits = no\n".utf8).write(to: URL(fileURLWithPath: user))
    var off = try parseCommandLine(["status"], root: VPNStat.rootSpec)
    try ConfigFile.apply(to: &off, paths: [system, user], settable: VPNStat.settable)
    #expect(!off.has("bits"))
    try Data("\nbits = maybe\n".utf8).write(to: URL(fileURLWithPath: user))
    var bad = try parseCommandLine(["status"], root: VPNStat.rootSpec)
    #expect {
      try ConfigFile.apply(to: &bad, paths: [system, user], settable: VPNStat.settable)
    } throws: { error in
      let message = (error as? UsageError)?.message ?? ""
      return message.hasPrefix("\(user):2:") && message.contains("'maybe'") && message.contains("yes")
    }
  }
}
