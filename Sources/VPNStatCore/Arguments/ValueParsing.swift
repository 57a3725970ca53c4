/// Durations as people type them: `500ms`, `90s`, `15m`, `1h`, `1.5s`, `1h30m`; a bare number is
/// seconds. Nil for anything else, for zero-or-negative, and for more than 100 days.
public func parseDuration(_ text: String) -> Duration? {
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
  guard total > 0, total <= 100 * 86_400 else { return nil }
  return .nanoseconds(Int64((total * 1e9).rounded()))
}

/// A positive count (`--count 3`).
public func parsePositiveInt(_ text: String) -> Int? {
  guard let value = Int(text), value > 0 else { return nil }
  return value
}

extension String {
  var trimmingASCIIWhitespace: String {
    String(decoding: Array(utf8).trimmingASCIIWhitespace(), as: UTF8.self)
  }

  /// This string without the characters of `set` at either end (FoundationEssentials has no
  /// CharacterSet).
  public func trimmingCharacters(in set: String) -> String {
    var scalars = Substring(self)
    while let first = scalars.first, set.contains(first) { scalars = scalars.dropFirst() }
    while let last = scalars.last, set.contains(last) { scalars = scalars.dropLast() }
    return String(scalars)
  }
}

/// A traffic rate as people write one, in bytes per second: `10Gbit`, `100Mbit/s`, `1GiB`,
/// `500MB/s`; nil for anything else.
public func parseRate(_ text: String) -> Double? {
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
  return value * scale
}

/// A size in bytes as people write one: `4096`, `64KiB`, `32MiB`, `2GB`, `1.5GiB`; nil for
/// anything else, for zero or less, and for more than 2⁶² bytes.
public func parseSize(_ text: String) -> UInt64? {
  let body = Substring(text.trimmingASCIIWhitespace)
  let numberEnd = body.firstIndex(where: { !($0.isASCII && ($0.isNumber || $0 == ".")) }) ?? body.endIndex
  guard numberEnd > body.startIndex, let value = Double(body[..<numberEnd]), value > 0, value.isFinite else {
    return nil
  }
  let units: [String: Double] = [
    "": 1, "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 1024, "MiB": 1_048_576, "GiB": Double(1 << 30), "TiB": Double(1 << 40),
  ]
  guard let scale = units[String(body[numberEnd...])] else { return nil }
  let bytes = (value * scale).rounded()
  guard bytes >= 1, bytes <= Double(1 << 62) else { return nil }
  return UInt64(bytes)
}
