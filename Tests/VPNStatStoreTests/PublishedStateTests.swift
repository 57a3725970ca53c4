import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatSystem
@testable import VPNStatTestSupport

/// What the recorder publishes for one-shot readers (`PublishedState`): believed only while it is
/// what the database holds — any writer's commit since makes readers read the database — and only
/// when its owner is the database's and no one else could have written it.
struct PublishedStateTests {
  let clock = ManualTimeSource()
  /// Long enough to have storage of its own (a short String is held inline).
  let boot = UUID().uuidString.lowercased()

  func observations(_ rx: UInt64, names: [String] = ["tun0", "wlan0", "eth0"]) -> [LedgerObservation] {
    let now = clock.now()
    return names.enumerated().map { at, name in
      LedgerObservation(
        name: InterfaceName(name), interfaceClass: at == 0 ? .tunnel : at == 1 ? .wifi : .ethernet,
        baseline: LedgerBaseline(
          instance: InterfaceInstance(index: Int32(3 + at), bootID: boot),
          counters: TrafficCounts(rxBytes: rx * UInt64(at + 1), txBytes: rx / 2, rxPackets: rx / 100, txPackets: 1),
          width: .bits64, wall: now.wall, boottime: now.boottime),
        plausibleBytesPerSecond: Ledger.defaultCapBytesPerSecond)
    }
  }

  /// A database with a ledger saved twice, a window open for `tun0`, a stop, a refusal, an
  /// overflow and a trusted clock, all written by `writer`, whose last save is the last commit.
  func populated(_ directory: TemporaryDirectory) throws -> (StoreLocation, Store) {
    let location = StoreLocation(path: directory.file("v.db"))
    let writer = try #require(try Store.open(location, intent: .write))
    _ = try writer.advanceLedger(observations(1000), now: clock.now().wall)
    try writer.updateSession { record in
      record.window = SessionWindow.open(at: clock.now().wall, lengths: .release)
      record.tunnel = InterfaceName("tun0")
      record.usageBase = TrafficCounts(rxBytes: 7, txBytes: 9)
    }
    try writer.recordStop(
      StopRecord(at: clock.now().wall, interface: InterfaceName("tun0"), reason: .freeLimit, detail: "a detail"))
    try writer.recordRefusal(
      Refusal(at: clock.now().wall, interface: nil, by: .gate, reason: .pause, until: clock.now().wall + .seconds(60)))
    try writer.noteNotificationOverflow(at: clock.now().wall)
    clock.advance(.seconds(5))
    _ = try writer.trustedNow(clock.now(), writing: true)
    _ = try writer.advanceLedger(observations(5000), now: clock.now().wall)
    return (location, writer)
  }

  func file(_ location: StoreLocation) -> String { location.path + "." + PublishedState.suffix }

  @Test(
    "what is published reads as the database does: the ledger, the session with its stop, refusal and clock, the health"
  )
  func publishedIsTheDatabase() throws {
    let directory = try TemporaryDirectory("published")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    let published = try #require(PublishedState.load(location, sharingBootID: nil))
    let reader = try #require(try Store.open(location, intent: .read))
    #expect(published.ledger.entries == (try reader.loadLedger().entries))
    #expect(published.ledger.entries.count == 3)
    let session = try reader.storedSession()
    #expect(published.session == session)
    #expect(session.record.window != nil && session.lastStop?.detail == "a detail" && session.lastRefusal != nil)
    #expect(session.trusted != nil)
    #expect(published.health == (try reader.health()))
    #expect(published.health.notificationOverflows == 1)
    #expect(published.location == location)
    // Readable by whom the database is, no more.
    let mode = try FileManager.default.attributesOfItem(atPath: file(location))[.posixPermissions] as? Int
    #expect(mode == 0o644)
  }

  @Test("the boot id the reader gives is shared by the entries of that boot")
  func sharesBootID() throws {
    let directory = try TemporaryDirectory("published-boot")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    let given = String(decoding: Array(boot.utf8), as: UTF8.self)
    #expect(storage(of: given) != storage(of: boot))
    let published = try #require(PublishedState.load(location, sharingBootID: given))
    for entry in published.ledger.entries.values {
      #expect(storage(of: entry.baseline.instance.bootID) == storage(of: given))
    }
  }

  /// Every way a write changes the ledger, or comes from another program than vpnstat.
  enum Commit: String, CaseIterable, CustomTestStringConvertible {
    case enforcerSave, recorderSaveBySelf, fileReplacedByOther, rowChangedBySQLite
    var testDescription: String { rawValue }
  }

  @Test(
    "a commit that changes the ledger, or another program's, after the publishing, and the published state is not believed",
    arguments: Commit.allCases)
  func everyCommitMakesItStale(_ commit: Commit) throws {
    let directory = try TemporaryDirectory("published-stale")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    #expect(PublishedState.load(location, sharingBootID: nil) != nil)
    let other = try #require(try Store.open(location, intent: .write))
    clock.advance(.seconds(1))
    switch commit {
    case .enforcerSave:
      _ = try other.saveLedger(now: clock.now().wall, storingSnapshot: false) { stored in
        var ledger = stored
        let advance = ledger.advance(observations(9000, names: ["tun0"]))
        return ((), LedgerCheckpoint(advance, calendar: other.calendar))
      }
    case .recorderSaveBySelf: _ = try writer.advanceLedger(observations(9000), now: clock.now().wall)
    case .fileReplacedByOther:
      // The same bytes in another file put in its place: not the file the state was published for.
      let copy = location.path + ".copy"
      try FileManager.default.copyItem(atPath: location.path, toPath: copy)
      #expect(rename(copy, location.path) == 0)
    case .rowChangedBySQLite: try changeByAnotherProgram(location)
    }
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
  }

  /// Another program's commit: the sqlite3 library of this process, on a connection of its own.
  func changeByAnotherProgram(_ location: StoreLocation) throws {
    let connection = try SQLiteConnection(uri: "file:" + location.path, readOnly: false, create: false)
    try connection.execute("UPDATE interfaces SET total_rx_bytes = total_rx_bytes + 1")
  }

  /// Every vpnstat write that leaves the ledger as it is, by the publishing connection or another.
  enum KeptCommit: String, CaseIterable, CustomTestStringConvertible {
    case planByOther, windowBySelf, stopByOther, refusalByOther, trustedClockByOther, trustedNowByOther
    case overflowByOther
    var testDescription: String { rawValue }
  }

  @Test(
    "a vpnstat write that leaves the ledger keeps readers on the published state: written again, it reads as the database does",
    arguments: KeptCommit.allCases)
  func keptCommitRepublishes(_ commit: KeptCommit) throws {
    let directory = try TemporaryDirectory("published-kept")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    let before = try Data(contentsOf: URL(fileURLWithPath: file(location)))
    let other = try #require(try Store.open(location, intent: .write))
    clock.advance(.seconds(1))
    switch commit {
    case .planByOther: try other.updateSession { $0.plan = .premium }
    case .windowBySelf: try writer.updateSession { $0.window = nil }
    case .stopByOther: try other.recordStop(StopRecord(at: clock.now().wall, interface: nil, reason: .user))
    case .refusalByOther:
      try other.recordRefusal(Refusal(at: clock.now().wall, interface: nil, by: .gate, reason: .pause, until: nil))
    case .trustedClockByOther:
      try other.storeTrusted(TrustedClock(wall: clock.now().wall, boottime: clock.now().boottime, bootID: boot))
    case .trustedNowByOther: _ = try other.trustedNow(clock.now(), writing: true)
    case .overflowByOther: try other.noteNotificationOverflow(at: clock.now().wall)
    }
    let published = try #require(PublishedState.load(location, sharingBootID: nil))
    #expect(try Data(contentsOf: URL(fileURLWithPath: file(location))) != before)
    let reader = try #require(try Store.open(location, intent: .read))
    #expect(published.ledger.entries == (try reader.loadLedger().entries))
    #expect(published.ledger.entries.count == 3)
    #expect(published.session == (try reader.storedSession()))
    #expect(published.health == (try reader.health()))
  }

  @Test(
    "a vpnstat write keeps nothing stale after another program's commit; a data cap it sets is published with its usage"
  )
  func keptOnlyWhenCurrent() throws {
    let directory = try TemporaryDirectory("published-kept-current")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    let other = try #require(try Store.open(location, intent: .write))
    // Stale before the write (another program's commit): the write does not make it current.
    try changeByAnotherProgram(location)
    try other.updateSession { $0.plan = .premium }
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    try other.recordStop(StopRecord(at: clock.now().wall, interface: nil, reason: .user))
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    // Current again after a save; a data cap set is published with its period's usage as stored.
    _ = try writer.advanceLedger(observations(6000), now: clock.now().wall)
    #expect(try writer.publishForReaders())
    let cap = DataCap(limitBytes: 1 << 30, period: UsagePeriod(.month))
    try other.updateSession { $0.dataCap = cap }
    let capped = try #require(PublishedState.load(location, sharingBootID: nil))
    #expect(capped.session.record.dataCap == cap)
    let start = cap.period.start(of: try #require(capped.session.trusted).wall, in: other.calendar)
    let usage = try other.usage(since: start, of: .tunnel)
    #expect(usage.rxBytes == 5000, "the tunnel's growth, booked by the saves")
    #expect(capped.capUsage == PublishedState.CapUsage(start: start, stored: usage))
    // A read-only store writes nothing, published or not.
    let reader = try #require(try Store.open(location, intent: .read))
    #expect(throws: StoreError.self) { try reader.updateSession { $0.plan = .premium } }
  }

  @Test("a writer publishes only what its own last save stored: not after another's commit; a data cap with its usage")
  func publishesOnlyItsOwnSave() throws {
    let directory = try TemporaryDirectory("published-own")
    let (location, writer) = try populated(directory)
    let other = try #require(try Store.open(location, intent: .write))
    try other.updateSession { $0.plan = .premium }
    #expect(try writer.publishForReaders() == false)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    // Its next save publishes again: what the other wrote is in it.
    _ = try writer.advanceLedger(observations(6000), now: clock.now().wall)
    #expect(try writer.publishForReaders())
    #expect(PublishedState.load(location, sharingBootID: nil)?.session.record.plan == .premium)
    // A cap goes with its period's usage as the save stored it.
    try writer.updateSession { $0.dataCap = DataCap(limitBytes: 1 << 30, period: UsagePeriod(.day)) }
    _ = try writer.advanceLedger(observations(7000), now: clock.now().wall)
    #expect(try writer.publishForReaders())
    let capped = try #require(PublishedState.load(location, sharingBootID: nil)?.capUsage)
    #expect(capped.stored == (try writer.usage(since: capped.start, of: .tunnel)))
    #expect(capped.stored.rxBytes == 6000)
    // A reader never publishes.
    let reader = try #require(try Store.open(location, intent: .read))
    #expect(try reader.publishForReaders() == false)
  }

  enum Damage: String, CaseIterable, CustomTestStringConvertible {
    case shortByOne, longerByOne, stampByte, headByte, ledgerByte, otherMagic, empty
    case groupWritable, worldWritable, linkToWritable, fifo, directory
    var testDescription: String { rawValue }
  }

  @Test(
    "a damaged published file, or one others could have written or that is not a file, is not believed",
    arguments: Damage.allCases)
  func damagedIsIgnored(_ damage: Damage) throws {
    let directory = try TemporaryDirectory("published-damage")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    let path = file(location)
    var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    let headLength = Int(bytes[4]) | Int(bytes[5]) << 8
    func rewrite(_ changed: [UInt8]) throws {
      try FileManager.default.removeItem(atPath: path)
      try Data(changed).write(to: URL(fileURLWithPath: path))
    }
    switch damage {
    case .shortByOne: try rewrite(Array(bytes.dropLast()))
    case .longerByOne: try rewrite(bytes + [0])
    case .stampByte:
      bytes[12 + 20] ^= 1
      try rewrite(bytes)
    case .headByte:
      // The plan's text: a name no plan has.
      bytes[12 + StoreStamp.length + 8 + 9 + 4] ^= 0x20
      try rewrite(bytes)
    case .ledgerByte:
      bytes[12 + headLength] ^= 1  // the snapshot's magic
      try rewrite(bytes)
    case .otherMagic:
      bytes[0] ^= 1
      try rewrite(bytes)
    case .empty: try rewrite([])
    case .groupWritable: #expect(chmod(path, 0o664) == 0)
    case .worldWritable: #expect(chmod(path, 0o646) == 0)
    case .linkToWritable:
      // A link is followed (the recorder's runtime directory), and what it leads to judged.
      #expect(rename(path, path + ".real") == 0)
      #expect(chmod(path + ".real", 0o646) == 0)
      #expect(symlink(path + ".real", path) == 0)
    case .fifo:
      try FileManager.default.removeItem(atPath: path)
      #expect(mkfifo(path, 0o644) == 0)
    case .directory:
      try FileManager.default.removeItem(atPath: path)
      try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    // The database itself still reads.
    #expect(try Store.open(location, intent: .read)?.loadLedger().entries.count == 3)
  }

  @Test(
    "a published data cap is read back with its usage, as written; one without its usage, or with a limit no vpnstat writes, is not believed"
  )
  func capIsBelievedWithItsUsage() throws {
    let directory = try TemporaryDirectory("published-cap")
    let (location, writer) = try populated(directory)
    var session = try writer.storedSession()
    session.record.dataCap = DataCap(limitBytes: 1 << 30, period: UsagePeriod(.month, monthStartDay: 28))
    let stamp = try #require(StoreStamp.read(database: location.path))
    let usage = PublishedState.CapUsage(
      start: 1_799_000_000, stored: TrafficCounts(rxBytes: 1, txBytes: 2, rxPackets: 3, txPackets: 4))
    let made = PublishedState.encode(
      stamp: stamp, session: session, health: StoreHealth(), capUsage: usage, ledger: try writer.loadLedger())
    try Data(made).write(to: URL(fileURLWithPath: file(location)))
    let read = try #require(PublishedState.load(location, sharingBootID: nil))
    #expect(read.session == session && read.capUsage == usage)
    let without = PublishedState.encode(
      stamp: stamp, session: session, health: StoreHealth(), ledger: try writer.loadLedger())
    try Data(without).write(to: URL(fileURLWithPath: file(location)))
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    session.record.dataCap?.limitBytes = 0
    let zero = PublishedState.encode(
      stamp: stamp, session: session, health: StoreHealth(), capUsage: usage, ledger: try writer.loadLedger())
    try Data(zero).write(to: URL(fileURLWithPath: file(location)))
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    // The same file without the cap is believed: the stamp is the database's.
    session.record.dataCap = nil
    let plain = PublishedState.encode(
      stamp: stamp, session: session, health: StoreHealth(), ledger: try writer.loadLedger())
    try Data(plain).write(to: URL(fileURLWithPath: file(location)))
    #expect(PublishedState.load(location, sharingBootID: nil)?.session == session)
  }

  @Test(
    "a published file owned by another user than the database's is not believed",
    .enabled(if: Privilege.isRoot, Privilege.reason))
  func foreignOwnerIsIgnored() throws {
    let directory = try TemporaryDirectory("published-owner")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    #expect(PublishedState.load(location, sharingBootID: nil) != nil)
    #expect(chown(file(location), 65534, 65534) == 0)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
  }

  @Test(
    "root writing another user's database publishes nothing there: that user's file is left as it was, stale",
    .enabled(if: Privilege.isRoot, Privilege.reason))
  func rootDoesNotPublishForAnotherUser() throws {
    let directory = try TemporaryDirectory("published-not-mine")
    let (location, writer) = try populated(directory)
    for path in [location.path, location.path + "-wal"] { #expect(chown(path, 65534, 65534) == 0) }
    // What that user's recorder would have published: the file's stamp now (its owner in it).
    let stamp = try #require(StoreStamp.read(database: location.path))
    let made = PublishedState.encode(
      stamp: stamp, session: try writer.storedSession(), health: try writer.health(), ledger: try writer.loadLedger())
    try Data(made).write(to: URL(fileURLWithPath: file(location)))
    #expect(chown(file(location), 65534, 65534) == 0)
    #expect(PublishedState.load(location, sharingBootID: nil) != nil)
    let root = try #require(try Store.open(location, intent: .write))
    try root.updateSession { $0.plan = .premium }
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    let after = try FileManager.default.attributesOfItem(atPath: file(location))
    #expect(after[.ownerAccountID] as? Int == 65534)
    #expect(try Data(contentsOf: URL(fileURLWithPath: file(location))) == Data(made))
  }

  @Test(
    "a database made readable by fewer is published as fewer may read it, and its change of mode makes the old file stale"
  )
  func followsTheDatabasesMode() throws {
    let directory = try TemporaryDirectory("published-mode")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    #expect(chmod(location.path, 0o600) == 0)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    _ = try writer.advanceLedger(observations(8000), now: clock.now().wall)
    #expect(try writer.publishForReaders())
    let mode = try FileManager.default.attributesOfItem(atPath: file(location))[.posixPermissions] as? Int
    #expect(mode == 0o600)
    #expect(PublishedState.load(location, sharingBootID: nil) != nil)
  }

  func linkTarget(_ path: String) -> String? { try? FileManager.default.destinationOfSymbolicLink(atPath: path) }

  /// A database published through a link to a runtime directory of its own: the database's
  /// directory, the runtime directory, the database, its writer and where the link leads.
  func publishedThroughLink(_ name: String) throws -> (
    directory: TemporaryDirectory, runtime: TemporaryDirectory, location: StoreLocation, writer: Store, target: String
  ) {
    let directory = try TemporaryDirectory(name)
    let runtime = try TemporaryDirectory(name + "-run")
    let (location, writer) = try populated(directory)
    writer.publishingDirectory = runtime.path
    #expect(try writer.publishForReaders())
    return (directory, runtime, location, writer, try #require(linkTarget(file(location)), "DB.published is a link"))
  }

  @Test(
    "with a publishing directory (the unit's /run/vpnstat) the state is written there and linked beside the database; a link to nothing, as after a reboot, sends readers to the database"
  )
  func publishedElsewhere() throws {
    let link = try publishedThroughLink("published-elsewhere")
    let (runtime, location, writer, target) = (link.runtime, link.location, link.writer, link.target)
    #expect(target.hasPrefix(runtime.path + "/v.db-") && target.hasSuffix(".published"))
    let published = try #require(PublishedState.load(location, sharingBootID: nil))
    let reader = try #require(try Store.open(location, intent: .read))
    #expect(published.ledger.entries == (try reader.loadLedger().entries))
    // Another vpnstat writer's change is published where the link leads; the link stays.
    let other = try #require(try Store.open(location, intent: .write))
    try other.updateSession { $0.plan = .premium }
    #expect(linkTarget(file(location)) == target)
    #expect(PublishedState.load(location, sharingBootID: nil)?.session.record.plan == .premium)
    #expect(try FileManager.default.contentsOfDirectory(atPath: runtime.path).count == 1)
    // The next save rewrites the file; the link stays as it is.
    let linkBefore = try FileManager.default.attributesOfItem(atPath: file(location))[.systemFileNumber] as? Int
    _ = try writer.advanceLedger(observations(7000), now: clock.now().wall)
    #expect(try writer.publishForReaders())
    #expect(linkTarget(file(location)) == target)
    let linkAfter = try FileManager.default.attributesOfItem(atPath: file(location))[.systemFileNumber] as? Int
    #expect(linkBefore == linkAfter)
    #expect(
      PublishedState.load(location, sharingBootID: nil)?.ledger.entries[InterfaceName("eth0")]?.baseline.counters
        .rxBytes
        == 21000)
    // A reboot empties the runtime directory: the link leads nowhere.
    #expect(unlink(target) == 0)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    // Without one, the file is beside the database again, in the link's place.
    writer.publishingDirectory = nil
    #expect(try writer.publishForReaders())
    #expect(linkTarget(file(location)) == nil)
    #expect(PublishedState.load(location, sharingBootID: nil) != nil)
    #expect(try FileManager.default.contentsOfDirectory(atPath: runtime.path).isEmpty)
  }

  @Test(
    "another writer that may not write where the link leads (an enforcer's unit sees /run read-only) publishes beside the database, in the link's place",
    .enabled(if: Privilege.isRoot, Privilege.reason))
  func linkedDirectoryUnwritable() throws {
    let link = try publishedThroughLink("published-ro")
    let (runtime, location, target) = (link.runtime, link.location, link.target)
    // Immutable: not even root makes a file in it.
    try #require(try run("/usr/bin/chattr", ["+i", runtime.path]).status == 0, "chattr +i on \(runtime.path)")
    defer { _ = try? run("/usr/bin/chattr", ["-i", runtime.path]) }
    let other = try #require(try Store.open(location, intent: .write))
    try other.updateSession { $0.plan = .premium }
    #expect(linkTarget(file(location)) == nil, "a file in the link's place")
    #expect(PublishedState.load(location, sharingBootID: nil)?.session.record.plan == .premium)
    #expect(FileManager.default.fileExists(atPath: target), "the runtime copy is left to the recorder's next save")
  }

  @Test("a publishing directory others may write is not used: the state is published beside the database")
  func untrustedPublishingDirectory() throws {
    let directory = try TemporaryDirectory("published-untrusted")
    let runtime = try TemporaryDirectory("published-open")
    #expect(chmod(runtime.path, 0o777) == 0)
    let (location, writer) = try populated(directory)
    writer.publishingDirectory = runtime.path
    #expect(try writer.publishForReaders())
    #expect(linkTarget(file(location)) == nil)
    #expect(PublishedState.load(location, sharingBootID: nil) != nil)
    #expect(try FileManager.default.contentsOfDirectory(atPath: runtime.path).isEmpty)
  }

  @Test(
    "a link beside the database is followed on the same terms: to a file of another owner, or to a device, it is not believed",
    .enabled(if: Privilege.isRoot, Privilege.reason))
  func linkedFileIsJudged() throws {
    let link = try publishedThroughLink("published-linked")
    let (location, target) = (link.location, link.target)
    #expect(PublishedState.load(location, sharingBootID: nil) != nil)
    #expect(chown(target, 65534, 65534) == 0)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    #expect(unlink(file(location)) == 0)
    #expect(symlink("/dev/zero", file(location)) == 0)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
  }

  @Test(
    "a link beside the database to what is not a regular file (a FIFO, a device) is looked at, never opened: no device's open runs for a reader"
  )
  func linkedSpecialFileNeverOpened() throws {
    let directory = try TemporaryDirectory("published-fifo")
    let (location, _) = try populated(directory)
    let fifo = directory.file("planted")
    #expect(mkfifo(fifo, 0o644) == 0)
    #expect(symlink(fifo, file(location)) == 0)
    let watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
    try #require(watch >= 0)
    defer { close(watch) }
    try #require(inotify_add_watch(watch, fifo, UInt32(IN_OPEN)) >= 0)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = read(watch, &buffer, buffer.count)
    #expect(count == -1 && errno == EAGAIN, "the FIFO was opened")
  }

  @Test("a database replaced by another file at its path makes the published state stale")
  func replacedDatabase() throws {
    let directory = try TemporaryDirectory("published-replaced")
    let (location, writer) = try populated(directory)
    #expect(try writer.publishForReaders())
    let copy = directory.file("copy.db")
    try FileManager.default.copyItem(atPath: location.path, toPath: copy)
    #expect(rename(copy, location.path) == 0)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
  }
}
