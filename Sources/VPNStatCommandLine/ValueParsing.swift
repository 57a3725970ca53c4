import VPNStatCapture
import VPNStatEngine
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem

// Every parser of sizes, numbers, durations and rates reads a value the same way: whitespace
// around it is ignored (` 5`, `1MiB ` as a shell or a configuration line may leave it), inside
// it is not (`1 ms`, `5 5`).

/// The durations every option accepts: at least 1 ms (less rounds to nothing a timer or a slice
/// of packet time can use: `0.0000000001` made watch and record spin and flows divide by zero),
/// at most 100 days.
package let durationRange: ClosedRange<Duration> = .milliseconds(1) ... .seconds(100 * 86_400)

/// What a duration option expects, for its usage errors.
package let durationExpectation = "a duration from 1ms to 100d, such as 500ms, 90s, 15m or 1h30m"

/// Durations as people type them: `500ms`, `90s`, `15m`, `1h`, `1.5s`, `1h30m`; a bare number is
/// seconds. Nil for anything else and for anything outside `durationRange`.
package func parseDuration(_ text: String) -> Duration? {
  var total: Double = 0
  var rest = Substring(text.trimmingASCIIWhitespace)
  guard !rest.isEmpty else { return nil }
  var sawUnit = false
  while !rest.isEmpty {
    let numberEnd = rest.firstIndex(where: { !($0.isASCII && ($0.isNumber || $0 == ".")) }) ?? rest.endIndex
    guard numberEnd > rest.startIndex, let value = Double(rest[..<numberEnd]), value.isFinite else {
      return nil
    }
    rest = rest[numberEnd...]
    let unitEnd = rest.firstIndex(where: { !$0.isLetter }) ?? rest.endIndex
    let unit = rest[..<unitEnd]
    rest = rest[unitEnd...]
    let scale: Double
    switch unit {
    case "":
      scale = 1
      guard !sawUnit, rest.isEmpty else { return nil }
    case "ms": scale = 0.001
    case "s", "sec": scale = 1
    case "m", "min": scale = 60
    case "h": scale = 3600
    case "d": scale = 86_400
    default: return nil
    }
    sawUnit = true
    total += value * scale
  }
  // Checked in seconds before converting, so the conversion cannot overflow.
  guard total <= 100 * 86_400 else { return nil }
  let duration = Duration.nanoseconds(Int64((total * 1e9).rounded()))
  return durationRange.contains(duration) ? duration : nil
}

/// A positive count (`--count 3`).
package func parsePositiveInt(_ text: String) -> Int? {
  guard let value = Int(text.trimmingASCIIWhitespace), value > 0 else { return nil }
  return value
}

/// A count within `range` (`--hours 24`); nil for anything else, also for a number too large
/// for an Int.
package func parseCount(_ text: String, in range: ClosedRange<Int>) -> Int? {
  guard let value = Int(text.trimmingASCIIWhitespace), range.contains(value) else { return nil }
  return value
}

extension String {
  var trimmingASCIIWhitespace: String {
    String(decoding: Array(utf8).trimmingASCIIWhitespace(), as: UTF8.self)
  }

}

/// A traffic rate as people write one, in bytes per second: `10Gbit`, `100Mbit/s`, `1GiB`,
/// `500MB/s`; nil for anything else.
package func parseRate(_ text: String) -> Double? {
  var body = Substring(text.trimmingASCIIWhitespace)
  if body.hasSuffix("/s") { body = body.dropLast(2) }
  let numberEnd = body.firstIndex(where: { !($0.isASCII && ($0.isNumber || $0 == ".")) }) ?? body.endIndex
  guard numberEnd > body.startIndex, let value = Double(body[..<numberEnd]), value > 0, value.isFinite else {
    return nil
  }
  let units: [String: Double] = [
    "bit": 1.0 / 8, "kbit": 1e3 / 8, "Mbit": 1e6 / 8, "Gbit": 1e9 / 8, "Tbit": 1e12 / 8,
    "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 1024, "MiB": 1_048_576, "GiB": Double(1 << 30), "TiB": Double(1 << 40),
  ]
  guard let scale = units[String(body[numberEnd...])] else { return nil }
  // Three hundred digits of TiB are finite digits and an infinite rate.
  let rate = value * scale
  return rate.isFinite ? rate : nil
}

/// The largest size any option takes: 2⁶² bytes (4 EiB).
package let largestSize: UInt64 = 1 << 62

/// What a size option expects, for its usage errors: its unit and its bounds.
package let sizeExpectation = "a size from 1B to 4EiB such as 500MB, 2GiB or 1PiB"

/// A size in bytes as people write one: `4096`, `64KiB`, `32MiB`, `2GB`, `1.5GiB`, `1PiB`; nil
/// for anything else, for zero or less, and for more than 2⁶² bytes (`largestSize`).
package func parseSize(_ text: String) -> UInt64? {
  let body = Substring(text.trimmingASCIIWhitespace)
  let numberEnd = body.firstIndex(where: { !($0.isASCII && ($0.isNumber || $0 == ".")) }) ?? body.endIndex
  guard numberEnd > body.startIndex, let value = Double(body[..<numberEnd]), value > 0, value.isFinite else {
    return nil
  }
  let units: [String: Double] = [
    "": 1, "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15, "EB": 1e18,
    "KiB": 1024, "MiB": 1_048_576, "GiB": Double(1 << 30), "TiB": Double(1 << 40), "PiB": Double(1 << 50),
    "EiB": Double(1 << 60),
  ]
  guard let scale = units[String(body[numberEnd...])] else { return nil }
  let bytes = (value * scale).rounded()
  guard bytes >= 1, bytes <= Double(largestSize) else { return nil }
  return UInt64(bytes)
}
