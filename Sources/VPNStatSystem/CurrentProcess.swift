#if canImport(Glibc)
  import Glibc
#endif

/// This process as the C library sees it: who it runs as, its arguments and environment, and
/// how it ends.
package enum CurrentProcess {
  package static var isRoot: Bool { geteuid() == 0 }
  package static var userID: UInt32 { getuid() }

  /// The arguments as the kernel passed them (without the program name), as bytes: they need
  /// not be UTF-8 (an interface name or an `--exec` argument may hold any byte).
  package static var arguments: [[UInt8]] {
    (1..<Int(CommandLine.argc)).map { i in
      Array(UnsafeRawBufferPointer(start: CommandLine.unsafeArgv[i], count: strlen(CommandLine.unsafeArgv[i]!)))
    }
  }

  /// The environment, as text (a variable that is not UTF-8 is kept with replacement characters).
  /// Split at the first `=` byte: searching a String for a Character costs grapheme breaking,
  /// which was a tenth of a short command's instructions.
  package static var environment: [String: String] {
    var result: [String: String] = [:]
    var entry = environ
    while let pointer = entry.pointee {
      let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
      if let equals = bytes.firstIndex(of: 0x3D) {
        result[String(decoding: bytes[..<equals], as: UTF8.self)] = String(
          decoding: bytes[(equals + 1)...], as: UTF8.self)
      }
      entry += 1
    }
    return result
  }

  /// SIGPIPE ignored: a write to a closed pipe fails with EPIPE, which the command handles.
  package static func ignoreBrokenPipe() { signal(SIGPIPE, SIG_IGN) }

  package static func exit(_ status: Int32) -> Never { Glibc.exit(status) }
}
