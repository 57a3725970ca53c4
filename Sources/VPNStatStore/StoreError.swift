import VPNStatModel
import VPNStatSystem

/// Why the database could not be used. Each names the file; the command line maps each to a
/// documented exit status. None of them ever leads to the file being rewritten.
package enum StoreError: Error, CustomStringConvertible {
  /// The file exists but is not an SQLite database at all.
  case notADatabase(path: String)
  /// An SQLite database, but not vpnstat's.
  case foreign(path: String)
  /// SQLite reports damage (a truncated or overwritten file).
  case corrupt(path: String, detail: String)
  /// A value no vpnstat writes: a number outside its kind's range (`Timestamp.storable`,
  /// `SessionLengths.storable`, …), a window out of order. Only a writer of the file can put it
  /// there, and it means what a damaged page means: `detail` names the table, the column and the
  /// value; `repair`, the command that replaces it, when one does.
  case damagedValue(path: String, detail: String, repair: DamageRepair?)
  /// Written by a newer vpnstat.
  case newerSchema(path: String, found: Int64, supported: Int64)
  /// Written by an older vpnstat; a writing command upgrades it, a reader never does.
  case olderSchema(path: String, found: Int64, supported: Int64)
  /// The operation needs to write and this user may not.
  case notPermitted(path: String, detail: String)
  /// Another writer of this user's holds the database's writer lock longer than the busy
  /// timeout, or (for a reader) a write stays under way that long: one is being written, or a
  /// writer stopped in the middle of one, which the next writer undoes.
  case busy(path: String)
  /// The file or its directory cannot be opened or created.
  case unavailable(path: String, detail: String)
  /// The disk (or the file system's quota) is full.
  case full(path: String)
  /// The directory is writable by other users, who could plant links or take vpnstat's locks.
  case untrustedDirectory(path: String, detail: String)

  /// A problem that passes by itself (a lock held, space freed): a long-running writer keeps
  /// what it could not write and tries again.
  package var isTransient: Bool {
    switch self {
    case .busy, .full: true
    default: false
    }
  }

  /// A problem of the file or of this user's rights, which no amount of waiting changes (the
  /// file is damaged or not vpnstat's, the user may not write it): someone must act. Every other
  /// problem may pass by itself — a lock held, even against SQLite's protocol, a full disk, an
  /// I/O error — and a process that must go on regardless (the enforcer) retries it.
  package var isLasting: Bool {
    switch self {
    case .notADatabase, .foreign, .corrupt, .damagedValue, .newerSchema, .olderSchema, .notPermitted,
      .untrustedDirectory:
      true
    case .busy, .unavailable, .full: false
    }
  }

  package var description: String {
    switch self {
    case .notADatabase(let path):
      "\(path) is not a vpnstat database (not an SQLite file); it was left untouched. Use --db to choose another file."
    case .foreign(let path):
      "\(path) is an SQLite database but not vpnstat's; it was left untouched. Use --db to choose another file."
    case .corrupt(let path, let detail):
      "\(path) is damaged (\(detail)); it was left untouched. Move it aside to start a new one."
    case .damagedValue(let path, let detail, let repair):
      "\(path) is damaged (\(detail)); it was left untouched. "
        + (repair.map { "Run \($0.command) to replace it (\($0.effect)), or move the file aside to start a new one." }
          ?? "Move it aside to start a new one.")
    case .newerSchema(let path, let found, let supported):
      "\(path) was written by a newer vpnstat (schema \(found); this vpnstat reads up to \(supported)); it was left untouched."
    case .olderSchema(let path, let found, let supported):
      "\(path) has schema \(found), older than this vpnstat's \(supported); a writing command (vpnstat record) upgrades it. It was left untouched."
    case .notPermitted(let path, let detail):
      "cannot write \(path): \(detail). Run as a user who may write it (e.g. root), or use --db."
    case .busy(let path):
      "\(path) is locked by another process: a vpnstat writer is writing it (or a program stopped in the middle of a write, which the next vpnstat writer undoes); try again."
    case .unavailable(let path, let detail):
      "cannot open \(path): \(detail)"
    case .full(let path):
      "cannot write \(path): the disk is full. Nothing was changed; free some space."
    case .untrustedDirectory(let path, let detail):
      "refusing to write \(path): \(detail), so others could plant links or take vpnstat's locks there. Use a directory only root or you can write."
    }
  }
}

/// The command that replaces a damaged value (`StoreError.damagedValue`): a writer that writes
/// the part of the file the value lies in anew, whatever it held (`Store.clearDamaged`).
package enum DamageRepair: Sendable, Equatable {
  /// The session window and the trusted clock: `session reset` (and `plan`, for the clock).
  case sessionReset
  /// The data cap: `plan --data-cap`.
  case dataCap

  /// The command, as a person types it.
  package var command: String {
    switch self {
    case .sessionReset: "vpnstat session reset"
    case .dataCap: "vpnstat plan --data-cap SIZE (or none)"
    }
  }

  /// What running it costs besides.
  package var effect: String {
    switch self {
    case .sessionReset: "it also clears the session window"
    case .dataCap: "it sets the cap anew"
    }
  }
}
