import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// What a long-running process hands back once it has started: memory that start-up needed and
/// the steady loop does not.
package enum ProcessMemory {
  /// Drops the program's own machine code from this process's resident set, and gives the heap's
  /// free pages back. The kernel maps code 64 KiB around every page first touched (fault-around),
  /// so parsing arguments, opening and checking the database and the first sample leave most of a
  /// static binary resident though the loop runs a small part of it; the pages stay in the page
  /// cache, and those the loop runs come back at its next touch. Only the executable's code is
  /// dropped: it is never written, so nothing is lost (writable data would be).
  package static func releaseStartUp() {
    var start: UInt = 0
    var end: UInt = 0
    if clinux_program_text(&start, &end) == 0 {
      let page = UInt(sysconf(Int32(_SC_PAGESIZE)))
      // Whole pages only: the last one may share its page with data.
      let first = (start + page - 1) & ~(page - 1)
      let last = end & ~(page - 1)
      if last > first, let address = UnsafeMutableRawPointer(bitPattern: first) {
        _ = madvise(address, Int(last - first), MADV_DONTNEED)
      }
    }
    trimHeap()
  }

  /// Gives the heap's free pages back to the kernel, those between live blocks too: a save
  /// builds its rows and statements and frees them, and glibc returns only a free top of heap
  /// on its own, so each save would leave a megabyte or more resident at a thousand interfaces.
  package static func trimHeap() {
    _ = malloc_trim(0)
  }
}
