import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatRender

/// A field is written in one piece (key, colon and value in one reservation of the buffer): the
/// same bytes as a key, then a value, at the limits of every number and in every position.
struct JSONWriterTests {
  func document(_ write: (inout JSONWriter) -> Void) -> String {
    var json = JSONWriter(capacity: 1)
    json.beginObject()
    write(&json)
    json.endObject()
    return String(decoding: json.bytes, as: UTF8.self)
  }

  @Test("a count is written in decimal as Swift writes it, at every length and either side of each power of ten")
  func decimals() {
    var values: [UInt64] = Array(0...10_000) + [UInt64.max, UInt64.max - 1]
    var power: UInt64 = 10
    for _ in 1...19 {
      values += [power - 1, power, power + 1, power + power / 2]
      if power > UInt64.max / 10 { break }
      power *= 10
    }
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: OutputBytes.maximumDigits)
    defer { buffer.deallocate() }
    var wrong: [UInt64] = []
    for value in values {
      let written = OutputBytes.decimal(value, at: buffer)
      if String(decoding: UnsafeBufferPointer(start: buffer, count: written), as: UTF8.self) != String(value) {
        wrong.append(value)
      }
    }
    #expect(wrong.isEmpty, "\(wrong.prefix(10))")
  }

  @Test("fields write their key and value, null for none, at the limits of each number")
  func fields() throws {
    let text = document { json in
      json.field("max", UInt64.max)
      json.field("zero", UInt64(0))
      json.field("none", nil as UInt64?)
      json.field("min", Int64.min)
      json.field("negative", -42 as Int64?)
      json.field("int", Int.max)
      json.field("nothing", nil as Int?)
      json.field("i", 7 as Int?)
      json.key("nested")
      json.beginObject()
      json.field("ten", UInt64(10))
      json.endObject()
      json.name(InterfaceName("wg0"), key: "name", encodingKey: "name_encoding")
      json.name(nil, key: "other", encodingKey: "other_encoding")
      json.field("last", true)
    }
    #expect(
      text
        == #"{"max":18446744073709551615,"zero":0,"none":null,"min":-9223372036854775808,"negative":-42,"#
        + #""int":9223372036854775807,"nothing":null,"i":7,"nested":{"ten":10},"name":"wg0","name_encoding":"utf8","#
        + #""other":null,"other_encoding":null,"last":true}"#)
    #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [String: Any])
  }

  @Test("a run of whole fields is written as the next elements of the object, first or after others")
  func runsOfFields() throws {
    let first = document { json in
      json.fields(#""a":null,"b":null"#)
      json.field("c", UInt64(1))
    }
    #expect(first == #"{"a":null,"b":null,"c":1}"#)
    let later = document { json in
      json.field("c", UInt64(1))
      json.fields(#""a":null,"b":null"#)
      json.key("d")
      json.beginObject()
      json.fields(#""e":null"#)
      json.endObject()
    }
    #expect(later == #"{"c":1,"a":null,"b":null,"d":{"e":null}}"#)
    #expect(try JSONSerialization.jsonObject(with: Data(later.utf8)) is [String: Any])
  }

  @Test("the words a report writes for its class, evidence and state are the contract's raw values")
  func wordsAreRawValues() {
    func text(_ word: StaticString) -> String { word.description }
    for value in InterfaceClass.allCases { #expect(text(value.word) == value.rawValue) }
    for value in ClassEvidence.allCases { #expect(text(value.word) == value.rawValue) }
    for value in LinkState.allCases { #expect(text(value.word) == value.rawValue) }
    let written = document { json in json.field("state", word: LinkState.lowerLayerDown.word) }
    #expect(written == #"{"state":"lowerlayerdown"}"#)
  }

  @Test("fields written in one room are the bytes of the same fields written one by one, in any position")
  func roomIsTheSameBytes() throws {
    func fields(_ json: inout JSONWriter) {
      json.field("max", UInt64.max)
      json.field("none", nil as UInt64?)
      json.field("min", Int64.min)
      json.field("state", word: LinkState.lowerLayerDown.word)
      json.fields(#""a":null,"b":null"#)
    }
    let one = document { json in
      json.field("first", UInt64(1))
      fields(&json)
    }
    let roomed = document { json in
      json.field("first", UInt64(1))
      json.withRoom(200) { room in
        room.field("max", UInt64.max)
        room.field("none", nil as UInt64?)
        room.field("min", Int64.min)
        room.field("state", word: LinkState.lowerLayerDown.word)
        room.fields(#""a":null,"b":null"#)
      }
    }
    #expect(roomed == one)
    // First in its object, and closing it.
    var json = JSONWriter(capacity: 1)
    json.beginObject()
    json.withRoom(64) { room in
      room.field("n", UInt64(7))
      room.endObject()
    }
    json.field("after", nil as UInt64?)
    #expect(String(decoding: json.bytes, as: UTF8.self) == #"{"n":7},"after":null"#)
  }

  @Test(
    "the largest report a status writes fits the room reserved for its fields, with its ledger's and without, and is valid JSON"
  )
  func largestReportFitsItsRoom() throws {
    let most = TrafficCounts(rxBytes: .max, txBytes: .max, rxPackets: .max, txPackets: .max)
    var report = InterfaceReport(
      name: InterfaceName("n"), index: Int32.min, interfaceClass: .cellular, classBy: .tunFlags,
      state: .lowerLayerDown,
      counters: InterfaceCounters(most, rxErrors: .max, txErrors: .max, rxDropped: .max, txDropped: .max),
      width: .bits64)
    let named = #"{"name":"n","name_encoding":"utf8""#
    // The latest time a Timestamp holds (year 2262), the largest counts.
    let ledger = LedgerTotals(
      most, resets: .max, wraps: .max, discarded: .max, firstSeenAt: Timestamp(nanoseconds: .max))
    for withLedger in [false, true] {
      report.ledger = withLedger ? ledger : nil
      var json = JSONWriter(capacity: 1)
      StatusJSON.write(report, at: Timestamp(seconds: 1_800_000_000), into: &json)
      let text = String(decoding: json.bytes, as: UTF8.self)
      let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
      #expect(object["rx_dropped"] as? UInt64 == .max)
      #expect(object["manager"] is NSNull)
      #expect(object["discarded"] as? UInt64 == (withLedger ? .max : nil))
      #expect(object["first_seen_at"] as? String == (withLedger ? "2262-04-11T23:47:16Z" : nil))
      // Everything after the name went through the room (a room too small stops the program:
      // `JSONRoom.claim`); without a ledger, to the end.
      #expect(text.hasPrefix(named))
      if !withLedger { #expect(text.utf8.count - named.utf8.count <= StatusJSON.reportRoom) }
    }
  }

  @Test("a copy of a writer keeps its own bytes when both go on writing")
  func copiesAreValues() {
    var first = JSONWriter(capacity: 1)
    first.beginObject()
    first.field("a", UInt64(1))
    var second = first
    first.field("b", UInt64(2))
    second.field("c", UInt64(3))
    first.endObject()
    second.endObject()
    #expect(String(decoding: first.bytes, as: UTF8.self) == #"{"a":1,"b":2}"#)
    #expect(String(decoding: second.bytes, as: UTF8.self) == #"{"a":1,"c":3}"#)
  }

  @Test(
    "a time written again is written from the text made the first time only when it is the same whole second: each field its own time, whatever came before"
  )
  func timesInTurn() {
    let seconds: [Int64] = [1_800_000_000, 1_800_000_000, 1_800_000_001, 1_800_000_000, -1, 1_800_000_001, 86_399]
    // Nanoseconds within the same second too: whole seconds are written.
    let times = seconds.enumerated().map { Timestamp(nanoseconds: $1 * 1_000_000_000 + Int64($0) * 100_000_000) }
    let text = document { json in
      for time in times {
        json.field("t", rfc3339: time)
        json.field("none", rfc3339: nil)
      }
    }
    let expected = times.map { #""t":""# + $0.rfc3339 + #"","none":null"# }.joined(separator: ",")
    #expect(text == "{" + expected + "}")
    #expect(Set(times.map(\.rfc3339)).count == 4)
  }
}
