import Foundation
import Testing

@testable import VPNStatTestSupport

/// The package's one libc boundary, as Package.swift and ARCHITECTURE.md state it: only
/// `VPNStatSystem` imports the C library (where every call retries EINTR and fails with a typed
/// `Errno`). Elsewhere `CLinux` may be imported for the kernel's constants and struct layouts,
/// but the C library's functions it makes visible are not called. Read from the sources, so a new
/// file cannot slip past.
struct LibcBoundaryTests {
  /// Modules that bring the C library's functions (Foundation re-exports Glibc on Linux).
  static let libcModules: Set<String> = ["Glibc", "SwiftGlibc", "Musl", "Darwin", "Foundation"]

  /// Calls that belong behind a wrapper in `VPNStatSystem`: the ones `CLinux`'s headers make
  /// visible and the ones vpnstat has called outside it before.
  static let deniedCalls: Set<String> = [
    "open", "openat", "read", "pread", "write", "pwrite", "close", "opendir", "fdopendir", "readdir",
    "closedir", "readlink", "readlinkat", "stat", "fstat", "lstat", "access", "unlink", "rename", "mkdir",
    "socket", "bind", "listen", "accept", "accept4", "connect", "send", "sendto", "sendmsg", "recv",
    "recvfrom", "recvmsg", "setsockopt", "getsockopt", "getsockname", "shutdown", "ioctl", "fcntl", "poll",
    "inet_ntop", "inet_pton", "if_nametoindex", "if_indextoname", "getifaddrs", "kill", "getpid", "getuid",
    "waitpid", "pipe", "pipe2", "dup", "dup2", "clock_gettime", "nanosleep", "sigaction", "sigprocmask",
    "pthread_sigmask", "eventfd", "timerfd_create", "timerfd_settime", "signalfd", "strerror", "isatty",
    "malloc_trim", "pidfd_open", "pidfd_getfd", "pidfd_send_signal", "getxattr", "lgetxattr", "fgetxattr",
  ]

  /// `CLinux`'s own functions that only evaluate a header's macro; every other `clinux_` function
  /// makes a system call.
  static let shimMacros: Set<String> = [
    "clinux_nlmsg_align", "clinux_rta_align", "clinux_nlmsg_hdrlen", "clinux_stats_filter_bit",
    "clinux_o_tmpfile", "clinux_tunsetiff", "clinux_tungetiff", "clinux_tungetdevnetns", "clinux_tunsetpersist",
  ]

  static let systemTarget = "VPNStatSystem"

  /// One Swift file of `Sources`: its target, its path from the package root, its lines.
  struct SourceFile {
    var target: String
    var path: String
    var lines: [String]
  }

  static func sourceFiles() throws -> [SourceFile] {
    let root = Built.packageRoot
    let sources = root.appendingPathComponent("Sources")
    guard let walk = FileManager.default.enumerator(atPath: sources.path) else { return [] }
    var files: [SourceFile] = []
    while let relative = walk.nextObject() as? String {
      guard relative.hasSuffix(".swift") else { continue }
      let text = try String(contentsOf: sources.appendingPathComponent(relative), encoding: .utf8)
      files.append(
        SourceFile(
          target: String(relative.split(separator: "/")[0]), path: "Sources/" + relative,
          lines: text.components(separatedBy: "\n")))
    }
    return files.sorted { $0.path < $1.path }
  }

  /// The modules a file imports, with their line numbers: plain, attributed (`@preconcurrency`),
  /// with an access level, of one declaration (`import struct Glibc.stat`), or inside `#if`.
  static func imports(_ file: SourceFile) -> [(line: Int, module: String)] {
    let pattern = try! NSRegularExpression(
      pattern:
        #"^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|typealias|func|let|var)\s+)?([A-Za-z_]\w*)"#
    )
    return file.lines.enumerated().compactMap { index, line in
      let range = NSRange(line.startIndex..., in: line)
      guard let match = pattern.firstMatch(in: line, range: range), let module = Range(match.range(at: 1), in: line)
      else { return nil }
      return (index + 1, String(line[module]))
    }
  }

  /// The file's code without comments and string literals, line by line (a doc comment that
  /// says "poll(2)" calls nothing).
  static func code(_ file: SourceFile) -> [String] {
    let literal = try! NSRegularExpression(pattern: #""(?:[^"\\]|\\.)*""#)
    var inMultilineString = false
    var inBlockComment = false
    return file.lines.map { line in
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

  /// The C library calls in a file: a denied name, or a `clinux_` function that is not a macro,
  /// called as a free function (not a method such as `fd.read(`, not a declaration, not one of
  /// the file's own functions or closures called without `self.`).
  static func libcCalls(_ file: SourceFile) -> [(line: Int, function: String)] {
    let call = try! NSRegularExpression(pattern: #"(?<![\w.`])(?<!func )(?<!case )([a-z_][A-Za-z0-9_]*)\s*\("#)
    let declaration = try! NSRegularExpression(pattern: #"\b(?:func|let|var)\s+([a-z_][A-Za-z0-9_]*)"#)
    let lines = code(file)
    var ownNames: Set<String> = []
    for line in lines {
      for match in declaration.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
        if let name = Range(match.range(at: 1), in: line) { ownNames.insert(String(line[name])) }
      }
    }
    var found: [(Int, String)] = []
    for (index, line) in lines.enumerated() {
      for match in call.matches(in: line, range: NSRange(line.startIndex..., in: line)) {
        guard let name = Range(match.range(at: 1), in: line).map({ String(line[$0]) }), !ownNames.contains(name)
        else { continue }
        let isSystemCall = name.hasPrefix("clinux_") ? !shimMacros.contains(name) : deniedCalls.contains(name)
        if isSystemCall { found.append((index + 1, name)) }
      }
    }
    return found
  }

  @Test("no file outside VPNStatSystem imports the C library (Glibc, Musl, Darwin, Foundation)")
  func onlySystemImportsLibc() throws {
    let files = try Self.sourceFiles()
    var violations: [String] = []
    var systemImportsSeen = 0
    for file in files {
      for (line, module) in Self.imports(file) where Self.libcModules.contains(module) {
        if file.target == Self.systemTarget {
          systemImportsSeen += 1
        } else {
          violations.append("\(file.path):\(line): import \(module)")
        }
      }
    }
    // The matcher must see the imports that are allowed, or it proves nothing.
    #expect(systemImportsSeen >= 10, "found \(systemImportsSeen) libc imports in VPNStatSystem")
    #expect(
      violations.isEmpty,
      "only VPNStatSystem may import the C library; wrap the call there:\n\(violations.joined(separator: "\n"))")
  }

  @Test("files outside VPNStatSystem that import CLinux call none of the C library's functions")
  func cLinuxImportersCallNoLibc() throws {
    let files = try Self.sourceFiles()
    var violations: [String] = []
    var systemCallsSeen = 0
    // Those that import the C library itself too: the first test fails for them, this one says what they call.
    for file in files
    where Self.imports(file).contains(where: { $0.module == "CLinux" || Self.libcModules.contains($0.module) }) {
      let calls = Self.libcCalls(file)
      if file.target == Self.systemTarget {
        systemCallsSeen += calls.count
        continue
      }
      violations += calls.map { "\(file.path):\($0.line): \($0.function)(" }
    }
    // The same matcher finds VPNStatSystem's own calls, where they belong.
    #expect(systemCallsSeen >= 20, "found \(systemCallsSeen) libc calls in VPNStatSystem's CLinux importers")
    #expect(
      violations.isEmpty,
      "only VPNStatSystem may call the C library; wrap the call there:\n\(violations.joined(separator: "\n"))")
  }
}
