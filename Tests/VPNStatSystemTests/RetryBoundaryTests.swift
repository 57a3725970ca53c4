import Foundation
import Testing

@testable import VPNStatTestSupport

/// The retry rule, read from the sources rather than kept by review: a C call that a signal can
/// cut short (EINTR, or a restart code that escaped the kernel) is made inside one of the retry
/// helpers of `Errno.swift`, which make it again; `close` never is. The helpers themselves are
/// tested in `InterruptedCallTests`.
struct RetryBoundaryTests {
  /// The helpers; a call counts as retried when it lies inside the closure passed to one.
  static let helpers = ["Errno.retrying", "Errno.retryingPointer", "retryingInterrupts"]

  /// The C functions a signal can interrupt: every call that waits (for a peer, a child, a lock,
  /// a clock, a terminal) and every file system call, by path or by descriptor, because FUSE and
  /// NFS answer a signal with EINTR from any of them, whatever their man pages list. Each must be
  /// called inside a helper.
  static let interruptible: Set<String> = [
    // Files, by descriptor or by path.
    "open", "openat", "creat", "read", "pread", "readv", "preadv", "write", "pwrite", "writev", "pwritev", "fsync",
    "fdatasync", "ftruncate", "truncate", "fchmod", "fchmodat", "chmod", "fchown", "chown", "lchown", "fstat", "stat",
    "lstat", "fstatat", "statx", "access", "faccessat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
    "renameat", "link", "linkat", "symlink", "symlinkat", "readlink", "readlinkat", "realpath", "opendir", "fdopendir",
    "readdir", "getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr", "fsetxattr", "inotify_add_watch",
    // Locks, devices and terminals.
    "flock", "fcntl", "lockf", "ioctl", "clinux_ioctl_ptr", "clinux_ioctl_int", "tcgetattr", "tcsetattr", "tcdrain",
    "dup2", "dup3",
    // Sockets.
    "accept", "accept4", "clinux_accept4", "connect", "send", "sendto", "sendmsg", "recv", "recvfrom", "recvmsg",
    // Waits.
    "poll", "ppoll", "select", "pselect", "epoll_wait", "epoll_pwait", "waitpid", "wait", "wait4", "waitid",
    "nanosleep", "clock_nanosleep",
  ]

  /// Calls that must never be made again, and the one file each may be called from (the allow-list
  /// of the rule above). Linux releases the descriptor even when close reports EINTR, so a second
  /// close could close one another thread has just been given; every other descriptor is closed
  /// through `FileDescriptor.close()`, and every directory stream through `OpenDirectory`'s deinit
  /// (glibc's closedir closes its descriptor the same way).
  static let neverRetried: [String: String] = [
    "close": "Sources/VPNStatSystem/FileDescriptor.swift",
    "closedir": "Sources/VPNStatSystem/OpenDirectory.swift",
  ]

  /// The C functions vpnstat calls that a signal cannot interrupt, and why: the rest of the
  /// allow-list. A C function in neither this nor `interruptible` fails `everyCallClassified`,
  /// so a new one is weighed when it is first called, not left to review.
  static let notInterruptible: [String: String] = {
    var why: [String: String] = [:]
    func add(_ reason: String, _ names: [String]) { for name in names { why[name] = reason } }
    add(
      "makes a descriptor without a path and without waiting",
      [
        "socket", "eventfd", "timerfd_create", "signalfd", "inotify_init1", "clinux_pipe2", "clinux_pidfd_open",
        "clinux_pidfd_getfd", "dirfd",
      ])
    add(
      "sets or reads a socket's state; vpnstat binds no AF_UNIX path, the one bind that makes a file",
      ["setsockopt", "getsockopt", "getsockname", "bind", "listen", "shutdown", "clinux_peer_credentials"])
    add(
      "queues or masks a signal, never waits for one",
      [
        "kill", "clinux_pidfd_send_signal", "sigprocmask", "pthread_sigmask", "sigemptyset", "sigfillset",
        "sigaddset", "signal",
      ])
    add(
      "reads or sets a clock or a timer, or converts a time",
      ["clock_gettime", "timerfd_settime", "localtime_r", "mktime"])
    add(
      "memory, limits and this process's own state",
      [
        "malloc", "free", "malloc_trim", "madvise", "sysconf", "getrlimit", "setrlimit", "getenv", "exit",
        "pthread_create", "pthread_detach", "clinux_program_segments",
      ])
    add(
      "works on memory only", ["strlen", "strcspn", "strerror", "inet_pton", "inet_ntop", "czlib_gzip_init", "deflate"])
    add(
      "fills a spawn's attributes, or spawns: posix_spawn returns its error rather than -1 and waits for the "
        + "child's exec itself",
      [
        "posix_spawnp", "posix_spawn_file_actions_init", "posix_spawn_file_actions_destroy",
        "posix_spawn_file_actions_addopen", "posix_spawn_file_actions_adddup2", "clinux_spawn_closefrom",
        "posix_spawnattr_init", "posix_spawnattr_destroy", "posix_spawnattr_setflags", "posix_spawnattr_setpgroup",
        "posix_spawnattr_setsigdefault", "posix_spawnattr_setsigmask",
      ])
    add("TCGETS on the descriptor: answered at once", ["isatty"])
    add("glibc makes its netlink calls again after EINTR itself", ["getifaddrs", "freeifaddrs"])
    add(
      "an ioctl on a socket of its own that returns 0, not -1; LinkAddresses.index makes it again after EINTR",
      ["if_nametoindex"])
    add("evaluates a header's macro", ["clinux_nlmsg_align", "clinux_rta_align", "clinux_stats_filter_bit"])
    return why
  }()

  /// Modules whose import makes the C library's functions callable (`CLinux`'s headers include
  /// glibc's; `CZlib`'s, zlib's).
  static let cModules: Set<String> = ["Glibc", "SwiftGlibc", "Musl", "Darwin", "Foundation", "CLinux", "CZlib"]

  /// All-lowercase names called like functions that are not C's: Swift's keywords and
  /// attributes, the standard library's free functions, and `timespec(duration)`, an initializer
  /// vpnstat gives the C struct.
  static let notCFunctions: Set<String> = [
    "if", "guard", "switch", "for", "while", "repeat", "return", "in", "case", "catch", "throw", "throws", "rethrows",
    "init", "deinit", "let", "var", "try", "await", "where", "as", "is", "some", "any", "self", "super", "private",
    "fileprivate", "internal", "package", "public", "inline", "available", "min", "max", "zip", "abs", "print",
    "precondition", "assert", "stride", "type", "timespec",
  ]

  /// One Swift file of `Sources` that can call C: its path from the package root, and its code
  /// without comments and string literals, joined, as UTF-16 (NSRegularExpression's offsets).
  struct SourceFile {
    var path: String
    var code: String
    var units: [UInt16]
    /// The offset each line starts at.
    var lineStarts: [Int]

    func line(at offset: Int) -> Int {
      var low = 0
      var high = lineStarts.count - 1
      while low < high {
        let middle = (low + high + 1) / 2
        if lineStarts[middle] <= offset { low = middle } else { high = middle - 1 }
      }
      return low + 1
    }
  }

  /// Every Swift file of `Sources` that imports a C module, read as `SourceFile`.
  static func sourceFiles() throws -> [SourceFile] {
    let sources = Built.packageRoot.appendingPathComponent("Sources")
    guard let walk = FileManager.default.enumerator(atPath: sources.path) else { return [] }
    let importLine = try NSRegularExpression(
      pattern:
        #"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|typealias|func|let|var)\s+)?([A-Za-z_]\w*)"#,
      options: .anchorsMatchLines)
    var files: [SourceFile] = []
    while let relative = walk.nextObject() as? String {
      guard relative.hasSuffix(".swift") else { continue }
      let text = try String(contentsOf: sources.appendingPathComponent(relative), encoding: .utf8)
      let imported = importLine.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
        Range($0.range(at: 1), in: text).map { String(text[$0]) }
      }
      guard imported.contains(where: cModules.contains) else { continue }
      let code = strippedCode(text.components(separatedBy: "\n")).joined(separator: "\n")
      let units = Array(code.utf16)
      var lineStarts = [0]
      for (offset, unit) in units.enumerated() where unit == 0x0A { lineStarts.append(offset + 1) }
      files.append(SourceFile(path: "Sources/" + relative, code: code, units: units, lineStarts: lineStarts))
    }
    return files.sorted { $0.path < $1.path }
  }

  /// The lines without comments and string literals (a doc comment that says "read(2)" calls
  /// nothing), as `LibcBoundaryTests` reads them.
  static func strippedCode(_ lines: [String]) -> [String] {
    let literal = try! NSRegularExpression(pattern: #""(?:[^"\\]|\\.)*""#)
    var inMultilineString = false
    var inBlockComment = false
    return lines.map { line in
      var text = line
      if inBlockComment {
        guard let end = text.range(of: "*/") else { return "" }
        text = String(text[end.upperBound...])
        inBlockComment = false
      }
      if text.components(separatedBy: "\"\"\"").count % 2 == 0 {
        inMultilineString.toggle()
        return ""
      }
      if inMultilineString { return "" }
      text = literal.stringByReplacingMatches(
        in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "\"\"")
      if let comment = text.range(of: "//") { text = String(text[..<comment.lowerBound]) }
      if let start = text.range(of: "/*") {
        if text[start.upperBound...].range(of: "*/") == nil { inBlockComment = true }
        text = String(text[..<start.lowerBound])
      }
      return text
    }
  }

  /// A call of a free function: a name and an opening parenthesis, not after a dot (a method such
  /// as `fd.read(`) unless the dot is `Glibc.`'s, not a declaration, with at least one argument
  /// (`stat()` makes a struct) and no label on the first (C functions have none).
  static let call = try! NSRegularExpression(
    pattern: #"(?:\bGlibc\.|(?<![\w.`]))(?<!func )(?<!case )([a-z_][A-Za-z0-9_]*)\s*\((?!\s*\))(?!\s*\w+\s*:(?!:))"#)

  /// A call in a file, and how many retry helpers' closures it lies in.
  struct Call {
    var name: String
    var line: Int
    var qualified: Bool
    var retried: Bool
  }

  /// The free calls in `file`, each with whether it lies inside a helper's closure. A name the
  /// file declares a function of is the file's own unless called as `Glibc.NAME` (the way
  /// FileDescriptor.swift calls libc's `read` beside its own).
  static func calls(in file: SourceFile) -> [Call] {
    let whole = NSRange(location: 0, length: file.units.count)
    let alternatives = helpers.map { NSRegularExpression.escapedPattern(for: $0) }.joined(separator: "|")
    let helper = try! NSRegularExpression(pattern: #"(?<![\w.])(?:"# + alternatives + #")\s*\(?\s*\{"#)
    let helperBraces = Set(helper.matches(in: file.code, range: whole).map { $0.range.location + $0.range.length - 1 })
    // How many helpers' closures are open at each offset.
    var retryDepth = [Int](repeating: 0, count: file.units.count + 1)
    var open: [Bool] = []
    var depth = 0
    for (offset, unit) in file.units.enumerated() {
      if unit == 0x7B {
        let isHelper = helperBraces.contains(offset)
        open.append(isHelper)
        if isHelper { depth += 1 }
      } else if unit == 0x7D, let wasHelper = open.popLast(), wasHelper {
        depth -= 1
      }
      retryDepth[offset] = depth
    }
    let declaration = try! NSRegularExpression(pattern: #"\bfunc\s+([a-z_][A-Za-z0-9_]*)"#)
    let own = Set(
      declaration.matches(in: file.code, range: whole).map { (file.code as NSString).substring(with: $0.range(at: 1)) })
    return call.matches(in: file.code, range: whole).compactMap { match in
      let name = (file.code as NSString).substring(with: match.range(at: 1))
      let qualified = (file.code as NSString).substring(with: match.range).hasPrefix("Glibc.")
      if own.contains(name) && !qualified { return nil }
      return Call(
        name: name, line: file.line(at: match.range.location), qualified: qualified,
        retried: retryDepth[match.range.location] > 0)
    }
  }

  @Test("every C call a signal can cut short is made inside a retry helper of Errno.swift")
  func interruptibleCallsRetry() throws {
    var violations: [String] = []
    var retriedSeen = 0
    for file in try Self.sourceFiles() {
      for call in Self.calls(in: file) where Self.interruptible.contains(call.name) {
        if call.retried {
          retriedSeen += 1
        } else {
          violations.append("\(file.path):\(call.line): \(call.name)(")
        }
      }
    }
    // The matcher must see the calls that are retried, or it proves nothing.
    #expect(retriedSeen >= 60, "found \(retriedSeen) retried calls")
    #expect(
      violations.isEmpty,
      """
      call these inside Errno.retrying { … } (Errno.retryingPointer for a pointer, or retryingInterrupts), \
      or, when a signal cannot interrupt them, move them to notInterruptible and say why:
      \(violations.joined(separator: "\n"))
      """)
  }

  @Test("close and closedir are never made again, and are called from their one file each")
  func closeIsNeverRetried() throws {
    var violations: [String] = []
    var seen: [String: Int] = [:]
    for file in try Self.sourceFiles() {
      for call in Self.calls(in: file) {
        guard let home = Self.neverRetried[call.name] else { continue }
        seen[call.name, default: 0] += 1
        if call.retried { violations.append("\(file.path):\(call.line): \(call.name)( inside a retry helper") }
        if file.path != home { violations.append("\(file.path):\(call.line): \(call.name)( outside \(home)") }
      }
    }
    // The matcher must see the calls that are allowed, or it proves nothing.
    #expect(seen["close", default: 0] >= 1 && seen["closedir", default: 0] >= 1, "found \(seen)")
    #expect(
      violations.isEmpty,
      """
      a close is never made again (Linux has released the descriptor whatever it says); \
      close through FileDescriptor.close():
      \(violations.joined(separator: "\n"))
      """)
  }

  @Test("every C function called is known to the rule: interruptible, never retried, or not interruptible")
  func everyCallClassified() throws {
    let known = Self.interruptible.union(Self.neverRetried.keys).union(Self.notInterruptible.keys)
    #expect(Self.interruptible.isDisjoint(with: Self.notInterruptible.keys))
    let files = try Self.sourceFiles()
    // A function Swift code declares anywhere is Swift's (an unqualified call of a method), and
    // so is a closure a parameter or property of function type holds (`_ body: (Entry) -> Bool`).
    let declarations = [
      #"\b(?:func|case)\s+([a-z_][A-Za-z0-9_]*)"#, #"\b([a-z_][A-Za-z0-9_]*)\s*:\s*(?:@\w+(?:\([^)]*\))?\s+)*\("#,
    ].map { try! NSRegularExpression(pattern: $0) }
    var declared: Set<String> = []
    for file in files {
      for declaration in declarations {
        for match in declaration.matches(in: file.code, range: NSRange(location: 0, length: file.units.count)) {
          declared.insert((file.code as NSString).substring(with: match.range(at: 1)))
        }
      }
    }
    var unknown: [String] = []
    var classifiedSeen = 0
    for file in files {
      for call in Self.calls(in: file) {
        if known.contains(call.name) {
          classifiedSeen += 1
          continue
        }
        // C's names are lowercase: a camelCase name is Swift's (or zlib's, which only computes).
        let lowercase = call.name.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }
        guard lowercase, call.qualified || !declared.contains(call.name), !Self.notCFunctions.contains(call.name),
          !call.name.hasSuffix("_t")
        else { continue }
        unknown.append("\(file.path):\(call.line): \(call.name)(")
      }
    }
    #expect(classifiedSeen >= 100, "found \(classifiedSeen) classified calls")
    #expect(
      unknown.isEmpty,
      """
      C functions the retry rule does not know: add each to interruptible (and call it inside Errno.retrying) \
      or to notInterruptible with why (or, if it is Swift's, to notCFunctions):
      \(unknown.joined(separator: "\n"))
      """)
  }
}
