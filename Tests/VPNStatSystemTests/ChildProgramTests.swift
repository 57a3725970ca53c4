import Glibc
import Testing
import VPNStatSystem

/// What vpnstat runs (a manager's tool, a hook) gets standard input, output and error, and no
/// descriptor vpnstat's parent left it.
struct ChildProgramTests {
  @Test("a program vpnstat runs holds only descriptors 0-2, whatever vpnstat was left open")
  func onlyStandardDescriptors() throws {
    // Open without close-on-exec, as a parent's leftovers are; high, so the shell's own
    // descriptor for the directory cannot take its number.
    let opened = open("/dev/null", O_RDONLY)
    try #require(opened >= 0)
    let held = fcntl(opened, F_DUPFD, 300)
    close(opened)
    try #require(held >= 300)
    defer { close(held) }
    let finished = ChildProgram(
      [Array("/bin/sh".utf8), Array("-c".utf8), Array("cd /proc/self/fd && echo *".utf8)], timeout: .seconds(30)
    ).runKeepingOutput()
    #expect(finished.outcome == .exited(0))
    let listed = String(decoding: finished.output, as: UTF8.self)
    let open = listed.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
    #expect(!open.contains(Int(held)), "the program holds descriptor \(held): \(listed)")
    #expect(open.filter { $0 > 2 }.count <= 1, "descriptors above 2: \(listed)")
  }
}
