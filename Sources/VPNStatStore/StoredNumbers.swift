import VPNStatModel

/// A kind of number the store keeps, read back through the model's rule for it: every column
/// decoded here goes through one of these, so a value no vpnstat writes (a crafted or damaged
/// file) is `StoreError.damagedValue` naming where it lies — never a trap in the arithmetic
/// the model does with it (an instant nine quintillion nanoseconds on, a length of 292 years).
/// Counters have no kind: they are UInt64 stored as an Int64's bits, so every value is one.
struct StoredNumber<Value> {
  let decode: (Int64) -> Value?
  /// What the value should have been, for the message.
  let expected: String
}

/// The bounds of `Timestamp.storable`, for the messages.
private let instants = "from \(Timestamp.storable.lowerBound.rfc3339) to \(Timestamp.storable.upperBound.rfc3339)"
/// Nanoseconds in a day.
private let day: Int64 = 86_400_000_000_000

extension StoredNumber<Timestamp> {
  /// Nanoseconds since the epoch (`Timestamp.storable`).
  static var instant: Self { Self(decode: Timestamp.init(stored:), expected: "not a time " + instants) }
  /// Seconds since the epoch (`Timestamp.storable`): a bucket's start.
  static var instantSeconds: Self {
    Self(decode: Timestamp.init(storedSeconds:), expected: "not a time in seconds " + instants)
  }
}

extension StoredNumber<Int64> {
  /// CLOCK_BOOTTIME in nanoseconds (`ClockReading.storableBoottimes`).
  static var boottime: Self {
    Self(
      decode: ClockReading.boottime(stored:),
      expected: "not a time since boot from 0 to \(ClockReading.storableBoottimes.upperBound / day) days")
  }
}

extension StoredNumber<Duration> {
  /// A session's or a pause's length (`SessionLengths.storable`).
  static var length: Self {
    Self(
      decode: SessionLengths.stored,
      expected:
        "not a length from \(SessionLengths.storable.lowerBound.nanoseconds) ns to \(SessionLengths.storable.upperBound.nanoseconds / day) days"
    )
  }
}

extension StoredNumber<UInt64> {
  /// A data cap's bytes (`DataCap.storableLimits`).
  static var capLimit: Self { Self(decode: DataCap.limit(stored:), expected: "not a data cap of at least 1 byte") }
}

extension StoredNumber<Int> {
  /// The day months start on (`UsagePeriod.monthStartDays`).
  static var monthStartDay: Self {
    Self(
      decode: { value in
        Int(exactly: value).flatMap { UsagePeriod.monthStartDays.contains($0) ? $0 : nil }
      }, expected: "not a day from \(UsagePeriod.monthStartDays.lowerBound) to \(UsagePeriod.monthStartDays.upperBound)"
    )
  }
}

extension StoredNumber<Int32> {
  /// An interface index, as the kernel's `int`.
  static var interfaceIndex: Self { Self(decode: { Int32(exactly: $0) }, expected: "not an interface index") }
}

extension StoredNumber<CounterWidth> {
  /// 32 or 64 bits.
  static var counterWidth: Self {
    Self(decode: { Int(exactly: $0).flatMap(CounterWidth.init(rawValue:)) }, expected: "not a counter width (32 or 64)")
  }
}

extension Store {
  /// Column `column` of `row` as `kind`, or `StoreError.damagedValue` naming `table.name` and
  /// its value, with the command that replaces it (`repair`), when one does.
  func stored<Value>(
    _ row: SQLiteRow, _ column: Int32, _ kind: StoredNumber<Value>, _ place: String, repair: DamageRepair? = nil
  ) throws -> Value {
    try stored(row.integer(column), kind, place, repair: repair)
  }

  /// `value`, read from `place`, as `kind` (see above).
  func stored<Value>(_ value: Int64, _ kind: StoredNumber<Value>, _ place: String, repair: DamageRepair? = nil) throws
    -> Value
  {
    guard let decoded = kind.decode(value) else {
      throw StoreError.damagedValue(
        path: location.path, detail: "\(place) holds \(value), \(kind.expected)", repair: repair)
    }
    return decoded
  }

  /// Damage that is not one value out of range: `detail` says what.
  func damaged(_ detail: String, repair: DamageRepair? = nil) -> StoreError {
    .damagedValue(path: location.path, detail: detail, repair: repair)
  }
}
