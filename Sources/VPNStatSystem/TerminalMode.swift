import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// The live view's hold on a terminal: the alternate screen, a hidden cursor and unbuffered,
/// unechoed input — and the one way back, which runs however the view ends.
package final class TerminalMode {
  let input: FileDescriptor
  let output: FileDescriptor
  private var saved = termios()
  private var active = false

  package init(input: FileDescriptor, output: FileDescriptor) throws {
    self.input = input
    self.output = output
    _ = try Errno.retrying { tcgetattr(input.rawValue, &saved) }
    var raw = saved
    // No line buffering and no echo; ISIG stays on, so Ctrl-C still raises SIGINT, which the
    // view catches to restore the terminal.
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    _ = try Errno.retrying { tcsetattr(input.rawValue, TCSANOW, &raw) }
    active = true
    try? output.writeAll("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J")
  }

  /// Puts the terminal back as it was. Safe to call more than once.
  package func restore() {
    guard active else { return }
    active = false
    try? output.writeAll("\u{1B}[?25h\u{1B}[?1049l")
    // The way back runs as the view ends, often from deinit: there is no one left to tell.
    _ = try? Errno.retrying { tcsetattr(input.rawValue, TCSANOW, &saved) }
  }

  /// Draws a frame: home, each line cleared to its end, the rest of the screen cleared.
  package func draw(_ lines: [String]) throws {
    var frame = "\u{1B}[H"
    frame.reserveCapacity(lines.reduce(16) { $0 + $1.utf8.count + 8 })
    for (i, line) in lines.enumerated() {
      frame += line + "\u{1B}[K"
      if i + 1 < lines.count { frame += "\r\n" }
    }
    frame += "\u{1B}[J"
    try output.writeAll(frame)
  }

  /// Keys typed since the last call (bytes; arrow keys and the like arrive as sequences).
  package func keys() -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: 64)
    let n = (try? Errno.retrying { read(input.rawValue, &buffer, buffer.count) }) ?? -1
    return n > 0 ? Array(buffer[0..<n]) : []
  }

  deinit { restore() }
}
