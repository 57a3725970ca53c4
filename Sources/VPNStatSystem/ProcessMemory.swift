import CLinux
import VPNStatModel

#if canImport(Glibc)
  import Glibc
#endif

/// What a long-running process hands back once it has started: memory that start-up needed and
/// the steady loop does not.
package enum ProcessMemory {
  /// Drops the pages of the program's own file that start-up touched from this process's
  /// resident set — its code, its read-only data (the standard library's Unicode tables, SQLite's
  /// parser tables, glibc's locale data) and what relocation wrote and then protected — and gives
  /// the heap's free pages back. The kernel maps a file's pages by whole page-cache folios around
  /// every page first touched, so parsing arguments, opening and checking the database and the
  /// first sample leave most of a static binary resident though the loop uses a small part of it;
  /// the pages stay in the page cache, and those the loop uses come back at its next touch.
  /// Nothing is lost: only pages of read-only mappings that are still the file's are dropped
  /// (`dropFilePages`), never a page any write made the process's own.
  package static func releaseStartUp() {
    releaseProgramPages()
  }

  /// What `releaseStartUp` does, for a process that ran code it will not run again soon (the
  /// recorder after a save: the buckets' writes, the state published for readers), which would
  /// otherwise stay resident by whole folios until the next save. The loop's own pages come back
  /// at its next sample, as minor faults of pages still in the page cache.
  package static func releaseProgramPages() {
    for range in readOnlyRanges() { dropFilePages(range) }
    trimHeap()
  }

  /// The program's own address ranges that are never written once it runs, in whole pages: its
  /// segments mapped without write permission (code, read-only data) and the part relocation
  /// wrote and then made read-only (RELRO), from its program headers. None holds a variable:
  /// `.data` and `.bss` lie in the writable segment.
  package static func readOnlyRanges() -> [Range<UInt>] {
    let page = pageSize
    let capacity = 32
    return withUnsafeTemporaryAllocation(of: clinux_segment.self, capacity: capacity) { segments in
      let count = Int(clinux_program_segments(segments.baseAddress, Int32(capacity)))
      return segments.prefix(count).compactMap { segment -> Range<UInt>? in
        let readOnly =
          (segment.type == UInt32(PT_LOAD) && segment.flags & UInt32(PF_W) == 0) || segment.type == UInt32(PT_GNU_RELRO)
        // Whole pages only: a segment's first or last page may be shared with another's bytes.
        let first = (UInt(segment.start) + page - 1) & ~(page - 1)
        let last = UInt(segment.end) & ~(page - 1)
        return readOnly && last > first ? first..<last : nil
      }
    }
  }

  /// Drops from this process's resident set the pages of `range` (page-aligned, in a mapping of
  /// a file that the process cannot write) that are still the file's, and keeps every other: a
  /// page present as an anonymous copy — written before it was made read-only (relocation), or by
  /// a debugger — or swapped out holds bytes the file does not, and dropping it would lose them.
  /// `/proc/self/pagemap` tells which is which; a read-only mapping cannot gain such a page
  /// between that look and the drop, whatever other threads do. Returns how many resident pages
  /// were dropped; nil when the pagemap could not be read (what it did not show is kept).
  @discardableResult
  package static func dropFilePages(_ range: Range<UInt>) -> Int? {
    let page = pageSize
    guard let pagemap = try? FileDescriptor.openForReading("/proc/self/pagemap") else { return nil }
    defer { pagemap.close() }
    var dropped = 0
    var run: UInt?  // where the pages to drop found so far start
    func drop(until end: UInt) {
      if let start = run, end > start, let address = UnsafeMutableRawPointer(bitPattern: start) {
        _ = madvise(address, Int(end - start), MADV_DONTNEED)
      }
      run = nil
    }
    let entrySize = MemoryLayout<UInt64>.size
    var address = range.lowerBound
    let read = withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 512) { entries -> Bool in
      while address < range.upperBound {
        let wanted = min(entries.count, Int((range.upperBound - address) / page))
        let buffer = UnsafeMutableRawBufferPointer(start: entries.baseAddress, count: wanted * entrySize)
        guard let bytes = try? pagemap.read(into: buffer, at: Int(address / page) * entrySize), bytes >= entrySize
        else { return false }
        for entry in entries.prefix(bytes / entrySize) {
          let present = entry & (1 << 63) != 0
          let swapped = entry & (1 << 62) != 0
          let fileOrShared = entry & (1 << 61) != 0
          if swapped || (present && !fileOrShared) {
            drop(until: address)
          } else {
            if run == nil { run = address }
            if present { dropped += 1 }
          }
          address += page
        }
      }
      return true
    }
    drop(until: address)
    return read ? dropped : nil
  }

  /// Gives the heap's free pages back to the kernel, those between live blocks too: a save
  /// builds its rows and statements and frees them, and glibc returns only a free top of heap
  /// on its own, so each save would leave a megabyte or more resident at a thousand interfaces.
  package static func trimHeap() {
    _ = malloc_trim(0)
  }

  private static var pageSize: UInt { UInt(sysconf(Int32(_SC_PAGESIZE))) }
}
