import Foundation

import VPNStatKernel
import VPNStatModel
import VPNStatSystem

/// A fixture `/proc`: processes with `comm`, `cmdline`, `status` (its `Uid:` line), `cgroup`,
/// `ns/net`, `fd/N` and `fdinfo/N` as the kernel shows them, and `self/ns/net` for the reader
/// itself. What the kernel would say of a tun descriptor when asked (`TunDescriptor`) is
/// `FixtureTunAttachments`' answer: the device fdinfo names, or another namespace's for the
/// descriptors given as `foreign`.
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
    tuns: [Int: String] = [:], otherFiles: [Int: String] = [:], tunLink: String = "/dev/net/tun", uid: UInt32 = 0,
    controlGroup: String = "/user.slice/user-0.slice/session-1.scope", foreign: Set<Int> = [], parent: Int = 1,
    executable: String? = nil
  ) throws {
    let base = root + "/\(pid)"
    let fm = FileManager.default
    for sub in ["ns", "fd", "fdinfo", "foreign"] {
      try fm.createDirectory(atPath: base + "/" + sub, withIntermediateDirectories: true)
    }
    try Data((command + "\n").utf8).write(to: URL(fileURLWithPath: base + "/comm"))
    try Data(
      "Name:\t\(command)\nPid:\t\(pid)\nPPid:\t\(parent)\nUid:\t\(uid)\t\(uid)\t\(uid)\t\(uid)\nGid:\t0\t0\t0\t0\n".utf8
    ).write(to: URL(fileURLWithPath: base + "/status"))
    if let executable { try fm.createSymbolicLink(atPath: base + "/exe", withDestinationPath: executable) }
    try Data("0::\(controlGroup)\n".utf8).write(to: URL(fileURLWithPath: base + "/cgroup"))
    for fd in foreign { try Data().write(to: URL(fileURLWithPath: base + "/foreign/\(fd)")) }
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

/// What the kernel would answer about a fixture process's tun descriptor: the device its fdinfo
/// names (none while the name is empty), in another namespace when the fixture says `foreign`.
struct FixtureTunAttachments: TunAttachmentSource {
  let root: String

  func attachment(pid: Int32, fd: Int32) -> TunDescriptor.Attachment? {
    guard let info = FileManager.default.contents(atPath: root + "/\(pid)/fdinfo/\(fd)") else { return nil }
    if FileManager.default.fileExists(atPath: root + "/\(pid)/foreign/\(fd)") { return .elsewhere }
    for line in String(decoding: info, as: UTF8.self).split(separator: "\n") where line.hasPrefix("iff:") {
      let name = line.dropFirst(4).trimmingCharacters(in: .whitespaces)
      return name.isEmpty ? TunDescriptor.Attachment.none : .here(InterfaceName(name))
    }
    return TunDescriptor.Attachment.none
  }
}

extension ProcFixture {
  var attachments: FixtureTunAttachments { FixtureTunAttachments(root: root) }
}
