import VPNStatModel

/// Metrics for fleets: per-interface and per-class counters from the ledger (bridged across
/// resets, so they only grow) and the session window's gauges, as OpenMetrics text (`export`,
/// a scrape) or the older Prometheus text format that node_exporter's textfile collector reads.
package enum OpenMetrics {
  package enum Format: String, Sendable, CaseIterable {
    /// OpenMetrics 1.0: `_total` and `_created` samples, `# UNIT`, `# EOF`.
    case openmetrics
    /// Prometheus text format 0.0.4, for node_exporter's textfile collector.
    case prometheus
  }

  /// The exposition of `ledger` (and `session` and the database's `health`, when known) at
  /// `time`, as bytes. One pass over the ledger into one buffer sized up front: each interface's
  /// label and creation time are made once (not once per metric), and a name is escaped only when
  /// it holds something that needs it — most names are plain ASCII and are copied as they are.
  package static func render(
    ledger: Ledger, session: SessionReport?, health: StoreHealth? = nil, at time: Timestamp,
    format: Format = .openmetrics
  ) -> [UInt8] {
    exposition(ledger: ledger, session: session, health: health, at: time, format: format).bytes.array
  }

  /// The same exposition handed to `output` in pieces of about `MetricsText.piece` bytes as it
  /// is written, from one buffer used again for each: what a one-off `export` prints. A thousand
  /// interfaces make over a megabyte, which built whole would be that much fresh memory.
  package static func write(
    ledger: Ledger, session: SessionReport?, health: StoreHealth? = nil, at time: Timestamp,
    format: Format = .openmetrics, to output: (UnsafeRawBufferPointer) -> Void
  ) {
    withoutActuallyEscaping(output) { output in
      var out = exposition(ledger: ledger, session: session, health: health, at: time, format: format, sink: output)
      out.bytes.drain(output)
    }
  }

  static func exposition(
    ledger: Ledger, session: SessionReport?, health: StoreHealth?, at time: Timestamp, format: Format,
    sink: ((UnsafeRawBufferPointer) -> Void)? = nil
  ) -> MetricsText {
    let entries = ledger.entries.values
    let whole = 4096 + entries.count * (format == .openmetrics ? 1700 : 900)
    var out = MetricsText(format: format, capacity: sink == nil ? whole : min(whole, MetricsText.piece * 2))
    out.sink = sink
    writeLedger(entries, into: &out)
    if let session { writeSession(session, into: &out) }
    if let health {
      out.family(
        "vpnstat_notification_overflows", .counter,
        help:
          "Times the kernel dropped link notifications because a recorder fell behind: traffic of links deleted meanwhile is missing."
      )
      out.sample("vpnstat_notification_overflows", .counter, labels: [], value: health.notificationOverflows)
    }
    out.family(
      "vpnstat_scrape_timestamp_seconds", .gauge, unit: "seconds", help: "When vpnstat produced these figures.")
    out.sample("vpnstat_scrape_timestamp_seconds", .gauge, labels: [], seconds: time)
    if format == .openmetrics { out.bytes.append("# EOF\n") }
    return out
  }

  /// The per-interface counters in name order, then the per-class ones.
  static func writeLedger(_ entries: [LedgerEntry], into out: inout MetricsText) {
    // The order, not the entries in it: a sorted copy was 170 KB of fresh pages at 1000
    // interfaces, faulted in one by one (`docs/performance.md`).
    writeInterfaceCounters(entries, order: Ledger.nameOrder(entries), into: &out)
    writeClassCounters(entries, into: &out)
  }

  /// The seven counters of every interface, in `order` (positions in `entries`), `_created`
  /// with each in OpenMetrics.
  static func writeInterfaceCounters(_ entries: [LedgerEntry], order: [Int], into out: inout MetricsText) {
    // `{interface="…",class="…"} ` and the `_created` line's end of each entry, made once for
    // all seven metrics, into one buffer each (offsets mark the entries), and the totals as
    // plain values: the loops below then touch no reference-counted storage, and a line pair is
    // four copies, a number and a newline.
    let labels = EntryLabels(entries, order: order, created: out.format == .openmetrics)
    let totals = order.map { entries[$0].totals }
    labels.labels.withBytes { labelBytes in
      labels.created.withBytes { createdBytes in
        for (metric, family) in interfaceFamilies.enumerated() {
          out.family(family.name, .counter, unit: family.unit, help: family.help)
          let sampleName = out.sampleName(family.name, .counter)
          // Without `_created` lines (the Prometheus format), no name for them.
          let createdName = out.format == .openmetrics ? Array((family.name + "_created").utf8) : []
          var labelStart = 0
          var createdStart = 0
          sampleName.withUnsafeBufferPointer { sampleName in
            createdName.withUnsafeBufferPointer { createdName in
              for i in totals.indices {
                let label = UnsafeBufferPointer(rebasing: labelBytes[labelStart..<labels.labelEnds[i]])
                let created =
                  createdName.isEmpty
                  ? UnsafeBufferPointer(rebasing: createdBytes[0..<0])
                  : UnsafeBufferPointer(rebasing: createdBytes[createdStart..<labels.createdEnds[i]])
                let value = interfaceValue(metric, of: totals[i])
                // The sample and its `_created` line in one reservation: some fourteen thousand
                // lines at 1000 interfaces, and five checks of the buffer for each pair.
                let most = sampleName.count + label.count + createdName.count + created.count + 1
                out.bytes.append(atMost: most + OutputBytes.maximumDigits) { at in
                  var written = OutputBytes.copy(sampleName, to: at)
                  written += OutputBytes.copy(label, to: at + written)
                  written += OutputBytes.decimal(value, at: at + written)
                  at[written] = 0x0A
                  written += 1
                  written += OutputBytes.copy(createdName, to: at + written)
                  return written + OutputBytes.copy(created, to: at + written)
                }
                labelStart = labels.labelEnds[i]
                if !createdName.isEmpty { createdStart = labels.createdEnds[i] }
                out.passOnIfFull()
              }
            }
          }
        }
      }
    }
  }

  /// Each entry's label set as a sample's name is followed (`{interface="…",class="…"} `) and,
  /// for OpenMetrics, what follows a `_created` line's name (the same, the creation time and a
  /// newline: alike in all seven families), written once into one buffer each; the offsets
  /// where each entry's ends.
  struct EntryLabels {
    var labels: OutputBytes
    var created: OutputBytes
    var labelEnds: [Int] = []
    var createdEnds: [Int] = []

    init(_ entries: [LedgerEntry], order: [Int], created withCreated: Bool) {
      labels = OutputBytes(capacity: entries.count * 48)
      created = OutputBytes(capacity: withCreated ? entries.count * 64 : 0)
      labelEnds.reserveCapacity(entries.count)
      if withCreated { createdEnds.reserveCapacity(entries.count) }
      // By index: `for entry in` copies each entry, a retain and a release of all it holds.
      for i in order {
        let start = labels.count
        labels.append("{interface=\"")
        OpenMetrics.appendLabel(entries[i].name, to: &labels)
        labels.append("\",class=\"")
        labels.append(entries[i].interfaceClass.word)
        labels.append("\"} ")
        labelEnds.append(labels.count)
        guard withCreated else { continue }
        labels.withBytes { created.append(UnsafeBufferPointer(rebasing: $0[start...])) }
        MetricsText.appendSeconds(entries[i].totals.firstSeenAt, to: &created)
        created.append(0x0A)
        createdEnds.append(created.count)
      }
    }
  }

  /// The per-interface families, in the order written; `interfaceValue` reads each one's value.
  static let interfaceFamilies: [(name: String, unit: String?, help: String)] = [
    (
      "vpnstat_interface_receive_bytes", "bytes",
      "Bytes received, bridged across counter resets and wraps (estimate)."
    ),
    (
      "vpnstat_interface_transmit_bytes", "bytes",
      "Bytes transmitted, bridged across counter resets and wraps (estimate)."
    ),
    ("vpnstat_interface_receive_packets", nil, "Packets received (estimate)."),
    ("vpnstat_interface_transmit_packets", nil, "Packets transmitted (estimate)."),
    ("vpnstat_interface_resets", nil, "Counter resets bridged (interface recreated or rebooted)."),
    ("vpnstat_interface_wraps", nil, "32-bit counter wraps bridged."),
    ("vpnstat_interface_discarded", nil, "Samples discarded as faster than plausible."),
  ]

  /// The value of the family at `metric` in `interfaceFamilies`.
  @inline(__always)
  static func interfaceValue(_ metric: Int, of totals: LedgerTotals) -> UInt64 {
    switch metric {
    case 0: totals.traffic.rxBytes
    case 1: totals.traffic.txBytes
    case 2: totals.traffic.rxPackets
    case 3: totals.traffic.txPackets
    case 4: totals.resets
    case 5: totals.wraps
    default: totals.discarded
    }
  }

  /// The bytes of each class, summed over its interfaces.
  static func writeClassCounters(_ entries: [LedgerEntry], into out: inout MetricsText) {
    // By position in allCases: the first [InterfaceClass: …] table of a process makes the runtime
    // scan every conformance in the program (~160,000 instructions, an eighth of an export).
    let allClasses = InterfaceClass.allCases
    var sums = [LedgerTotals?](repeating: nil, count: allClasses.count)
    for i in entries.indices {
      guard let at = allClasses.firstIndex(of: entries[i].interfaceClass) else { continue }
      let totals = entries[i].totals
      sums[at] = sums[at].map { $0 + totals } ?? totals
    }
    for (name, help, receive) in [
      ("vpnstat_class_receive_bytes", "Bytes received by all interfaces of a class (estimate).", true),
      ("vpnstat_class_transmit_bytes", "Bytes transmitted by all interfaces of a class (estimate).", false),
    ] {
      out.family(name, .counter, unit: "bytes", help: help)
      for (at, interfaceClass) in allClasses.enumerated() {
        guard let totals = sums[at] else { continue }
        out.sample(
          name, .counter, labels: Array("class=\"\(interfaceClass.rawValue)\"".utf8),
          value: receive ? totals.traffic.rxBytes : totals.traffic.txBytes, created: totals.firstSeenAt)
      }
    }
  }

  static func writeSession(_ report: SessionReport, into out: inout MetricsText) {
    out.family("vpnstat_session_state", .stateset, help: "The free plan's session state.")
    for state in SessionState.allCases {
      out.sample(
        "vpnstat_session_state", .stateset, labels: Array("vpnstat_session_state=\"\(state.rawValue)\"".utf8),
        value: report.state == state ? 1 : 0)
    }
    out.family("vpnstat_session_can_connect", .gauge, help: "1 when connecting is allowed now.")
    out.sample("vpnstat_session_can_connect", .gauge, labels: [], value: report.canConnect ? 1 : 0)
    out.family(
      "vpnstat_session_enforcer_running", .gauge,
      help: "1 when an enforcer runs for the free plan (without one nothing disconnects).")
    out.sample("vpnstat_session_enforcer_running", .gauge, labels: [], value: report.enforcer != nil ? 1 : 0)
    out.family(
      "vpnstat_session_remaining_seconds", .gauge, unit: "seconds", help: "Session time left (0 when not active).")
    out.sample(
      "vpnstat_session_remaining_seconds", .gauge, labels: [],
      value: UInt64(report.remaining.map(SessionText.seconds) ?? 0))
    out.family(
      "vpnstat_session_pause_remaining_seconds", .gauge, unit: "seconds",
      help: "Time until reconnecting is allowed (0 when it is).")
    out.sample(
      "vpnstat_session_pause_remaining_seconds", .gauge, labels: [],
      value: UInt64(report.pauseRemaining.map(SessionText.seconds) ?? 0))
    if let usage = report.usage {
      out.family(
        "vpnstat_session_usage_bytes", .gauge, unit: "bytes",
        help: "Tunnel-class traffic in the current window (estimate).")
      out.sample(
        "vpnstat_session_usage_bytes", .gauge, labels: Array("direction=\"receive\"".utf8), value: usage.rxBytes)
      out.sample(
        "vpnstat_session_usage_bytes", .gauge, labels: Array("direction=\"transmit\"".utf8), value: usage.txBytes)
    }
    if let cap = report.dataCap {
      let period = Array("period=\"\(cap.cap.period.length.rawValue)\"".utf8)
      out.family(
        "vpnstat_data_cap_limit_bytes", .gauge, unit: "bytes",
        help: "The data cap: tunnel-class bytes allowed per period, both directions.")
      out.sample("vpnstat_data_cap_limit_bytes", .gauge, labels: period, value: cap.cap.limitBytes)
      out.family(
        "vpnstat_data_cap_used_bytes", .gauge, unit: "bytes",
        help: "Tunnel-class bytes in the cap's current period, both directions (estimate).")
      out.sample("vpnstat_data_cap_used_bytes", .gauge, labels: period, value: cap.usedBytes)
      out.family("vpnstat_data_cap_reached", .gauge, help: "1 when the data cap is reached: connecting is refused.")
      out.sample("vpnstat_data_cap_reached", .gauge, labels: [], value: cap.reached ? 1 : 0)
    }
  }

  /// Appends a label value for `name` (see `label(_:)`): the name's own bytes when they are
  /// printable ASCII without a backslash or a quote (which both forms keep as they are), else
  /// the escaped form.
  static func appendLabel(_ name: InterfaceName, to out: inout OutputBytes) {
    // The bytes where they lie: `name.bytes` makes an array of them each time it is asked.
    let plain = name.withBytes { bytes in
      guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F && $0 != 0x5C && $0 != 0x22 }) else { return false }
      bytes.withMemoryRebound(to: UInt8.self) { out.append($0) }
      return true
    }
    if !plain { out.append(label(name)) }
  }

  /// A label value: the name as vpnstat shows it everywhere (`terminalText`: clean UTF-8 as
  /// itself, a backslash as `\\`, anything else as `\xHH`), then the format's own escapes for
  /// backslash, quote and newline. The shown form is lossless, so two names never share a label
  /// value (duplicate series make a scraper reject the whole exposition): the bytes 01 02 read
  /// `\x01\x02` and the eight characters `\x01\x02` read `\\x01\\x02`.
  static func label(_ name: InterfaceName) -> String {
    var out = ""
    for character in name.terminalText.unicodeScalars {
      switch character {
      case "\\": out += "\\\\"
      case "\"": out += "\\\""
      case "\n": out += "\\n"
      default: out.unicodeScalars.append(character)
      }
    }
    return out
  }
}

/// The exposition as it is written: families (their `# TYPE`, `# UNIT`, `# HELP` lines in the
/// format's order) and samples, appended to one byte buffer.
struct MetricsText {
  enum Kind: String {
    case counter, gauge, stateset
  }

  let format: OpenMetrics.Format
  var bytes: OutputBytes
  /// Where the bytes go as they are written, if anywhere before the end.
  var sink: ((UnsafeRawBufferPointer) -> Void)?

  /// How much is handed to the sink at a time.
  static let piece = 64 * 1024

  init(format: OpenMetrics.Format, capacity: Int) {
    self.format = format
    bytes = OutputBytes(capacity: capacity)
  }

  /// Hands what is written to the sink once there is a piece of it, and reuses the buffer. The
  /// count first: `let sink` copies the closure (a retain and a release of its context), and
  /// this runs for every line.
  @inline(__always)
  mutating func passOnIfFull() {
    if bytes.count >= Self.piece, let sink { bytes.drain(sink) }
  }

  /// The name a family's samples carry: counters end in `_total`.
  func sampleName(_ family: String, _ kind: Kind) -> [UInt8] {
    Array((kind == .counter ? family + "_total" : family).utf8)
  }

  /// The lines that open a family. The Prometheus 0.0.4 format names the family by its sample,
  /// has no units, and knows no stateset (a gauge per state).
  mutating func family(_ name: String, _ kind: Kind, unit: String? = nil, help: String) {
    switch format {
    case .openmetrics:
      bytes.append("# TYPE \(name) \(kind.rawValue)\n")
      if let unit { bytes.append("# UNIT \(name) \(unit)\n") }
      bytes.append("# HELP \(name) \(help)\n")
    case .prometheus:
      let sample = kind == .counter ? name + "_total" : name
      bytes.append("# HELP \(sample) \(help)\n")
      bytes.append("# TYPE \(sample) \(kind == .counter ? "counter" : "gauge")\n")
    }
  }

  /// One sample of a family with a count for its value (and, for an OpenMetrics counter with a
  /// creation time, its `_created` sample).
  mutating func sample(_ family: String, _ kind: Kind, labels: [UInt8], value: UInt64, created: Timestamp? = nil) {
    begin(sampleName(family, kind), labels: labels)
    bytes.appendDecimal(value)
    bytes.append(0x0A)
    if format == .openmetrics, kind == .counter, let created {
      begin(Array((family + "_created").utf8), labels: labels)
      Self.appendSeconds(created, to: &bytes)
      bytes.append(0x0A)
    }
  }

  /// One sample with a time for its value.
  mutating func sample(_ family: String, _ kind: Kind, labels: [UInt8], seconds: Timestamp) {
    begin(sampleName(family, kind), labels: labels)
    Self.appendSeconds(seconds, to: &bytes)
    bytes.append(0x0A)
  }

  /// `name{labels} ` (no braces without labels): what precedes a sample's value.
  mutating func begin(_ name: [UInt8], labels: [UInt8]) {
    labels.withUnsafeBufferPointer { begin(name, labels: $0) }
  }

  /// In one reservation of the output: a sample's beginning is written some ten thousand times
  /// an exposition at 1000 interfaces, and a capacity check per piece was most of its cost.
  mutating func begin(_ name: [UInt8], labels: UnsafeBufferPointer<UInt8>) {
    name.withUnsafeBufferPointer { name in
      bytes.append(atMost: name.count + labels.count + 3) { Self.begin(name, labels: labels, at: $0) }
    }
  }

  /// Writes `name{labels} ` at `at`, which has room for both and 3 bytes more; returns how many
  /// bytes it wrote.
  @inline(__always)
  static func begin(
    _ name: UnsafeBufferPointer<UInt8>, labels: UnsafeBufferPointer<UInt8>, at: UnsafeMutablePointer<UInt8>
  ) -> Int {
    var written = OutputBytes.copy(name, to: at)
    if labels.count > 0 {
      at[written] = 0x7B
      written += 1 + OutputBytes.copy(labels, to: at + written + 1)
      at[written] = 0x7D
      written += 1
    }
    at[written] = 0x20
    return written + 1
  }

  /// Unix seconds with milliseconds: `1800000000.123`.
  static func appendSeconds(_ time: Timestamp, to bytes: inout OutputBytes) {
    let whole = time.seconds
    // The remainder, not nanoseconds − whole × 10⁹, which overflows near Int64.min.
    let millis = (time.nanoseconds % 1_000_000_000 + 1_000_000_000) % 1_000_000_000 / 1_000_000
    // In one reservation: a sign, the seconds, the point and three digits.
    bytes.append(atMost: OutputBytes.maximumDigits + 5) { at in
      var written = 0
      if whole < 0 {
        at[0] = 0x2D
        written = 1
      }
      written += OutputBytes.decimal(whole.magnitude, at: at + written)
      at[written] = 0x2E
      at[written + 1] = 0x30 + UInt8(millis / 100)
      at[written + 2] = 0x30 + UInt8(millis / 10 % 10)
      at[written + 3] = 0x30 + UInt8(millis % 10)
      return written + 4
    }
  }
}
