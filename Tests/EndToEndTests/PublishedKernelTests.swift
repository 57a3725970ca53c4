import Foundation
import Testing

@testable import VPNStatModel
@testable import VPNStatStore
@testable import VPNStatTestSupport

/// `status` and `export` of the built binary read what a real recorder published, and only while
/// it may be believed — in a namespace, with bytes moved through a real tun.
@Suite(.enabled(if: Privilege.isRoot, Privilege.reason))
struct PublishedKernelTests {
  @Test(
    "after record, status and export read DB.published (a planted plan shows); others able to write it, SQLite's figures: the same totals"
  )
  func readsWhatWasPublished() throws {
    let ns = try TestNamespace("pub")
    let directory = try TemporaryDirectory("pub")
    let db = directory.file("v.db")
    let published = db + ".published"
    let owner = try ns.echoTunnel("tun47", local: "169.254.47.1", peer: "169.254.47.2")
    defer { owner.stop() }
    #expect(try ns.vpnstat("record", "--count", "1", "--db", db).status == 0)
    try ns.peerRun("udp-send", "169.254.47.2", "9700", "200", "900", "--gap-us", "200")
    let second = try ns.vpnstat("record", "--count", "1", "--db", db)
    #expect(second.status == 0, "\(second.errors)")
    let mode = try FileManager.default.attributesOfItem(atPath: published)[.posixPermissions] as? Int
    #expect(mode == 0o644, "the database's mode")
    func totals() throws -> (UInt64, UInt64, String?) {
      let status = try parseStatus(try ns.vpnstat("status", "--json", "--db", db, "-i", "tun47"))
      let tun = try #require(interface(status, named: "tun47"))
      let session = status["session"] as? [String: Any]
      return (
        try #require(uint(tun["total_rx_bytes"])), try #require(uint(tun["total_tx_bytes"])),
        session?["plan"] as? String
      )
    }
    let fromFile = try totals()
    #expect(fromFile.1 > 150_000, "the datagrams sent are in the totals: \(fromFile)")
    #expect(chmod(published, 0o664) == 0)
    let fromDatabase = try totals()
    #expect(fromFile == fromDatabase)
    // A published state of the database's stamp, with a plan the database does not have: the
    // binary shows it, so it read the file; writable by others, it reads the database again.
    let location = StoreLocation(path: db)
    let store = try #require(try Store.open(location, intent: .read))
    var session = try store.storedSession()
    #expect(session.record.plan == .free)
    session.record.plan = .premium
    let stamp = try #require(StoreStamp.read(database: db))
    let planted = PublishedState.encode(
      stamp: stamp, session: session, health: StoreHealth(), ledger: try store.loadLedger())
    try FileManager.default.removeItem(atPath: published)
    try Data(planted).write(to: URL(fileURLWithPath: published))
    #expect(chmod(published, 0o644) == 0)
    #expect(try totals().2 == "premium")
    let export = try ns.vpnstat("export", "--db", db)
    #expect(
      export.output.contains("vpnstat_session_state{vpnstat_session_state=\"unlimited\"} 1"),
      "\(export.output.prefix(3000))")
    #expect(chmod(published, 0o646) == 0)
    #expect(try totals().2 == "free")
  }

  @Test(
    "a recorder run as its unit runs it (RUNTIME_DIRECTORY) publishes into it while it records, and on its disk when it stops: after the runtime directory is gone, as after a reboot, status reads the file, not SQLite"
  )
  func stoppedRecorderLeavesItOnDisk() throws {
    let ns = try TestNamespace("pubstop")
    let directory = try TemporaryDirectory("pubstop")
    let runtime = try TemporaryDirectory("pubstop-run")
    let db = directory.file("v.db")
    let published = db + ".published"
    let owner = try ns.echoTunnel("tun48", local: "169.254.48.1", peer: "169.254.48.2")
    defer { owner.stop() }
    // Its first save (a new interface is saved at once) publishes into the runtime directory.
    let record = try ns.vpnstat(
      ["record", "--count", "2", "--interval", "1s", "--db", db],
      environment: ["RUNTIME_DIRECTORY": runtime.path])
    #expect(record.status == 0, "\(record.errors)")
    let kind = try FileManager.default.attributesOfItem(atPath: published)[.type] as? FileAttributeType
    #expect(kind == .typeRegular, "the last publish is a file beside the database, not a link")
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: runtime.path).isEmpty,
      "the runtime directory's copy is removed with the link to it")
    #expect(rmdir(runtime.path) == 0)
    let location = StoreLocation(path: db)
    let state = try #require(PublishedState.load(location, sharingBootID: nil), "believed: its stamp is the file's")
    let reader = try #require(try Store.open(location, intent: .read))
    #expect(state.ledger.entries == (try reader.loadLedger().entries))
    let status = try ns.vpnstat("status", "--json", "--db", db, "-i", "tun48")
    #expect(status.status == 0, "\(status.errors)")
    #expect(interface(try parseStatus(status), named: "tun48") != nil)
  }

  @Test(
    "after record, `plan premium`, `session reset` and `plan --data-cap` of the built binary publish their change again: status reads it from the file, with the recorder's ledger; another program's commit makes it stale"
  )
  func otherWritersPublishAgain() throws {
    let ns = try TestNamespace("pubplan")
    let directory = try TemporaryDirectory("pubplan")
    let db = directory.file("v.db")
    let location = StoreLocation(path: db)
    #expect(try ns.vpnstat("record", "--count", "1", "--db", db).status == 0)
    let recorded = try #require(PublishedState.load(location, sharingBootID: nil))
    for command in [["plan", "premium"], ["session", "reset"], ["plan", "free"]] {
      let run = try ns.vpnstat(command + ["--db", db])
      #expect(run.status == 0, "\(command): \(run.errors)")
      let state = try #require(PublishedState.load(location, sharingBootID: nil), "\(command): published again")
      #expect(state.ledger.entries == recorded.ledger.entries)
      let reader = try #require(try Store.open(location, intent: .read))
      #expect(state.session == (try reader.storedSession()), "\(command)")
    }
    let session = try parseStatus(try ns.vpnstat("status", "--json", "--db", db))["session"] as? [String: Any]
    #expect(session?["plan"] as? String == "free")
    // A data cap is published with its period's usage: status shows it from the file.
    #expect(try ns.vpnstat("plan", "--data-cap", "1GiB", "--per", "day", "--db", db).status == 0)
    let capped = try #require(PublishedState.load(location, sharingBootID: nil), "a capped session is published")
    #expect(capped.session.record.dataCap?.limitBytes == 1 << 30 && capped.capUsage != nil)
    let cap =
      (try parseStatus(try ns.vpnstat("status", "--json", "--db", db))["session"] as? [String: Any])?[
        "data_cap"] as? [String: Any]
    #expect(uint(cap?["limit_bytes"]) == 1 << 30, "\(String(describing: cap))")
    let connection = try SQLiteConnection(uri: "file:" + db, readOnly: false, create: false)
    try connection.execute("UPDATE session SET plan = 'premium'")
    #expect(PublishedState.load(location, sharingBootID: nil) == nil)
    #expect(try ns.vpnstat("plan", "free", "--db", db).status == 0)
    #expect(PublishedState.load(location, sharingBootID: nil) == nil, "stale before, not published over")
  }
}
