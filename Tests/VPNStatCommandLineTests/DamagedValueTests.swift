import Foundation
import Testing

@testable import VPNStatTestSupport

/// Issue 38: a number in the database that vpnstat never writes — only a writer of the file can
/// put it there — is damage, like a damaged page: exit 65 naming the table, the column and the
/// value, with the advice a damaged file gets; never a signal. `trusted_clock.wall =
/// 9223372036854775000` made every command die with SIGILL, `plan free`, `session reset` and
/// `record` too, so vpnstat could not repair the file it made; now `session reset` and `plan`
/// replace what they write. Each database is crafted with Python's sqlite3 from one vpnstat made.
struct DamagedValueTests {
  static let environment = ["VPNSTAT_CONFIG": "/nonexistent/vpnstat-tests/config"]

  /// What repairs a damaged value, as the message says.
  enum Repair: Sendable {
    /// `session reset` (the window, the trusted clock).
    case sessionReset
    /// `plan --data-cap`.
    case dataCap
    /// Nothing but a new file.
    case moveAside
    /// Not damage: a value vpnstat may write (a counter is any UInt64), or one nothing reads.
    case none
  }

  /// One crafted value: `column` of `table` set to `value` (SQL), and what must refuse it.
  struct Damage: Sendable, CustomTestStringConvertible {
    var table: String
    var column: String
    var value: String
    var repair: Repair
    /// Commands that read the value and must exit 65 naming it (others may, too, or succeed).
    var readBy: [[String]]

    var place: String { "\(table).\(column)" }
    var testDescription: String { "\(place) = \(value)" }
  }

  static let max = "9223372036854775807"
  static let min = "-9223372036854775808"

  static let statusJSON = ["status", "--json"]
  static let gate = ["session", "check"]
  static let sessionReaders = [statusJSON, ["session", "--json"], gate, ["report"], ["export"]]

  /// Every integer column of the session, the trusted clock, stops, refusals, the ledger's
  /// rows, buckets and incidents at INT64_MIN and INT64_MAX, the issue's own values, negative
  /// counters, month start days 0 and 99.
  static let damages: [Damage] = {
    var all: [Damage] = []
    func add(_ table: String, _ columns: [String], _ values: [String], _ repair: Repair, _ readBy: [[String]]) {
      for column in columns {
        for value in values {
          all.append(Damage(table: table, column: column, value: value, repair: repair, readBy: readBy))
        }
      }
    }
    // The issue's: every command trapped; status, session and the gate; report.
    add("trusted_clock", ["wall"], ["9223372036854775000", max, min], .sessionReset, sessionReaders + [["alert"]])
    add("trusted_clock", ["boottime"], [max, min, "-1"], .sessionReset, sessionReaders)
    add(
      "session", ["opened_at", "session_ends_at", "pause_ends_at", "session_length", "pause_length"], [max, min],
      .sessionReset, sessionReaders + [["plan", "free"]])
    add("session", ["session_length", "pause_length"], ["0", "-1"], .sessionReset, sessionReaders)
    // In range, out of order: the session ends before it opens.
    add("session", ["session_ends_at"], ["opened_at - 1"], .sessionReset, sessionReaders)
    add("session", ["data_cap_bytes"], [min, "0", "-1"], .dataCap, sessionReaders + [["session", "reset"]])
    add("session", ["month_start_day"], [max, min, "0", "99"], .dataCap, sessionReaders + [["plan", "free"]])
    add("stops", ["at"], [max, min], .moveAside, [statusJSON, gate, ["session", "--json"]])
    add("refusals", ["at", "until"], [max, min], .moveAside, [statusJSON, gate, ["session", "--json"]])
    add(
      "interfaces", ["first_seen_at", "if_index", "width", "sampled_at", "boottime"], [max, min], .moveAside,
      [statusJSON, ["history", "--json"], ["record", "--count", "1"], ["export"]])
    add("interfaces", ["width"], ["0", "48"], .moveAside, [statusJSON])
    add("buckets", ["start"], [max], .moveAside, [["history", "--json"], ["report"]])
    add("incidents", ["last_at"], [max, min], .moveAside, [statusJSON, ["history", "--json"]])
    // Counters are any UInt64, stored as an Int64's bits (negative: 2^63 or more): not damage.
    // Each column of a kind is read by the same code: the first and the last of each kind.
    add(
      "interfaces", ["rx_bytes", "tx_packets", "total_rx_bytes", "total_tx_packets", "resets", "discarded"],
      [max, min], .none, [])
    add("interfaces", ["rx_bytes", "total_rx_bytes"], ["-1"], .none, [])
    add("buckets", ["rx_bytes", "tx_packets"], [max, min, "-1"], .none, [])
    add("session", ["usage_rx_base", "usage_tx_base"], [max, min], .none, [])
    add("incidents", ["count"], [max, min], .none, [])
    // The largest cap vpnstat stores; a bucket before 1950 that no reader's period reaches.
    add("session", ["data_cap_bytes"], [max], .none, [])
    add("buckets", ["start"], [min], .none, [])
    return all
  }()

  /// The commands run on each damaged file, each on a copy of its own (writers may repair).
  static let commands: [[String]] = [
    ["status"], statusJSON, ["session"], ["session", "--json"], gate, ["report"], ["history", "--json"],
    ["alert"], ["export"], ["plan", "free"], ["session", "reset"], ["record", "--count", "1"],
  ]

  /// A database vpnstat made (`record`), then given by Python a window running now, a data cap,
  /// a stop, a refusal, an incident and a daily bucket of today: every table holds a row.
  static let made: Result<(TemporaryDirectory, String), any Error> = Result {
    let directory = try TemporaryDirectory.forProcess("damaged-base")
    let path = directory.file("base.db")
    let recorded = try run(Built.vpnstat, ["record", "--count", "1", "--db", path], environment: environment)
    guard recorded.status == 0 else { throw TestSetupError("record: \(recorded.errors)") }
    let filled = try python(
      """
      import sqlite3, sys, time
      now = time.time_ns()
      second = 10**9
      c = sqlite3.connect(sys.argv[1])
      c.execute("UPDATE session SET opened_at = ?, session_ends_at = ?, pause_ends_at = ?, session_length = ?, pause_length = ?, tunnel = x'74756e30', data_cap_bytes = 1000000000000, data_cap_period = 'month', month_start_day = 1",
                (now - 10 * second, now + 110 * second, now + 170 * second, 120 * second, 60 * second))
      c.execute("INSERT INTO stops (at, interface, reason, detail) VALUES (?, x'74756e30', 'free-limit', 'crafted')", (now - 5 * second,))
      c.execute("INSERT INTO refusals (at, interface, by, reason, until) VALUES (?, x'74756e30', 'gate', 'pause', ?)", (now - 4 * second, now + 60 * second))
      c.execute("INSERT OR REPLACE INTO incidents (kind, count, last_at) VALUES ('notification-overflow', 1, ?)", (now - 3 * second,))
      today = now // second - now // second % 86400
      c.execute("INSERT INTO buckets VALUES (x'74756e30', 2, ?, 'tunnel', 5, 6, 7, 8)", (today,))
      if c.execute("SELECT count(*) FROM trusted_clock").fetchone()[0] != 1 or c.execute("SELECT count(*) FROM interfaces").fetchone()[0] == 0:
          sys.exit("no trusted clock or no interfaces")
      c.commit()
      """, [path])
    guard filled.status == 0 else { throw TestSetupError("python: \(filled.errors)") }
    return (directory, path)
  }

  /// A copy of the well-formed database with `damage` applied, in `directory`.
  static func craft(_ damage: Damage, in directory: TemporaryDirectory) throws -> String {
    let (_, base) = try made.get()
    let path = directory.file("v.db")
    try? FileManager.default.removeItem(atPath: path)
    try FileManager.default.copyItem(atPath: base, toPath: path)
    let applied = try python(
      """
      import sqlite3, sys
      c = sqlite3.connect(sys.argv[1])
      changed = c.execute("UPDATE \(damage.table) SET \(damage.column) = \(damage.value)").rowcount
      c.commit()
      sys.exit(0 if changed > 0 else "no row changed")
      """, [path])
    guard applied.status == 0 else { throw TestSetupError("\(damage): \(applied.errors)") }
    return path
  }

  static func vpnstat(_ arguments: [String], db: String) throws -> CommandResult {
    var arguments = arguments
    // The alert's limit: a terabyte, not reached by a crafted bucket.
    if arguments == ["alert"] { arguments += ["--limit", "1TB"] }
    return try run(Built.vpnstat, arguments + ["--db", db], environment: environment, timeout: 60)
  }

  /// How a message names the damage: the column and its value, or the window's instants out of
  /// order.
  static func named(_ damage: Damage) -> String {
    damage.value.allSatisfy { $0 == "-" || $0.isNumber }
      ? "\(damage.place) holds \(damage.value)," : "session.opened_at, session_ends_at and pause_ends_at hold "
  }

  /// The advice the message ends with, per repair.
  static func advice(_ repair: Repair) -> String {
    switch repair {
    case .sessionReset: "Run vpnstat session reset to replace it"
    case .dataCap: "Run vpnstat plan --data-cap SIZE (or none) to replace it"
    case .moveAside, .none: "Move it aside to start a new one."
    }
  }

  @Test(
    "a stored number vpnstat never writes: every command exits with a documented status, never a signal; what reads it exits 65 naming table, column and value, with the damaged file's advice, and leaves the file as it was",
    arguments: damages)
  func everyCommand(_ damage: Damage) throws {
    let directory = try TemporaryDirectory("damaged")
    let crafted = try Self.craft(damage, in: directory)
    let before = try #require(contents(crafted))
    for command in Self.commands {
      let copy = directory.file("run.db")
      for suffix in ["", "-wal", "-shm", ".published"] { try? FileManager.default.removeItem(atPath: copy + suffix) }
      try FileManager.default.copyItem(atPath: crafted, toPath: copy)
      let result = try Self.vpnstat(command, db: copy)
      let said = "\(damage): \(command.joined(separator: " ")) exited \(result.status): \(result.errors.prefix(600))"
      #expect(result.status < 128, "killed by signal \(result.status - 128): \(said)")
      // Besides 0 and 65, each command's documented outcome: a cap reached by a huge counter.
      let allowed: Set<Int32> = command == ["alert"] ? [0, 1, 65] : command == Self.gate ? [0, 65, 75] : [0, 65]
      #expect(allowed.contains(result.status), "\(said)")
      if damage.readBy.contains(command) { #expect(result.status == 65, "\(said)") }
      if damage.repair == .none { #expect(result.status != 65, "\(said)") }
      if result.status == 65 {
        #expect(result.errors.contains("\(copy) is damaged (\(Self.named(damage))"), "\(said)")
        #expect(result.errors.contains("it was left untouched"), "\(said)")
        #expect(result.errors.contains(Self.advice(damage.repair)), "\(said)")
        #expect(contents(copy) == before, "\(said): the file changed")
      }
    }
  }

  /// The damages a writer repairs, and the command that does.
  static let repairs: [(Damage, [String])] =
    damages.filter { $0.table == "trusted_clock" }.flatMap { [($0, ["session", "reset"]), ($0, ["plan", "free"])] }
    + damages.filter { $0.repair == .sessionReset && $0.table == "session" }.flatMap {
      [($0, ["session", "reset"]), ($0, ["plan", "premium"])]
    }
    + damages.filter { $0.repair == .dataCap }.flatMap {
      [($0, ["plan", "--data-cap", "none"]), ($0, ["plan", "free", "--data-cap", "5GB"])]
    }

  @Test(
    "session reset and plan repair what they write: a damaged trusted clock, window or cap is replaced with a warning naming the value, and every reader then succeeds",
    arguments: zip(repairs.map(\.0), repairs.map(\.1)))
  func repairedByWriters(_ damage: Damage, _ command: [String]) throws {
    let directory = try TemporaryDirectory("repair")
    let db = try Self.craft(damage, in: directory)
    let repaired = try Self.vpnstat(command, db: db)
    let said = "\(damage): \(command.joined(separator: " ")) exited \(repaired.status): \(repaired.errors)"
    #expect(repaired.status == 0, "\(said)")
    #expect(repaired.errors.contains("was damaged (\(Self.named(damage))"), "\(said)")
    for reader in Self.sessionReaders + [["alert"], ["record", "--count", "1"]] {
      let result = try Self.vpnstat(reader, db: db)
      #expect(
        reader == ["alert"] ? [0, 1].contains(result.status) : result.status == 0,
        "\(damage), after \(command.joined(separator: " ")): \(reader.joined(separator: " ")) exited \(result.status): \(result.errors)"
      )
    }
  }

  @Test("a plan another version wrote reads as free, as before: not damage (text is not range-checked)")
  func unknownPlan() throws {
    let directory = try TemporaryDirectory("plan")
    let (_, base) = try Self.made.get()
    let db = directory.file("v.db")
    try FileManager.default.copyItem(atPath: base, toPath: db)
    let changed = try python(
      "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE session SET plan = 'gold'\"); c.commit()",
      [db])
    #expect(changed.status == 0, "\(changed.errors)")
    #expect(try Self.vpnstat(["plan"], db: db).output.hasPrefix("free"))
    for command in Self.commands {
      let result = try Self.vpnstat(command, db: db)
      #expect(
        command == ["alert"] ? [0, 1].contains(result.status) : result.status == 0,
        "\(command): \(result.status) \(result.errors)")
    }
  }
}
