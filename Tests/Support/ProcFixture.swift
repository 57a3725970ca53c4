import Foundation

/// A fixture `/proc`: processes with `comm`, `cmdline`, `ns/net`, `fd/N` and `fdinfo/N` as the
/// kernel shows them, and `self/ns/net` for the reader itself.
final class ProcFixture: @unchecked Sendable {
  let directory: TemporaryDirectory
  var root: String { directory.file("proc") }

  init(ownNamespace: String = "net:[4026531840]") throws {
    directory = try TemporaryDirectory("proc")
    try FileManager.default.createDirectory(atPath: root + "/self/ns", withIntermediateDirectories: true)
    try FileManager.default.createSymbolicLink(atPath: root + "/self/ns/net", withDestinationPath: ownNamespace)
  }

  /// A process: `tuns` maps a descriptor number to the `iff:` name (empty: not attached yet).
  func process(
    _ pid: Int, command: String, arguments: [String], namespace: String = "net:[4026531840]",
    tuns: [Int: String] = [:], otherFiles: [Int: String] = [:], tunLink: String = "/dev/net/tun"
  ) throws {
    let base = root + "/\(pid)"
    let fm = FileManager.default
    for sub in ["ns", "fd", "fdinfo"] {
      try fm.createDirectory(atPath: base + "/" + sub, withIntermediateDirectories: true)
    }
    try Data((command + "\n").utf8).write(to: URL(fileURLWithPath: base + "/comm"))
    try Data(arguments.map { $0 + "\0" }.joined().utf8).write(to: URL(fileURLWithPath: base + "/cmdline"))
    try fm.createSymbolicLink(atPath: base + "/ns/net", withDestinationPath: namespace)
    for (fd, name) in tuns {
      try fm.createSymbolicLink(atPath: base + "/fd/\(fd)", withDestinationPath: tunLink)
      try Data("pos:\t59\nflags:\t0104002\nmnt_id:\t61\nino:\t105\niff:\t\(name)\n".utf8).write(
        to: URL(fileURLWithPath: base + "/fdinfo/\(fd)"))
    }
    for (fd, target) in otherFiles {
      try fm.createSymbolicLink(atPath: base + "/fd/\(fd)", withDestinationPath: target)
      try Data("pos:\t0\nflags:\t02\n".utf8).write(to: URL(fileURLWithPath: base + "/fdinfo/\(fd)"))
    }
  }

  /// Where the reader will look for the control socket of `pid`'s `device`.
  func socketPath(_ pid: Int, _ device: String) -> String { root + "/\(pid)/root/run/wireguard/\(device).sock" }
}
