import Foundation
import Testing

@testable import VPNStatKernel
@testable import VPNStatModel
@testable import VPNStatTestSupport

extension WireGuardReaderTests {
  /// What the UAPI parser makes of every one-line change to the real answers (a line dropped,
  /// doubled, cut, moved, emptied) and of mangled bytes, pinned (`Tests/Pinned`): the parser
  /// was split into pieces without changing a device it reads or a reason it gives.
  @Test("UAPI answers changed a line at a time, and mangled ones: the devices and reasons are the pinned ones")
  func pinnedUAPIAnswers() {
    var cases: [(String, [UInt8])] = []
    func outcome(_ bytes: [UInt8]) -> [UInt8] {
      do {
        return Array(String(describing: try WireGuardUAPI.parse(bytes)).utf8)
      } catch {
        return Array("error: \(error.description)".utf8)
      }
    }
    for (name, answer) in [("two peers", UAPICapture.twoPeers), ("handshake", UAPICapture.handshake)] {
      let lines = answer.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
      cases.append((name, outcome(Array(answer.utf8))))
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
          cases.append(("\(name) \(change) line \(index + 1)", outcome(Array(changed.joined(separator: "\n").utf8))))
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
      cases.append(("mangled \(round)", outcome(bytes)))
    }
    PinnedOutput.expect(cases, named: "uapi-answers.txt")
  }
}
