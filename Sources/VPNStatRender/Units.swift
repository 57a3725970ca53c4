import VPNStatModel

/// The prefixes figures are shown with: IEC (KiB, MiB: powers of 1024) or SI (kB, MB: powers of
/// 1000).
package enum UnitSystem: String, Sendable, CaseIterable {
  case iec, si
}

extension UnitSystem {
  /// The prefixes `bytes` reads exactly in — the three significant figures sizes are shown
  /// with, at its largest prefix — when it does in one system only: SI for 10,000,000,000 B
  /// (10.0 GB; 9.3132… GiB), IEC for 2,147,483,648 B (2.00 GiB; 2.1474… GB); nil otherwise
  /// (11,550 B is neither). A size a person typed as `10GB` or `2GiB` is shown as typed.
  package static func natural(for bytes: UInt64) -> UnitSystem? {
    func round(_ base: UInt64) -> Bool {
      guard bytes >= base else { return false }
      var prefix = base
      while bytes / prefix >= base, prefix <= UInt64.max / base { prefix *= base }
      let whole = bytes / prefix
      // The decimals `Units.fixed` shows: two below 10, one below 100, none above.
      let scale: UInt64 = whole < 10 ? 100 : whole < 100 ? 10 : 1
      let (high, low) = (bytes % prefix).multipliedFullWidth(by: scale)
      return prefix.dividingFullWidth((high, low)).remainder == 0
    }
    switch (round(1000), round(1024)) {
    case (true, false): return .si
    case (false, true): return .iec
    default: return nil
    }
  }
}

/// Human figures: sizes and rates in bytes or bits with IEC or SI prefixes, durations.
package enum Units {
  /// `512 B`, `1.5 KiB`, `12.3 MiB`, `1.02 GiB`: three significant figures, IEC units.
  package static func bytes(_ value: UInt64) -> String { size(value) }

  /// A size: `1.02 GiB` (IEC bytes, the default), `1.10 GB` (SI), `8.80 Gbit` (SI bits) or
  /// `8.21 Gibit` (IEC bits); three significant figures, whole numbers below the first prefix.
  package static func size(_ value: UInt64, units: UnitSystem = .iec, bits: Bool = false) -> String {
    scaled(Double(value), units: units, bits: bits)
  }

  /// A rate in bytes per second (`1.5 MiB/s`) or bits (`12.6 Mbit/s`). Without a choice of
  /// units, bytes are IEC and bits SI, as link speeds are.
  package static func rate(_ bytesPerSecond: Double, units: UnitSystem? = nil, bits: Bool) -> String {
    scaled(bytesPerSecond, units: units ?? (bits ? .si : .iec), bits: bits) + "/s"
  }

  static func scaled(_ bytes: Double, units: UnitSystem, bits: Bool) -> String {
    let base: Double = units == .iec ? 1024 : 1000
    let names =
      switch (bits, units) {
      case (false, .iec): ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
      case (false, .si): ["B", "kB", "MB", "GB", "TB", "PB", "EB"]
      case (true, .iec): ["bit", "Kibit", "Mibit", "Gibit", "Tibit", "Pibit", "Eibit"]
      case (true, .si): ["bit", "kbit", "Mbit", "Gbit", "Tbit", "Pbit", "Ebit"]
      }
    var value = max(0, bits ? bytes * 8 : bytes)
    if value < base { return whole(value) + " " + names[0] }
    var unit = 0
    while value >= base, unit < names.count - 1 {
      value /= base
      unit += 1
    }
    return fixed(value) + " " + names[unit]
  }

  /// A limit someone typed (`--data-cap`, `--limit`): in the prefixes it reads exactly in
  /// (`UnitSystem.natural`), else IEC — `5MB` is `5.00 MB`, `2GiB` is `2.00 GiB`.
  package static func limit(_ bytes: UInt64) -> String {
    size(bytes, units: UnitSystem.natural(for: bytes) ?? .iec)
  }

  /// A number with thousands separators: `1 234 567` (thin spaces would confuse some terminals).
  package static func grouped(_ value: UInt64) -> String {
    let digits = Array(String(value))
    var out = ""
    for (i, digit) in digits.enumerated() {
      if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
      out.append(digit)
    }
    return out
  }

  /// Three significant figures: 1.23, 12.3, 123.
  static func fixed(_ value: Double) -> String {
    let decimals = value < 10 ? 2 : value < 100 ? 1 : 0
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    if decimals == 0 { return whole(rounded) }
    var text = "\(rounded)"
    // Keep trailing zeros so columns line up: 1.50, not 1.5.
    if let dot = text.firstIndex(of: ".") {
      let have = text.distance(from: dot, to: text.endIndex) - 1
      if have < decimals { text += String(repeating: "0", count: decimals - have) }
    }
    return text
  }

  /// A whole number as digits, or in exponent form beyond Int64 (`1.8e+22`), never a trap.
  package static func whole(_ value: Double) -> String {
    Int64(exactly: value.rounded()).map { String($0) } ?? "\(value.rounded())"
  }

  /// `31 min 12 s`, `2 h 05 min`, `45 s`, `28 d 06 h`: a wait or a remaining time, to the second
  /// under an hour, to the minute under a day, to the hour beyond.
  package static func duration(seconds total: Int64) -> String {
    let value = max(0, total)
    if value >= 86_400 {
      let hours = value / 3600 % 24
      return "\(value / 86_400) d \(hours < 10 ? "0" : "")\(hours) h"
    }
    let hours = value / 3600
    let minutes = value / 60 % 60
    let seconds = value % 60
    if hours > 0 { return "\(hours) h \(minutes < 10 ? "0" : "")\(minutes) min" }
    if minutes > 0 { return seconds == 0 ? "\(minutes) min" : "\(minutes) min \(seconds) s" }
    return "\(seconds) s"
  }

  /// A duration someone chose (a timeout, an interval): `500 ms` under a second, else as
  /// `duration(seconds:)` rounded to the second.
  package static func duration(_ value: Duration) -> String {
    let nanoseconds = value.nanoseconds
    if nanoseconds < 1_000_000_000 { return "\(max(0, nanoseconds) / 1_000_000) ms" }
    return duration(seconds: (nanoseconds + 500_000_000) / 1_000_000_000)
  }

  /// `14:59` or `1:02:03`: a countdown clock.
  package static func clock(seconds total: Int64) -> String {
    let value = max(0, total)
    let hours = value / 3600
    let minutes = value / 60 % 60
    let seconds = value % 60
    func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
    if hours > 0 { return "\(hours):\(two(minutes)):\(two(seconds))" }
    return "\(minutes):\(two(seconds))"
  }
}
