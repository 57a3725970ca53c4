import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// Whether a directory is safe to create files in for this user: the rule ssh's StrictModes and
/// sudo apply, and POSIX ACLs besides. Everything from `/` down must belong to root or to us; a
/// directory others may write lets them plant symlinks or take lock names, so only a sticky one
/// (like /tmp) is allowed above ours, and ours must be writable by no one else.
///
/// "Others may write" is what the kernel would let them do: the mode bits (group write counts
/// unless the group is root's), and an ACL entry that grants write to another user or group
/// (`AccessControlList.othersWriter`). ssh and sudo read the mode bits alone, but an entry such
/// as `user:nobody:rw` lets nobody write a file whose `ls -l` shows `-rw-rw----+ root root`: the
/// group bits are then the ACL's mask, not anyone's permission. A directory's default ACL counts
/// too: the files root makes in it (a database's `-wal`, a lock) would inherit its entries.
package enum DirectoryTrust {
  /// Nil when `directory` is safe, else why not (with the offending path and mode or entry).
  package static func problem(_ directory: String) -> String? {
    guard let resolved = resolvedExisting(directory) else { return nil }
    let me = geteuid()
    var path = ""
    let components = resolved.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    for index in -1..<components.count {
      if index >= 0 { path += "/" + components[index] }
      let current = path.isEmpty ? "/" : path
      var info = stat()
      guard (try? Errno.retrying({ lstat(current, &info) })) != nil else { return nil }
      let mode = info.st_mode
      if info.st_uid != 0 && info.st_uid != me {
        return "\(current) belongs to uid \(info.st_uid), not to root or to this user"
      }
      let isLast = index == components.count - 1
      // Above ours, a sticky directory keeps others from replacing what is not theirs.
      guard isLast || mode & S_ISVTX == 0 else { continue }
      if othersWrite(info) {
        return "\(current) is writable by other users (mode \(octal(mode & 0o7777)))"
      }
      if let problem = aclProblem(current, info, inherited: isLast) { return problem }
    }
    return nil
  }

  /// Nil when root may obey the file at `path` — run what it says (a wg-quick configuration's
  /// hooks), or decide from it (the configuration file, the database the gate reads) — else why
  /// not: the file is a regular file (a FIFO would hold its reader for ever), belongs to root or
  /// to this user and no one else may write it, by its mode or an ACL, and its directory passes
  /// `problem`. Links are followed: the real file and its directories are what is checked. A
  /// file that does not exist has no problem; the caller says it is missing.
  package static func fileProblem(_ path: String) -> String? {
    guard let real = realpathString(path) else { return nil }
    var info = stat()
    guard (try? Errno.retrying({ stat(real, &info) })) != nil else { return nil }
    let shown = real == path ? path : "\(path) (\(real))"
    guard info.st_mode & S_IFMT == S_IFREG else {
      return NotARegularFile(path: shown, mode: info.st_mode).description
    }
    if info.st_uid != 0 && info.st_uid != geteuid() {
      return "\(shown) belongs to uid \(info.st_uid), not to root or to this user"
    }
    if othersWrite(info) {
      return "\(shown) is writable by other users (mode \(octal(info.st_mode & 0o7777)))"
    }
    if let problem = aclProblem(real, info, shown: shown, inherited: false) { return problem }
    let directory = real.lastIndex(of: "/").map { $0 == real.startIndex ? "/" : String(real[..<$0]) } ?? "."
    return problem(directory)
  }

  /// Nil when the socket at `path` lies where no other user may put one — its directory is not
  /// writable by others (mode or ACL), or is sticky and the socket is root's — else why not. (Who
  /// serves it is asked of the kernel when connecting: `LocalSocketExchange.Peer`.)
  package static func socketProblem(_ path: String) -> String? {
    var info = stat()
    do throws(Errno) {
      _ = try Errno.retrying { lstat(path, &info) }
    } catch {
      return "\(path): \(error)"
    }
    guard info.st_mode & S_IFMT == S_IFSOCK else { return "\(path) is not a socket" }
    let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    var parent = stat()
    do throws(Errno) {
      _ = try Errno.retrying { stat(directory, &parent) }
    } catch {
      return "\(directory): \(error)"
    }
    if parent.st_mode & S_ISVTX != 0 && info.st_uid == 0 { return nil }
    if othersWrite(parent) {
      return "\(directory) is writable by other users (mode \(octal(parent.st_mode & 0o7777)))"
    }
    return aclProblem(directory, parent, inherited: false)
  }

  /// Whether the mode lets others write: anyone, or a group other than root's.
  private static func othersWrite(_ info: stat) -> Bool {
    info.st_mode & S_IWOTH != 0 || (info.st_mode & S_IWGRP != 0 && info.st_gid != 0)
  }

  /// Why an ACL of `path` (described by `info`) lets someone other than root, this user or
  /// root's group write it, or nil. With `inherited`, a directory's default ACL too: what root
  /// creates there gets its entries, and the group of the directory when it is set-group-ID,
  /// else root's own. An ACL that cannot be read is a problem: it may say anything.
  private static func aclProblem(_ path: String, _ info: stat, shown: String? = nil, inherited: Bool) -> String? {
    let shown = shown ?? path
    let me = geteuid()
    do {
      if let list = try AccessControlList.read(path, attribute: AccessControlList.accessAttribute),
        let entry = list.othersWriter(me: me, owningGroup: info.st_gid)
      {
        let named = AccessControlList.describe(entry, owningGroup: info.st_gid)
        return "\(shown) is writable by other users: ACL entry \(named) may write it"
      }
      guard inherited, info.st_mode & S_IFMT == S_IFDIR else { return nil }
      let group = info.st_mode & S_ISGID != 0 ? info.st_gid : getegid()
      if let list = try AccessControlList.read(path, attribute: AccessControlList.defaultAttribute),
        let entry = list.othersWriter(me: me, owningGroup: group)
      {
        let named = AccessControlList.describe(entry, owningGroup: group)
        return "\(shown) would make what is created in it writable by other users: "
          + "default ACL entry \(named) would let others write it"
      }
      return nil
    } catch {
      return "\(shown) has an ACL that cannot be read (\(error)): it may let others write"
    }
  }

  /// The canonical path of `directory`, or of its nearest existing ancestor when it does not
  /// exist yet (it will be created under that one).
  static func resolvedExisting(_ directory: String) -> String? {
    var candidate = directory.isEmpty ? "." : directory
    while true {
      if let real = try? Errno.retryingPointer({ realpath(candidate, nil) }) {
        defer { free(real) }
        return String(cString: real)
      }
      guard let slash = candidate.lastIndex(of: "/") else { return realpathString(".") }
      candidate = slash == candidate.startIndex ? "/" : String(candidate[..<slash])
    }
  }

  private static func realpathString(_ path: String) -> String? {
    guard let real = try? Errno.retryingPointer({ realpath(path, nil) }) else { return nil }
    defer { free(real) }
    return String(cString: real)
  }

  private static func octal(_ mode: mode_t) -> String {
    let digits = String(mode, radix: 8)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
  }
}

/// A file root would obey — run what it says or decide from it — that others could have
/// written, or that is not a regular file: refused, never read (exit 77). Whoever can write a wg-quick configuration runs its
/// hooks as root; whoever can write the configuration file or the gate's database decides what
/// root enforces.
package struct UntrustedFile: Error, Sendable, CustomStringConvertible {
  /// What the file is for ("wg-quick configuration", "configuration file", "database").
  package var role: String
  package var path: String
  /// Why (`DirectoryTrust`'s words: the offending path, its owner, mode, ACL entry or kind).
  package var problem: String

  package init(role: String, path: String, problem: String) {
    self.role = role
    self.path = path
    self.problem = problem
  }

  package var description: String {
    "refusing the \(role) \(TerminalText.sanitize(path)): \(TerminalText.sanitize(problem)). "
      + "vpnstat obeys such a file only when it is a regular file and it and every directory above it "
      + "belong to root (or to you) and no one else can write them, by their mode or an ACL"
  }
}
