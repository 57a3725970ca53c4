import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

extension TerminalSize {
  /// The size of the terminal on `descriptor`, or nil when it is not a terminal.
  package static func of(_ descriptor: FileDescriptor) -> TerminalSize? {
    var size = winsize()
    guard (try? Errno.retrying({ clinux_ioctl_ptr(descriptor.rawValue, UInt(TIOCGWINSZ), &size) })) != nil,
      size.ws_col > 0
    else {
      return nil
    }
    return TerminalSize(columns: Int(size.ws_col), rows: Int(size.ws_row))
  }
}
