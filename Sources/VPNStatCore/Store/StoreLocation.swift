#if canImport(Glibc)
  import Glibc
#endif

/// Where the database lives: `--db`, else `VPNSTAT_DB`, else `/var/lib/vpnstat/vpnstat.db` for
/// root and `$XDG_STATE_HOME/vpnstat/vpnstat.db` (default `~/.local/state/…`) for anyone else.
public struct StoreLocation: Hashable, Sendable {
  public var path: String

  public init(path: String) { self.path = path }

  public static func resolve(
    option: String?, environment: (String) -> String?, isRoot: Bool = getuid() == 0
  ) -> StoreLocation {
    if let option, !option.isEmpty { return StoreLocation(path: option) }
    if let variable = environment("VPNSTAT_DB"), !variable.isEmpty {
      return StoreLocation(path: variable)
    }
    if isRoot { return StoreLocation(path: "/var/lib/vpnstat/vpnstat.db") }
    if let state = environment("XDG_STATE_HOME"), state.hasPrefix("/") {
      return StoreLocation(path: state + "/vpnstat/vpnstat.db")
    }
    let home = environment("HOME") ?? "/"
    return StoreLocation(path: home + "/.local/state/vpnstat/vpnstat.db")
  }

  public var directory: String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }

  public var exists: Bool { access(path, F_OK) == 0 }
  /// Whether this process may write the database: the file (if any) and its directory, where
  /// SQLite keeps the `-wal` and `-shm` files.
  public var isWritable: Bool {
    if exists { return access(path, W_OK) == 0 && access(directory, W_OK) == 0 }
    // A missing directory is created: whether that is allowed is up to the nearest ancestor
    // that exists.
    var candidate = directory
    while access(candidate, F_OK) != 0, let slash = candidate.lastIndex(of: "/") {
      candidate = slash == candidate.startIndex ? "/" : String(candidate[..<slash])
    }
    return access(candidate, W_OK) == 0
  }

  /// Refuses a database directory other users may write (see `DirectoryTrust`): a writer's
  /// files, `-wal`, `-shm` and locks would be theirs to plant or squat.
  public func checkDirectoryTrust() throws {
    if let problem = DirectoryTrust.problem(directory) {
      throw StoreError.untrustedDirectory(path: path, detail: problem)
    }
  }

  /// The lock file named `name` (e.g. "record", "enforce-wg0") of this database: beside the
  /// file it really is, so two paths to one database (a symlink) share their locks.
  public func lockPath(_ name: String) -> String {
    var real = path
    if let resolved = realpath(path, nil) {
      real = String(cString: resolved)
      free(resolved)
    }
    return real + "." + name + ".lock"
  }
}
