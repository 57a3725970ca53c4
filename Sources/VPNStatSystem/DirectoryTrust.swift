import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// Whether a directory is safe to create files in for this user: the rule ssh's StrictModes and
/// sudo apply. Everything from `/` down must belong to root or to us; a directory others may write
/// lets them plant symlinks or take lock names, so only a sticky one (like /tmp) is allowed above
/// ours, and ours must be writable by no one else.
package enum DirectoryTrust {
  /// Nil when `directory` is safe, else why not (with the offending path and mode).
  package static func problem(_ directory: String) -> String? {
    guard let resolved = resolvedExisting(directory) else { return nil }
    let me = geteuid()
    var path = ""
    let components = resolved.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    for index in -1..<components.count {
      if index >= 0 { path += "/" + components[index] }
      let current = path.isEmpty ? "/" : path
      var info = stat()
      guard lstat(current, &info) == 0 else { return nil }
      let mode = info.st_mode
      if info.st_uid != 0 && info.st_uid != me {
        return "\(current) belongs to uid \(info.st_uid), not to root or to this user"
      }
      let othersWrite = mode & S_IWOTH != 0 || (mode & S_IWGRP != 0 && info.st_gid != 0)
      let isLast = index == components.count - 1
      if othersWrite && (isLast || mode & S_ISVTX == 0) {
        return "\(current) is writable by other users (mode \(octal(mode & 0o7777)))"
      }
    }
    return nil
  }

  /// Nil when root may obey the file at `path` — run what it says (a wg-quick configuration's
  /// hooks), or decide from it (the configuration file, the database the gate reads) — else why
  /// not: the file is a regular file (a FIFO would hold its reader for ever), belongs to root or
  /// to this user and no one else may write it, and its directory passes `problem`. Links are
  /// followed: the real file and its directories are what is checked. A file that does not
  /// exist has no problem; the caller says it is missing.
  package static func fileProblem(_ path: String) -> String? {
    guard let real = realpathString(path) else { return nil }
    var info = stat()
    guard stat(real, &info) == 0 else { return nil }
    let shown = real == path ? path : "\(path) (\(real))"
    guard info.st_mode & S_IFMT == S_IFREG else {
      return NotARegularFile(path: shown, mode: info.st_mode).description
    }
    if info.st_uid != 0 && info.st_uid != geteuid() {
      return "\(shown) belongs to uid \(info.st_uid), not to root or to this user"
    }
    if info.st_mode & S_IWOTH != 0 || (info.st_mode & S_IWGRP != 0 && info.st_gid != 0) {
      return "\(shown) is writable by other users (mode \(octal(info.st_mode & 0o7777)))"
    }
    let directory = real.lastIndex(of: "/").map { $0 == real.startIndex ? "/" : String(real[..<$0]) } ?? "."
    return problem(directory)
  }

  /// Nil when the socket at `path` lies where no other user may put one — its directory is not
  /// writable by others, or is sticky and the socket is root's — else why not. (Who serves it
  /// is asked of the kernel when connecting: `LocalSocketExchange.Peer`.)
  package static func socketProblem(_ path: String) -> String? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return "\(path): \(Errno.current)" }
    guard info.st_mode & S_IFMT == S_IFSOCK else { return "\(path) is not a socket" }
    let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    var parent = stat()
    guard stat(directory, &parent) == 0 else { return "\(directory): \(Errno.current)" }
    let othersWrite = parent.st_mode & S_IWOTH != 0 || (parent.st_mode & S_IWGRP != 0 && parent.st_gid != 0)
    guard othersWrite else { return nil }
    if parent.st_mode & S_ISVTX != 0 && info.st_uid == 0 { return nil }
    return "\(directory) is writable by other users (mode \(octal(parent.st_mode & 0o7777)))"
  }

  /// The canonical path of `directory`, or of its nearest existing ancestor when it does not
  /// exist yet (it will be created under that one).
  static func resolvedExisting(_ directory: String) -> String? {
    var candidate = directory.isEmpty ? "." : directory
    while true {
      if let real = realpath(candidate, nil) {
        defer { free(real) }
        return String(cString: real)
      }
      guard let slash = candidate.lastIndex(of: "/") else { return realpathString(".") }
      candidate = slash == candidate.startIndex ? "/" : String(candidate[..<slash])
    }
  }

  private static func realpathString(_ path: String) -> String? {
    guard let real = realpath(path, nil) else { return nil }
    defer { free(real) }
    return String(cString: real)
  }

  private static func octal(_ mode: mode_t) -> String {
    let digits = String(mode, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }
}

/// A file root would obey — run what it says or decide from it — that others could have
/// written, or that is not a regular file: refused, never read (exit 77). Whoever can write a
/// wg-quick configuration runs its hooks as root; whoever can write the configuration file or
/// the gate's database decides what root enforces.
package struct UntrustedFile: Error, Sendable, CustomStringConvertible {
  /// What the file is for ("wg-quick configuration", "configuration file", "database").
  package var role: String
  package var path: String
  /// Why (`DirectoryTrust`'s words: the offending path, its owner, mode or kind).
  package var problem: String

  package init(role: String, path: String, problem: String) {
    self.role = role
    self.path = path
    self.problem = problem
  }

  package var description: String {
    "refusing the \(role) \(TerminalText.sanitize(path)): \(TerminalText.sanitize(problem)). "
      + "vpnstat obeys such a file only when it is a regular file and it and every directory above it "
      + "belong to root (or to you) and no one else can write them"
  }
}
