import VPNStatCore

/// `vpnstat record`: the collector daemon that keeps the ledger and the traffic buckets.
enum RecordCommand: Subcommand {
  static let spec = CommandSpec(
    name: "record", abstract: "Record traffic into the database until stopped (the collector daemon).",
    discussion: """
      Samples every interval and on every link change, advances the ledger (totals bridged across
      counter resets and wraps) and the 5-minute, hourly, daily and monthly buckets. One recorder
      per database. Stops cleanly on SIGTERM, SIGINT or SIGHUP; after a kill -9 the next sample
      bridges from the last one stored, so only what a tunnel deleted meanwhile carried is lost.
      """,
    options: [
      OptionSpec.duration(
        "interval", help: "Time between samples (default 5s)."),
      OptionSpec("count", .value("n"), help: "Stop after N samples.", accepts: { parsePositiveInt($0) != nil }),
      CommonOptions.interface, CommonOptions.only, CommonOptions.source, CommonOptions.classOverride,
      CommonOptions.db,
      OptionSpec(
        "textfile", .value("dir"),
        help:
          "Also write DIR/vpnstat.prom for node_exporter's textfile collector (Prometheus text format), atomically, every interval."
      ),
      CommonOptions.maxRate, CommonOptions.sessionLength, CommonOptions.pauseLength, CommonOptions.sysfsRoot,
    ])

  struct StandardErrorLog: RecorderLog {
    let context: CommandContext
    func event(_ line: String) { context.warn(line) }
  }

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let interval = try parsed.value("interval", expected: "a duration such as 5s or 1m", parseDuration) ?? .seconds(5)
    let count = try parsed.value("count", expected: "a positive number", parsePositiveInt)
    let location = CommonOptions.storeLocation(parsed, context)
    if let directory = parsed.value("textfile") {
      guard SmallFile.exists(SystemPath(directory)) else {
        throw GeneralFailure(.unavailable, "--textfile: no directory \(directory)")
      }
      if let problem = DirectoryTrust.problem(directory) {
        throw GeneralFailure(
          .noPermission, "--textfile: refusing to write in \(directory): \(problem); others could replace the file")
      }
      AtomicFile.removeLeftovers(of: "vpnstat.prom", in: directory)
    }
    guard let store = try Store.open(location, intent: .write, busyTimeoutMilliseconds: 5000) else {
      throw StoreError.unavailable(path: location.path, detail: "cannot create it")
    }
    let lock = try ProcessLock(path: location.lockPath("record"), role: "vpnstat record")
    // Saves in the loop wait briefly for another writer's lock, then retry at the next tick, so
    // link notifications keep being read while the database is held.
    store.setBusyTimeout(milliseconds: 250)
    var recorder = Recorder(
      sampler: try CommonOptions.sampler(parsed, recorded: try CommonOptions.selection(parsed)),
      store: store, interval: interval, count: count, textfileDirectory: parsed.value("textfile"),
      nextLengths: try CommonOptions.lengths(parsed), log: StandardErrorLog(context: context))
    if let text = context.environment("VPNSTAT_NOTIFICATION_BUFFER") {
      guard let size = parseSize(text), size >= 4096, size <= 1 << 30 else {
        throw UsageError(
          "VPNSTAT_NOTIFICATION_BUFFER: expected a size from 4KiB to 1GiB, got '\(TerminalText.sanitize(text))'")
      }
      recorder.notificationBuffer = Int32(size)
    }
    try recorder.run()
    withExtendedLifetime(lock) {}
    return .success
  }
}

/// `vpnstat export`: the ledger as OpenMetrics text, for a scrape or a one-off.
enum ExportCommand: Subcommand {
  static let spec = CommandSpec(
    name: "export",
    abstract: "Print metrics: per interface and class, and the session window (OpenMetrics by default).",
    options: [
      OptionSpec(
        "format", .value("format"), help: "openmetrics (default) or prometheus (the text format node_exporter reads).",
        accepts: { OpenMetrics.Format(rawValue: $0) != nil }),
      CommonOptions.source, CommonOptions.classOverride, CommonOptions.db, CommonOptions.maxRate,
      CommonOptions.sessionLength, CommonOptions.pauseLength, CommonOptions.sysfsRoot,
    ])

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    var sampler = try CommonOptions.sampler(parsed)
    let location = CommonOptions.storeLocation(parsed, context)
    let format =
      try parsed.value("format", expected: "openmetrics or prometheus", OpenMetrics.Format.init(rawValue:))
      ?? .openmetrics
    let store = try Store.open(location, intent: .read)
    var (sample, ledger, warnings) = try CommonOptions.sample(&sampler, store: store)
    if ledger == nil {
      // No database: the kernel's counters of the current instances, which Prometheus' rate()
      // handles across resets the way it handles any counter reset.
      ledger = Ledger(kernelCountersOf: sampler.observations(sample))
      warnings.append("no database at \(location.path): exporting the kernel's counters of the current instances")
    }
    for warning in warnings { context.warn(warning) }
    let session = try CommonOptions.sessionReport(store, parsed, sampler: &sampler, sample: sample, ledger: ledger)
    try context.write(
      OpenMetrics.render(
        ledger: ledger ?? Ledger(), session: session, health: try store?.health(), at: sample.taken.wall,
        format: format))
    return .success
  }
}
