import VPNStatModel
import VPNStatStore
import VPNStatSystem

/// Where enforcers keep what the database would not take: `DB.spool` beside the database, a
/// private file of the enforcer's user (root's), one `SpooledRecord` a line. A record goes in as
/// soon as a write of it fails, so neither a stop under a held lock nor a `kill -9` loses it; the
/// enforcer that next gets the database (this one once the lock goes, or the next to start)
/// writes what it holds and takes it out. Writing a record twice is harmless: a stop already
/// recorded is not recorded again, and a window is written only where the stored record would
/// open it. A spool that is not a private file of this user's is refused and said, never read.
package struct EnforcerSpool: Sendable {
  let file: PrivateSpoolFile
  package var path: String { file.path }

  package init(location: StoreLocation) {
    file = PrivateSpoolFile(path: location.companionPath("spool"))
  }

  /// Appends `record`, synced before this returns.
  func keep(_ record: SpooledRecord) throws(PrivateSpoolFile.Failure) {
    try file.append(record.line)
  }

  /// What the spool holds: its records in order, the bytes they were read from (to take out
  /// once written), and how many lines were not records.
  func read() throws(PrivateSpoolFile.Failure) -> (records: [SpooledRecord], bytes: [UInt8], unreadable: Int) {
    let bytes = try file.read()
    let (records, unreadable) = SpooledRecord.parse(String(decoding: bytes, as: UTF8.self))
    return (records, bytes, unreadable)
  }

  /// Takes out what `read` returned (whatever was appended since stays).
  func remove(_ bytes: [UInt8]) throws(PrivateSpoolFile.Failure) {
    try file.consume(bytes)
  }
}
