import Foundation
import Testing

@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// `DirectoryTrust` on real files with real POSIX ACLs (setfacl): an entry that lets another
/// user write is as good as a mode bit that does, though `ls -l` shows only the mask. Issue 38:
/// root ran the PostDown of a wg-quick configuration `user:nobody:rw` let nobody write.
struct DirectoryTrustTests {
  /// nobody's uid and nogroup's gid: the other user an entry names.
  static func nobody() throws -> (uid: uid_t, gid: gid_t) {
    let user = try #require(getpwnam("nobody"), "no user nobody")
    let group = getgrnam("nogroup")
    return (user.pointee.pw_uid, group?.pointee.gr_gid ?? user.pointee.pw_gid)
  }

  /// A directory of mode 0755 holding `file`, mode 0644 (both this user's).
  static func tree(_ label: String) throws -> (directory: TemporaryDirectory, file: String) {
    let directory = try TemporaryDirectory(label)
    let file = directory.file("file")
    try Data("x\n".utf8).write(to: URL(fileURLWithPath: file))
    chmod(file, 0o644)
    return (directory, file)
  }

  @Test(
    "a file an ACL entry lets another user or group write is refused, naming the entry; the mask, root and this user are not others"
  )
  func aclOnFile() throws {
    let (directory, file) = try Self.tree("aclfile")
    let nobody = try Self.nobody()
    #expect(DirectoryTrust.fileProblem(file) == nil)
    try setfacl("-m", "u:nobody:rw", file)
    let problem = try #require(DirectoryTrust.fileProblem(file), "user:nobody:rw passed")
    #expect(problem.contains("ACL entry user:nobody (uid \(nobody.uid)) may write it"), "\(problem)")
    #expect(problem.contains(file), "\(problem)")
    // The mask limits every named entry: read-only through it, nobody cannot write.
    try setfacl("-m", "m::r", file)
    #expect(DirectoryTrust.fileProblem(file) == nil, "\(DirectoryTrust.fileProblem(file) ?? "")")
    try setfacl("-b", file)
    try setfacl("-m", "u:nobody:r", file)
    #expect(DirectoryTrust.fileProblem(file) == nil, "read-only entry")
    try setfacl("-b", file)
    try setfacl("-m", "g:nogroup:rw", file)
    let group = try #require(DirectoryTrust.fileProblem(file), "group:nogroup:rw passed")
    #expect(group.contains("ACL entry group:nogroup (gid \(nobody.gid)) may write it"), "\(group)")
    try setfacl("-b", file)
    // Root, root's group and this user are who the mode rule trusts already.
    try setfacl("-m", "u:root:rw,g:root:rw,u:\(geteuid()):rw", file)
    #expect(DirectoryTrust.fileProblem(file) == nil, "\(DirectoryTrust.fileProblem(file) ?? "")")
    withExtendedLifetime(directory) {}
  }

  @Test("a directory an ACL entry lets another user write is refused, and every file in it, at any level above")
  func aclOnDirectory() throws {
    let (directory, file) = try Self.tree("acldir")
    let nobody = try Self.nobody()
    let inner = directory.file("inner")
    try FileManager.default.createDirectory(atPath: inner, withIntermediateDirectories: true)
    chmod(inner, 0o755)
    let deep = inner + "/deep"
    try Data("x\n".utf8).write(to: URL(fileURLWithPath: deep))
    chmod(file, 0o600)
    #expect(DirectoryTrust.problem(directory.path) == nil && DirectoryTrust.fileProblem(deep) == nil)
    try setfacl("-m", "u:nobody:rwx", directory.path)
    for problem in [
      DirectoryTrust.problem(directory.path), DirectoryTrust.fileProblem(file), DirectoryTrust.problem(inner),
      DirectoryTrust.fileProblem(deep), DirectoryTrust.problem(directory.file("missing/sub")),
    ] {
      let problem = try #require(problem, "an ACL'd directory passed")
      #expect(problem.contains("\(directory.path) is writable by other users"), "\(problem)")
      #expect(problem.contains("ACL entry user:nobody (uid \(nobody.uid)) may write it"), "\(problem)")
    }
  }

  @Test("a directory whose default ACL would let another user write the files made in it is refused")
  func defaultACL() throws {
    let (directory, file) = try Self.tree("acldef")
    let nobody = try Self.nobody()
    try setfacl("-d", "-m", "u:nobody:rwx", directory.path)
    for problem in [DirectoryTrust.problem(directory.path), DirectoryTrust.fileProblem(file)] {
      let problem = try #require(problem, "a default ACL for nobody passed")
      #expect(
        problem.contains("default ACL entry user:nobody (uid \(nobody.uid)) would let others write"), "\(problem)")
    }
    // A read-only default entry gives nothing away.
    try setfacl("-k", directory.path)
    try setfacl("-d", "-m", "u:nobody:rx", directory.path)
    #expect(DirectoryTrust.problem(directory.path) == nil, "\(DirectoryTrust.problem(directory.path) ?? "")")
  }

  @Test("a socket in a directory an ACL lets others write is one they could have put there")
  func aclOnSocketDirectory() throws {
    let directory = try TemporaryDirectory("aclsock")
    let socket = directory.file("s")
    let made = try python("import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])", [socket])
    try #require(made.status == 0, "\(made.errors)")
    #expect(DirectoryTrust.socketProblem(socket) == nil)
    try setfacl("-m", "g:nogroup:rwx", directory.path)
    let problem = try #require(DirectoryTrust.socketProblem(socket), "an ACL'd directory passed")
    #expect(problem.contains("ACL entry group:nogroup"), "\(problem)")
  }
}
