import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// The datagrams vpnstat sends systemd: what arrives at a socket bound where `NOTIFY_SOCKET` or
/// the journal's socket would be, byte for byte.
struct ServiceManagerSocketTests {
  /// A datagram socket bound at `path`, as systemd's is.
  final class Receiver {
    let fd: Int32
    init(path: String) throws {
      fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
      var address = sockaddr_un()
      address.sun_family = sa_family_t(AF_UNIX)
      withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
      }
      let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
      }
      if bound != 0 { throw TestSetupError("bind \(path): \(errno)") }
    }
    deinit { close(fd) }
    func next() -> [UInt8] {
      var buffer = [UInt8](repeating: 0, count: 65536)
      let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
      return count > 0 ? Array(buffer[..<count]) : []
    }
  }

  @Test("a datagram reaches the socket whole; nobody listening is an error, never a wait")
  func sends() throws {
    let directory = try TemporaryDirectory("notify")
    let receiver = try Receiver(path: directory.file("notify"))
    let socket = try ServiceManagerSocket(to: .path(SystemPath(directory.file("notify"))))
    try socket.send(Array("READY=1\nSTATUS=active · 9:41 left on wg0".utf8))
    #expect(String(decoding: receiver.next(), as: UTF8.self) == "READY=1\nSTATUS=active · 9:41 left on wg0")
    let nobody = try ServiceManagerSocket(to: .path(SystemPath(directory.file("absent"))))
    #expect(throws: Errno.self) { try nobody.send(Array("WATCHDOG=1".utf8)) }
  }

  @Test("NOTIFY_SOCKET: a path or @ for the abstract namespace; anything else is no socket")
  func notifySocketNames() {
    #expect(ServiceManagerSocket.name(notifySocket: "/run/systemd/notify") == .path("/run/systemd/notify"))
    #expect(ServiceManagerSocket.name(notifySocket: "@/org/x") == .abstract(Array("/org/x".utf8)))
    #expect(ServiceManagerSocket.name(notifySocket: "relative") == nil)
  }

  @Test(
    "the journal's native protocol: NAME=value lines; a value with a newline as NAME, its length (64-bit LE) and the bytes"
  )
  func journalEncoding() {
    let bytes = JournalEntry.encode([("MESSAGE", "two\nlines"), ("PRIORITY", "4")])
    let expected: [UInt8] =
      Array("MESSAGE\n".utf8) + [9, 0, 0, 0, 0, 0, 0, 0] + Array("two\nlines\n".utf8) + Array("PRIORITY=4\n".utf8)
    #expect(bytes == expected)
  }

  @Test("JOURNAL_STREAM names stderr only when its device and inode are stderr's")
  func journalStream() throws {
    var info = stat()
    fstat(2, &info)
    #expect(JournalEntry.isJournalStream(.standardError, journalStream: "\(info.st_dev):\(info.st_ino)"))
    #expect(!JournalEntry.isJournalStream(.standardError, journalStream: "\(info.st_dev):\(info.st_ino + 1)"))
    #expect(!JournalEntry.isJournalStream(.standardError, journalStream: "garbage"))
    #expect(!JournalEntry.isJournalStream(.standardError, journalStream: nil))
  }
}
