import VPNStatModel
import VPNStatSystem

/// What a reader reads of the database's files, without SQLite and without a lock, to know
/// whether the database changed and whether it may be read now: the journal mode (1 rollback,
/// 2 WAL, bytes 18–19), the header's file change counter (every commit in rollback mode
/// increments it), which file the database is with its owner and mode, and the `-wal`'s identity,
/// size and salts, and the header of its last frame — whose checksum runs over every frame before
/// it. A commit changes the log's last frame (appended, or written over the frames of an
/// earlier log when the log starts over, a write whose size may not change); a checkpoint copies
/// into the file only pages the log holds, which a reader of that log reads from the log, and
/// leaves the log as it is (`Store.checkpointLog`). Equal stamps before and
/// after a read mean no commit came between: the read saw one committed state (`Store`'s
/// readers), and a copy made at one stamp is still current at an equal one (`PublishedState`).
struct StoreStamp: Equatable {
  var bytes: [UInt8]
  /// A file in rollback mode (another program's writer, an older file) has a transaction being
  /// written, or one a writer stopped in the middle of (a hot journal, which the next writer
  /// rolls back): what the file holds now is not a committed state. (A WAL's commit under way
  /// is not in the file; a reader reads the one before it.)
  var isWriting: Bool

  /// 2 + 4 header bytes, the database's device and inode, owner and mode, the `-wal`'s device,
  /// inode and size, its salts, and its last frame's header.
  static let length = 6 + 2 * 8 + 2 * 4 + 3 * 8 + 8 + 24

  /// Whether the header says WAL.
  var isWAL: Bool { bytes[0] == 2 || bytes[1] == 2 }

  /// Whether the `-wal` exists (a WAL file's log; nothing to read without one): its device,
  /// bytes 30–37 of the layout `read` appends.
  var hasLog: Bool { bytes[30..<38].contains { $0 != 0 } }

  /// The `-wal`'s size in bytes (0 when there is none).
  var logSize: UInt64 { bytes[46..<54].reversed().reduce(0) { $0 << 8 | UInt64($1) } }

  /// Whether the log ends in frames no commit ends (a writer that died in the middle of a write,
  /// or one starting the log over): its last frame says no file size, or carries other salts than
  /// the log's header (bytes 54–61; the last frame's header is bytes 62–85).
  var logEndsUncommitted: Bool {
    logSize > 32 && (bytes[66..<70].allSatisfy { $0 == 0 } || bytes[70..<78] != bytes[54..<62])
  }

  /// The file change counter.
  var changeCounter: UInt32 { bytes[2...5].reduce(0) { $0 << 8 | UInt32($1) } }

  /// The stamp of the database whose real path is `real` now; nil when it cannot be read or is
  /// no SQLite file (too short, another format).
  static func read(database real: String) -> StoreStamp? { read(Files(database: real)) }

  /// The files a stamp reads, named once: a writer reads the stamp around every operation (a
  /// recorder twice a second), and names made each time were strings built and freed for it.
  struct Files: Sendable {
    var database: String
    var log: String
    var journal: String

    init(database real: String) {
      database = real
      log = real + "-wal"
      journal = real + "-journal"
    }
  }

  /// The first bytes of every SQLite file: made once, not for each of a recorder's two stamps a
  /// second (an array made from a String's bytes runs the standard library's shared code, which
  /// then stays resident between saves).
  private static let magic = Array("SQLite format 3\0".utf8)

  /// The stamp of the database `files` name now (`read(database:)`).
  static func read(_ files: Files) -> StoreStamp? {
    // The file's header and the log's two headers are read into the stack: arrays made for them
    // went through the standard library's shared (unspecialized) allocation, twice a stamp, in a
    // recorder twice a second (docs/performance.md: the standard library's shared code).
    withUnsafeTemporaryAllocation(byteCount: 28 + 56, alignment: 8) { scratch in
      scratch.initializeMemory(as: UInt8.self, repeating: 0)
      let header = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<28])
      let log = UnsafeMutableRawBufferPointer(rebasing: scratch[28...])
      var database: FileStatus?
      guard readPrefix(of: files.database, into: header, status: &database) == 28, let database,
        database.isRegular, header.starts(with: magic)
      else { return nil }
      var stamp = ByteWriter()
      stamp.bytes.reserveCapacity(length)
      stamp.bytes.append(contentsOf: header[18..<20])
      stamp.bytes.append(contentsOf: header[24..<28])
      stamp.u64(database.device)
      stamp.u64(database.inode)
      stamp.u32(database.owner)
      stamp.u32(database.permissions)
      let inWALMode = header[18] == 2 || header[19] == 2
      let wal = inWALMode ? readLog(files.log, into: log) : nil
      stamp.u64(wal?.device ?? 0)
      stamp.u64(wal?.inode ?? 0)
      stamp.u64(UInt64(wal?.size ?? 0))
      stamp.bytes.append(contentsOf: log[16..<24])
      stamp.bytes.append(contentsOf: log[32..<56])
      // A journal with nothing in it (or none) is no transaction: DELETE mode removes it at each
      // commit, TRUNCATE empties it.
      let journal = FileStatus.of(files.journal)
      return StoreStamp(bytes: stamp.bytes, isWriting: (journal?.size ?? 0) > 0 && !inWALMode)
    }
  }

  /// Reads the log at `path`: its 32-byte header into `raw` (56 bytes), then the 24-byte header of
  /// its last whole frame (page number, the file's size when it ends a commit, salts, checksum);
  /// returns what the open file is, nil when it cannot be read (the bytes then stay zero).
  private static func readLog(_ path: String, into raw: UnsafeMutableRawBufferPointer) -> FileStatus? {
    guard let fd = try? FileDescriptor.open(path, FileDescriptor.readingNoFollow) else { return nil }
    defer { fd.close() }
    guard let status = try? fd.status(), status.isRegular else { return nil }
    guard (try? fd.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<32]), at: 0)) == 32 else { return status }
    let pageSize = raw[8..<12].reduce(0) { $0 << 8 | Int($1) }
    let frame = 24 + pageSize
    let frames = (status.size - 32) / frame
    guard pageSize >= 512, frames > 0 else { return status }
    _ = try? fd.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[32..<56]), at: 32 + (frames - 1) * frame)
    return status
  }

  /// Reads the first bytes of `path` into `buffer` and sets `status` to what the open file is;
  /// returns how many bytes (0 when it cannot be read, or is not a regular file).
  private static func readPrefix(
    of path: String, into buffer: UnsafeMutableRawBufferPointer, status: inout FileStatus?
  ) -> Int {
    guard let fd = try? FileDescriptor.open(path, FileDescriptor.readingNoFollow) else { return 0 }
    defer { fd.close() }
    status = try? fd.status()
    guard status?.isRegular == true else { return 0 }
    return (try? fd.read(into: buffer, at: 0)) ?? 0
  }
}
