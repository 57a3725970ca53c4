import Foundation
import Testing

@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// A variable of this program: it lies in `.data` or `.bss`, which nothing may drop.
nonisolated(unsafe) var processMemoryProbe: Int = 0

/// `ProcessMemory`: what the recorder drops after start-up is only ever pages of the program's
/// file that no write has touched, so nothing the process wrote is lost.
struct ProcessMemoryTests {
  static let page = Int(sysconf(Int32(_SC_PAGESIZE)))

  /// One entry of /proc/self/pagemap: whether `address`'s page is resident, and whether it is
  /// the file's page (not an anonymous copy).
  static func pageState(_ address: UnsafeRawPointer) throws -> (present: Bool, file: Bool) {
    let fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    defer { close(fd) }
    var entry: UInt64 = 0
    let offset = off_t(UInt(bitPattern: address) / UInt(page) * 8)
    guard pread(fd, &entry, 8, offset) == 8 else { throw POSIXError(.EIO) }
    return (entry & (1 << 63) != 0, entry & (1 << 61) != 0)
  }

  /// The mappings of /proc/self/maps: range, permissions, the file's path ("" for none).
  static func mappings() throws -> [(range: Range<UInt>, permissions: String, path: String)] {
    let text = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
    return text.split(separator: "\n").compactMap { line in
      let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
      let bounds = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
      guard fields.count >= 5, bounds.count == 2 else { return nil }
      let path = fields.count > 5 ? fields[5].trimmingCharacters(in: .whitespaces) : ""
      return (bounds[0]..<bounds[1], String(fields[1]), path)
    }
  }

  @Test("a drop keeps the pages a write made the process's own and drops the file's")
  func dropKeepsWrittenPages() throws {
    let directory = try TemporaryDirectory("pages")
    let page = Self.page
    // Four pages, each filled with its own byte.
    var bytes: [UInt8] = []
    for i in 0..<4 { bytes += [UInt8](repeating: 0x10 + UInt8(i), count: page) }
    try Data(bytes).write(to: URL(fileURLWithPath: directory.file("f")))
    let fd = open(directory.file("f"), O_RDONLY | O_CLOEXEC)
    #expect(fd >= 0)
    defer { close(fd) }
    // Private and writable, as a program's RELRO is while it is relocated.
    let mapped = try #require(
      mmap(nil, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0).flatMap { $0 == MAP_FAILED ? nil : $0 })
    defer { munmap(mapped, 4 * page) }
    let pages = mapped.bindMemory(to: UInt8.self, capacity: 4 * page)
    #expect(pages[0] == 0x10 && pages[3 * page] == 0x13)  // read: the file's pages
    pages[page] = 0xEE  // written: an anonymous copy, all the process has of it
    #expect(mprotect(mapped, 4 * page, PROT_READ) == 0)
    #expect(try Self.pageState(mapped) == (true, true))
    #expect(try Self.pageState(mapped + page) == (true, false))
    // Reading a page maps its resident neighbours too (fault-around): count what is there.
    let resident = try (0..<4).filter { try Self.pageState(mapped + $0 * page) == (true, true) }.count
    #expect(resident >= 2)

    let start = UInt(bitPattern: mapped)
    let dropped = ProcessMemory.dropFilePages(start..<start + UInt(4 * page))

    #expect(dropped == resident)
    for i in [0, 2, 3] { #expect(try Self.pageState(mapped + i * page).present == false, "page \(i)") }
    #expect(try Self.pageState(mapped + page) == (true, false))
    #expect(pages[page] == 0xEE && pages[page + 1] == 0x11)
    // Dropped pages read the file again.
    #expect(pages[0] == 0x10 && pages[2 * page] == 0x12 && pages[3 * page] == 0x13)
  }

  @Test("the ranges dropped after start-up are the program's read-only mappings, its code among them, never a variable")
  func readOnlyRanges() throws {
    let ranges = ProcessMemory.readOnlyRanges()
    #expect(!ranges.isEmpty)
    let page = UInt(Self.page)
    let program = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let mappings = try Self.mappings()
    for range in ranges {
      let covering = mappings.filter { $0.range.overlaps(range) }
      #expect(covering.reduce(0) { $0 + $1.range.clamped(to: range).count } == range.count, "\(range) unmapped")
      #expect(covering.allSatisfy { !$0.permissions.contains("w") }, "\(range) is writable: \(covering)")
    }
    // Every read-only mapping of the program's file is among them, but for a page at either end
    // a segment shares with another.
    for mapping in mappings where mapping.path == program && !mapping.permissions.contains("w") {
      let covered = ranges.reduce(0) { $0 + $1.clamped(to: mapping.range).count }
      #expect(covered > 0 && UInt(covered) + 2 * page >= UInt(mapping.range.count), "\(mapping) left out")
    }
    let variable = withUnsafeMutablePointer(to: &processMemoryProbe) { UInt(bitPattern: $0) }
    #expect(!ranges.contains { $0.contains(variable) })
    let function: @convention(c) () -> Void = {}
    #expect(ranges.contains { $0.contains(unsafeBitCast(function, to: UInt.self)) })
  }

  @Test("releasing start-up keeps every variable and every written page of the program")
  func releaseKeepsData() throws {
    let marker = Int.random(in: 1..<Int.max)
    processMemoryProbe = marker
    // The anonymous pages of the read-only ranges (what relocation wrote before RELRO was
    // protected, in a program loaded at a random address), and their bytes.
    func written() throws -> [UInt: [UInt8]] {
      var pages: [UInt: [UInt8]] = [:]
      for range in ProcessMemory.readOnlyRanges() {
        for address in stride(from: range.lowerBound, to: range.upperBound, by: Self.page) {
          let pointer = try #require(UnsafeRawPointer(bitPattern: address))
          let state = try Self.pageState(pointer)
          if state.present && !state.file {
            pages[address] = Array(UnsafeRawBufferPointer(start: pointer, count: Self.page))
          }
        }
      }
      return pages
    }
    let before = try written()
    #expect(!before.isEmpty)
    ProcessMemory.releaseStartUp()
    #expect(try written() == before)
    #expect(processMemoryProbe == marker)
  }
}
