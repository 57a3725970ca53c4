import VPNStatEngine
import VPNStatHTTP
import VPNStatKernel
import VPNStatModel
import VPNStatRender
import VPNStatStore
import VPNStatSystem
import VPNStatTLS

/// `vpnstat record`: the collector daemon that keeps the ledger and the traffic buckets.
enum RecordCommand: Subcommand {
  static let interval = Option.duration("interval", help: "Time between samples (default 5s).")
  static let count = Option.count("count", in: 1...1_000_000_000, help: "Stop after N samples (1 to 1000000000).")
  static let textfile = Option<String>(
    "textfile", valueName: "dir",
    help:
      "Also write DIR/vpnstat.prom for node_exporter's textfile collector (Prometheus text format), atomically, every interval.",
    expected: "a directory", values: .directory, parse: { $0.isEmpty ? nil : $0 })

  static let listen = Option<ListenAddress>(
    "listen", valueName: "address:port",
    help:
      "Also serve the metrics over HTTP on ADDRESS:PORT (e.g. 127.0.0.1:9586, [::1]:9586): GET /metrics, OpenMetrics or Prometheus text by the Accept header.",
    expected: "a numeric address and a port, such as 127.0.0.1:9586 or [::1]:9586",
    parse: ListenAddress.init(parsing:))

  static let webConfig = Option<String>(
    "web-config", valueName: "file", configurable: true,
    help:
      "TLS, client certificates, basic auth and headers for --listen, from Prometheus's web configuration file (node_exporter's --web.config.file).",
    expected: "a file", values: .file, parse: { $0.isEmpty ? nil : $0 })

  static let spec = CommandSpec(
    name: "record", abstract: "Record traffic into the database until stopped (the collector daemon).",
    discussion: """
      Samples every interval and on every link change, advances the ledger (totals bridged across
      counter resets and wraps) and the 5-minute, hourly, daily and monthly buckets in memory,
      and saves them every save interval — at once for a deleted interface's last counters, a new
      interface, a session window's change and on stopping. One recorder per database. Stops
      cleanly on SIGTERM, SIGINT or SIGHUP (with --web-config, SIGHUP reads that file again
      instead); after a kill -9 the next start books what the kernel
      counted since the last save, so only what a tunnel deleted meanwhile carried is lost.
      """,
    options: [
      interval.spec, CommonOptions.saveInterval.spec, count.spec, CommonOptions.interface.spec, CommonOptions.only.spec,
      CommonOptions.source.spec, CommonOptions.classOverride.spec, CommonOptions.db.spec, textfile.spec, listen.spec,
      webConfig.spec, CommonOptions.maxRate.spec,
      CommonOptions.sessionLength.spec, CommonOptions.pauseLength.spec, CommonOptions.sysfsRoot.spec,
    ])

  /// How long the loop's saves wait for another writer's lock before retrying at the next tick,
  /// so link notifications keep being read while the database is held.
  static let runningBusyTimeoutMilliseconds: Int32 = 250

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let location = CommandServices.storeLocation(parsed, context)
    let directory = parsed[textfile]
    if let directory {
      guard SmallFile.exists(SystemPath(directory)) else {
        throw GeneralFailure(.unavailable, "--textfile: no directory \(directory)")
      }
      if let problem = DirectoryTrust.problem(directory) {
        throw GeneralFailure(
          .noPermission, "--textfile: refusing to write in \(directory): \(problem); others could replace the file")
      }
      AtomicFile.removeLeftovers(of: "vpnstat.prom", in: directory)
    }
    var buffer = LinkNotifications.defaultReceiveBuffer
    if let text = context.environment("VPNSTAT_NOTIFICATION_BUFFER") {
      guard let size = parseSize(text), size >= 4096, size <= 1 << 30 else {
        throw UsageError(
          "VPNSTAT_NOTIFICATION_BUFFER: expected a size from 4KiB to 1GiB, got '\(TerminalText.sanitize(text))'")
      }
      buffer = Int32(size)
    }
    guard let store = try context.openStore(location, intent: .write, busyTimeoutMilliseconds: 5000) else {
      throw StoreError.unavailable(path: location.path, detail: "cannot create it")
    }
    let lock = try ProcessLock(path: location.lockPath("record"), role: "vpnstat record")
    store.setBusyTimeout(milliseconds: runningBusyTimeoutMilliseconds)
    // The unit's RuntimeDirectory= (tmpfs): what is published every save stays off the disk.
    store.publishingDirectory = context.environment("RUNTIME_DIRECTORY")?.split(separator: ":").first.map(String.init)
    let log = context.eventLog()
    var recorder = Recorder(
      sampler: CommandServices.sampler(parsed, context, recorded: CommandServices.selection(parsed)), store: store,
      textfileDirectory: directory, nextLengths: CommandServices.lengths(parsed),
      saveInterval: parsed[CommonOptions.saveInterval] ?? Recorder.defaultSaveInterval,
      lock: LedgerLockFile(location, role: "vpnstat record"), log: log)
    // The server runs on a thread of its own from the snapshots the loop publishes: no client
    // can hold up a sample.
    var stopServing: WakeUp?
    // The web configuration is --listen's (a recorder without a server reads none).
    let web = parsed[listen] == nil ? nil : try parsed[webConfig].map { try loadWebConfiguration($0, parsed) }
    // SIGHUP reads it again (renewed certificates, changed users) without closing the listener;
    // a file that no longer loads is said and the running settings kept.
    let updates = web == nil ? nil : try HTTPServerUpdates()
    var reload: (() -> Void)?
    if let updates, let path = parsed[webConfig] {
      reload = {
        do {
          let (tls, access) = try loadWebConfiguration(path, parsed)
          updates.offer(tls: tls, access: access)
          log.event("reloaded the web configuration \(TerminalText.sanitize(path))")
        } catch {
          log.event("the web configuration was not reloaded, the running one is kept: \(error)")
        }
      }
    }
    if let address = parsed[listen] {
      let listener = try ListeningSocket(address)
      // The page reloads about as often as there are new figures, and no more than every 5 s.
      let every = parsed[interval] ?? .seconds(5)
      let exposition = MetricsExposition(
        pageOptions: DisplayOptions(calendar: store.calendar),
        pageRefreshSeconds: Int(max(5, min(3600, (every.nanoseconds + 999_999_999) / 1_000_000_000))))
      let stop = try WakeUp()
      recorder.exposition = exposition
      try HTTPServerLoop.start(
        HTTPServer(
          listener: listener, responder: MetricsRoutes(exposition), clock: context.clock, tls: web?.tls,
          access: web?.access ?? HTTPAccess()), stop: stop, updates: updates,
        log: { [context] line in context.warn("metrics server: \(line)") })
      stopServing = stop
      log.event("serving metrics on \(web?.tls == nil ? "http" : "https")://\(listener.address)/metrics")
    }
    defer { stopServing?.signal() }
    try RecorderLoop.run(
      &recorder, interval: parsed[interval] ?? .seconds(5), count: parsed[count], notificationBuffer: buffer,
      supervisor: context.supervisor(), reload: reload)
    withExtendedLifetime(lock) {}
    return .success
  }

  /// The web configuration and the TLS context it describes; its problems as exit statuses
  /// (77 for a file others could write or a key others could read, 64 for one that is wrong).
  static func loadWebConfiguration(_ path: String, _ parsed: ParsedCommand) throws -> (
    tls: TLSServerContext?, access: HTTPAccess
  ) {
    let configuration: WebConfiguration
    do {
      configuration = try WebConfiguration.load(path)
    } catch {
      switch error {
      case .untrusted(let untrusted): throw untrusted
      case .invalid(let file, let problem):
        throw UsageError("--web-config \(TerminalText.sanitize(file)): \(problem)", commandPath: parsed.commandPath)
      case .unreadable(let file, let why):
        throw GeneralFailure(.unavailable, "--web-config: \(TerminalText.sanitize(file)): \(why)")
      }
    }
    var tls: TLSServerContext?
    if let settings = configuration.tls {
      do {
        tls = try TLSServerContext(settings)
      } catch {
        throw UsageError("--web-config \(TerminalText.sanitize(path)): \(error)", commandPath: parsed.commandPath)
      }
    }
    return (tls, HTTPAccess(users: configuration.users, headers: configuration.headers))
  }
}
