import Foundation
import Testing
import VPNStatSimulation

@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatTestSupport

extension WireGuardReaderTests {
  /// What the UAPI parser makes of one-line changes to the real answers (a line dropped,
  /// doubled, cut, moved, emptied) and of mangled bytes, pinned (`Tests/Pinned/uapi-answers`):
  /// the parser was split into pieces without changing a device it reads or a reason it gives.
  /// Of the 610 answers the test parses, it pins the two real answers, the first case of
  /// each reason the parser gives (line numbers aside), and one of each way a changed answer is
  /// still read as a different device: no listen port, an extra empty peer, no or a cut
  /// endpoint, no keepalive, allowed IPs lost, doubled or reordered, two peers run together, the
  /// handshake's seconds or nanoseconds lost, a byte count lost, mangled bytes read as a key or
  /// an endpoint, and a dropped line that changes nothing.
  static let pinnedCases = [
    "two peers", "handshake",
    // Each reason.
    "two peers cut line 2", "two peers empty value line 2", "two peers swap line 2", "two peers drop line 3",
    "two peers cut line 3", "two peers empty value line 5", "two peers empty value line 6",
    "two peers empty value line 7", "two peers empty value line 8", "two peers empty value line 9",
    "two peers empty value line 10", "two peers empty value line 11", "two peers swap line 23",
    "two peers drop line 24", "two peers empty value line 24", "mangled 0",
    // Each kind of device read from a changed answer.
    "two peers drop line 1", "two peers drop line 2", "two peers double line 3", "two peers drop line 6",
    "two peers cut line 6", "two peers drop line 11", "two peers drop line 12", "two peers double line 12",
    "two peers swap line 12", "two peers drop line 14", "two peers drop line 23", "handshake drop line 7",
    "handshake drop line 8", "handshake drop line 9", "mangled 101", "mangled 322",
  ]

  @Test("UAPI answers changed a line at a time, and mangled ones: the devices and reasons are the pinned ones")
  func pinnedUAPIAnswers() {
    var pins = PinnedCases("uapi-answers", Self.pinnedCases)
    func outcome(_ bytes: [UInt8]) -> [UInt8] {
      do {
        return Array(String(describing: try WireGuardUAPI.parse(bytes)).utf8)
      } catch {
        return Array("error: \(error.description)".utf8)
      }
    }
    for (name, answer) in [("two peers", UAPICapture.twoPeers), ("handshake", UAPICapture.handshake)] {
      let lines = answer.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      pins.add(name, outcome(Array(answer.utf8)))
      for index in lines.indices {
        var changes: [(String, [String])] = []
        var dropped = lines
        dropped.remove(at: index)
        changes.append(("drop", dropped))
        var doubled = lines
        doubled.insert(lines[index], at: index)
        changes.append(("double", doubled))
        var cut = lines
        cut[index] = String(lines[index].prefix(lines[index].count / 2))
        changes.append(("cut", cut))
        var emptied = lines
        emptied[index] = lines[index].split(separator: "=").first.map { $0 + "=" } ?? ""
        changes.append(("empty value", emptied))
        if index + 1 < lines.count {
          var moved = lines
          moved.swapAt(index, index + 1)
          changes.append(("swap", moved))
        }
        for (change, changed) in changes {
          pins.add("\(name) \(change) line \(index + 1)", outcome(Array(changed.joined(separator: "\n").utf8)))
        }
      }
    }
    var generator = SplitMix(seed: 21)
    let base = UAPICapture.twoPeersBytes
    for round in 0..<400 {
      var bytes = base
      for _ in 0..<(1 + generator.next() % 3) {
        bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
      }
      pins.add("mangled \(round)", outcome(bytes))
    }
    pins.expect()
  }
}
