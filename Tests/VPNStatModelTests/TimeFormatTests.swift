import Testing

@testable import VPNStatModel

/// RFC 3339 times are written digit by digit into the String; they read as before.
struct TimeFormatTests {
  /// The formatter as it was (string concatenation), the reference; its remainder no longer
  /// overflows at Int64.min, which crashed it.
  static func previous(_ time: Timestamp, fractionDigits: Int) -> String {
    let secs = time.seconds
    let nanos = (time.nanoseconds % 1_000_000_000 + 1_000_000_000) % 1_000_000_000
    let days = secs.floorDivided(by: 86_400)
    let secondOfDay = secs - days * 86_400
    let (year, month, day) = civilDate(fromDays: days)
    var text = padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
    text += "T" + padded(secondOfDay / 3600, 2) + ":" + padded(secondOfDay / 60 % 60, 2) + ":"
    text += padded(secondOfDay % 60, 2)
    if fractionDigits > 0 {
      let digits = min(fractionDigits, 9)
      var fraction = nanos
      for _ in digits..<9 { fraction /= 10 }
      text += "." + padded(fraction, digits)
    }
    return text + "Z"
  }

  @Test("every width of fraction, across the whole range of a Timestamp, as before and parseable back")
  func sameAsBefore() {
    var state: UInt64 = 3339
    var times: [Timestamp] = [
      Timestamp(nanoseconds: 0), Timestamp(nanoseconds: -1), Timestamp(nanoseconds: Int64.min),
      Timestamp(nanoseconds: Int64.max), Timestamp(seconds: 1_800_000_000),
      Timestamp(nanoseconds: 951_782_400_000_000_001),
    ]
    for _ in 0..<2000 {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      times.append(Timestamp(nanoseconds: Int64(bitPattern: state)))
    }
    for time in times {
      for digits in 0...9 {
        let text = time.rfc3339(fractionDigits: digits)
        #expect(text == Self.previous(time, fractionDigits: digits), "\(time.nanoseconds) \(digits)")
        // The parser refuses what lies beyond a few centuries around 1970 (see its checks).
        if digits == 9, time.nanoseconds.magnitude < 1 << 62 {
          #expect(Timestamp(rfc3339: text) == time, "\(text)")
        }
      }
    }
    #expect(Timestamp(seconds: 1_800_000_000).rfc3339 == "2027-01-15T08:00:00Z")
  }
}
