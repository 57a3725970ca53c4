import VPNStatModel
import VPNStatSystem

/// Where the database lives: `--db` (or the configuration's `db`), else `VPNSTAT_DB`, else the
/// system's database, the same for every user: what root's recorder and enforcer keep is what
/// everyone's `status`, `watch`, `session` and gate read. A database of one's own is one to ask
/// for, never a silent default that shows another, empty world.
package struct StoreLocation: Hashable, Sendable {
  package var path: String

  package init(path: String) { self.path = path }

  /// The system's database, which the shipped units keep (`StateDirectory=vpnstat`).
  package static let system = StoreLocation(path: "/var/lib/vpnstat/vpnstat.db")

  package static func resolve(option: String?, environment: (String) -> String?) -> StoreLocation {
    if let option, !option.isEmpty { return StoreLocation(path: option) }
    if let variable = environment("VPNSTAT_DB"), !variable.isEmpty {
      return StoreLocation(path: variable)
    }
    return system
  }

  package var directory: String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }

  /// Writes to the database (and the `-wal` of a file an older vpnstat left) and to the spool
  /// beside it, from now on, by any process (`FileChanges`): how a reader that must not read in
  /// its hot path learns it has something to read. Throws when the directory cannot be watched
  /// (none yet, or inotify refused).
  package func changes() throws -> FileChanges { try changes(suffixes: ["", "-wal", ".spool"]) }

  /// Writes to the files named the database's name with these suffixes, and with
  /// `databaseAttributes` a change of the database's owner or mode too (`FileChanges`).
  func changes(suffixes: [String], databaseAttributes: Bool = false) throws -> FileChanges {
    let name = String(path.split(separator: "/").last ?? "")
    return try FileChanges(
      directory: SystemPath(directory), names: suffixes.map { name + $0 },
      attributesOf: databaseAttributes ? [name] : [])
  }

  package var exists: Bool { FileSystem.exists(path) }
  /// Whether this process may write the database: the file (if any) and its directory, where
  /// SQLite keeps the `-wal` and `-shm` files.
  package var isWritable: Bool {
    if exists { return FileSystem.isWritable(path) && FileSystem.isWritable(directory) }
    // A missing directory is created: whether that is allowed is up to the nearest ancestor
    // that exists.
    var candidate = directory
    while !FileSystem.exists(candidate), let slash = candidate.lastIndex(of: "/") {
      candidate = slash == candidate.startIndex ? "/" : String(candidate[..<slash])
    }
    return FileSystem.isWritable(candidate)
  }

  /// Refuses a database directory other users may write (see `DirectoryTrust`): a writer's
  /// files, `-wal`, `-shm` and locks would be theirs to plant or squat.
  package func checkDirectoryTrust() throws {
    if let problem = DirectoryTrust.problem(directory) {
      throw StoreError.untrustedDirectory(path: path, detail: problem)
    }
  }

  /// Refuses a database a decision rests on — the gate's: whether a tunnel may come up — when
  /// others could have written it: the file and its `-wal` (SQLite reads the log as part of the
  /// database) must pass `DirectoryTrust.fileProblem`, as the enforcer's directory does. A
  /// missing file is left to the caller.
  package func checkDecisionTrust() throws {
    for file in [path, path + "-wal"] where FileSystem.exists(file) {
      if let problem = DirectoryTrust.fileProblem(file) {
        throw UntrustedFile(role: "database", path: path, problem: problem)
      }
    }
  }

  /// The lock file named `name` (e.g. "record", "enforce-wg0") of this database: beside the
  /// file it really is, so two paths to one database (a symlink) share their locks.
  package func lockPath(_ name: String) -> String {
    companionPath(name + ".lock")
  }

  /// A file that belongs with this database (a lock, an enforcer's presence): `DB.SUFFIX`, beside
  /// the file the database really is.
  package func companionPath(_ suffix: String) -> String {
    (FileSystem.realPath(path) ?? path) + "." + suffix
  }
}
