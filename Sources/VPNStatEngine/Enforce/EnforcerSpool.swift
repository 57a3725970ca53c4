import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// Where enforcers keep what the database would not take: `DB.spool` beside the database, one
/// `SpooledRecord` a line, written by the enforcer's user (root) alone and readable by whoever
/// may read the database (`SpoolFile`). A record goes in as soon as a write of it fails, so
/// neither a stop under a held lock nor a `kill -9` loses it; the enforcer that next gets the
/// database (this one once it answers, or the next to start) writes what it holds and takes it
/// out. Meanwhile every decision and report reads it as if it were written (`SpooledSession`):
/// the gate, `session`, `watch`, `notify` and a starting enforcer. Writing a record twice is
/// harmless: a stop already recorded is not recorded again, and a window is written only where
/// the stored record would open it. A spool that is not what it must be is refused and said,
/// never read.
package struct EnforcerSpool: Sendable {
  let file: SpoolFile
  let location: StoreLocation
  package var path: String { file.path }

  package init(location: StoreLocation) {
    self.location = location
    // Readable by whom the database is, never more.
    let mode = FileStatus.of(location.path)?.permissions ?? 0o644
    file = SpoolFile(path: location.companionPath("spool"), mode: mode)
  }

  /// Appends `record`, synced before this returns.
  func keep(_ record: SpooledRecord) throws(SpoolFile.Failure) {
    try file.append(record.line)
  }

  /// What the spool holds: its records in order, the bytes they were read from (to take out
  /// once written), and how many lines were not records.
  func read() throws(SpoolFile.Failure) -> (records: [SpooledRecord], bytes: [UInt8], unreadable: Int) {
    let bytes = try file.read()
    let (records, unreadable) = SpooledRecord.parse(String(decoding: bytes, as: UTF8.self))
    return (records, bytes, unreadable)
  }

  /// Takes out what `read` returned (whatever was appended since stays).
  func remove(_ bytes: [UInt8]) throws(SpoolFile.Failure) {
    try file.consume(bytes)
  }

  /// What waits in the spool of the database at `location`, read as any reader reads it: no
  /// lock, whole lines only, and only from a spool of the database's owner that no one else may
  /// write (anything else is no record: `problem` says why).
  package static func waiting(for location: StoreLocation) -> (records: [SpooledRecord], problem: String?) {
    let spool = EnforcerSpool(location: location)
    guard let owner = FileStatus.of(location.path)?.owner else { return ([], nil) }
    do {
      let bytes = try spool.file.readLines(owner: owner)
      return (SpooledRecord.parse(String(decoding: bytes, as: UTF8.self)).records, nil)
    } catch {
      return ([], "\(error)")
    }
  }
}
