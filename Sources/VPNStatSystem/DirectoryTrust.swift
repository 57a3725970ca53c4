import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// Whether a directory is safe to create files in for this user: the rule ssh's StrictModes and
/// sudo apply. Everything from `/` down must belong to root or to us; a directory others may write
/// lets them plant symlinks or take lock names, so only a sticky one (like /tmp) is allowed above
/// ours, and ours must be writable by no one else.
public enum DirectoryTrust {
  /// Nil when `directory` is safe, else why not (with the offending path and mode).
  public static func problem(_ directory: String) -> String? {
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
