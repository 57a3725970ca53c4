import Foundation
import Testing

@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// `OpenDirectory`, the entry-by-entry walk `flows` runs over /proc/*/fd, on a tree shaped like
/// it in a temporary directory: names lent in place, directories and links read relative to
/// their parent, failures as `Errno`.
struct OpenDirectoryTests {
  /// `12/fd/{0,1,7}` and `345/fd/3`, links as /proc shows them, and a file that is not a pid.
  func procLikeTree() throws -> TemporaryDirectory {
    let root = try TemporaryDirectory("opendir")
    let files = FileManager.default
    for (pid, links) in [
      ("12", ["0": "/dev/null", "1": "socket:[4242]", "7": "pipe:[9]"]), ("345", ["3": "socket:[77]"]),
    ] {
      try files.createDirectory(atPath: root.file("\(pid)/fd"), withIntermediateDirectories: true)
      for (fd, target) in links {
        try files.createSymbolicLink(atPath: root.file("\(pid)/fd/\(fd)"), withDestinationPath: target)
      }
    }
    #expect(files.createFile(atPath: root.file("self-test"), contents: Data()))
    return root
  }

  @Test("every entry but . and .. once; each fd directory opened from its entry; links read into one buffer")
  func walk() throws {
    let root = try procLikeTree()
    let directory = try OpenDirectory(SystemPath(root.path))
    var names: [String] = []
    var links: [String: String] = [:]
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
    defer { buffer.deallocate() }
    try directory.forEachEntry { entry in
      let name = String(decoding: entry.name, as: UTF8.self)
      names.append(name)
      guard let fds = try? directory.directory(entry, appending: "fd") else { return true }
      try? fds.forEachEntry { fd in
        guard let count = try? fds.symbolicLink(fd, into: buffer) else { return true }
        links["\(name)/\(String(decoding: fd.name, as: UTF8.self))"] = String(
          decoding: UnsafeRawBufferPointer(rebasing: buffer[..<count]), as: UTF8.self)
        return true
      }
      return true
    }
    #expect(names.sorted() == ["12", "345", "self-test"])
    #expect(
      links == ["12/0": "/dev/null", "12/1": "socket:[4242]", "12/7": "pipe:[9]", "345/3": "socket:[77]"])
  }

  @Test("false from the body stops the walk at that entry")
  func stops() throws {
    let root = try procLikeTree()
    var seen = 0
    try OpenDirectory(SystemPath(root.path)).forEachEntry { _ in
      seen += 1
      return false
    }
    #expect(seen == 1)
  }

  @Test("a missing directory, a file that is not one and a name that is no link fail with their errno")
  func failures() throws {
    let root = try procLikeTree()
    #expect(throws: Errno.noSuchFile) { try OpenDirectory(SystemPath(root.file("gone"))) }
    #expect(throws: Errno(rawValue: ENOTDIR)) { try OpenDirectory(SystemPath(root.file("self-test"))) }
    let directory = try OpenDirectory(SystemPath(root.path))
    var errors: [any Error] = []
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
    defer { buffer.deallocate() }
    try directory.forEachEntry { entry in
      guard entry.name.elementsEqual("self-test".utf8) else { return true }
      do {
        _ = try directory.directory(entry, appending: "fd")
      } catch {
        errors.append(error)
      }
      do {
        _ = try directory.symbolicLink(entry, into: buffer)
      } catch {
        errors.append(error)
      }
      return true
    }
    #expect(errors.map { $0 as? Errno } == [Errno(rawValue: ENOTDIR), .invalidArgument])
  }

  @Test("directoryListing, now read through OpenDirectory, still gives names with their inode numbers")
  func listing() throws {
    let root = try procLikeTree()
    let listing = try SmallFile.directoryListing(SystemPath(root.path))
    #expect(listing.map { String(decoding: $0.name, as: UTF8.self) }.sorted() == ["12", "345", "self-test"])
    for entry in listing {
      var info = stat()
      #expect(lstat(root.file(String(decoding: entry.name, as: UTF8.self)), &info) == 0)
      #expect(entry.identity == UInt64(info.st_ino))
    }
  }
}
