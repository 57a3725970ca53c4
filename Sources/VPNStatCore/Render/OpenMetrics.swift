#if canImport(Glibc)
  import Glibc
#endif

/// OpenMetrics text for fleets: per-interface and per-class counters from the ledger (bridged
/// across resets, so Prometheus sees them only grow), and the session's gauges.
public enum OpenMetrics {
  /// The exposition of `ledger` (and `session`, when known) at `time`.
  public static func render(ledger: Ledger, session: SessionReport?, at time: Timestamp) -> String {
    var out = ""
    out.reserveCapacity(256 + ledger.entries.count * 900)
    let entries = ledger.entries.values.sorted { $0.name < $1.name }
    let families: [(String, String, String, (LedgerTotals) -> UInt64)] = [
      ("vpnstat_interface_receive_bytes", "bytes", "Bytes received, bridged across counter resets and wraps (estimate).", \.rxBytes),
      ("vpnstat_interface_transmit_bytes", "bytes", "Bytes transmitted, bridged across counter resets and wraps (estimate).", \.txBytes),
      ("vpnstat_interface_receive_packets", "", "Packets received (estimate).", \.rxPackets),
      ("vpnstat_interface_transmit_packets", "", "Packets transmitted (estimate).", \.txPackets),
      ("vpnstat_interface_resets", "", "Counter resets bridged (interface recreated, rebooted or cleared).", \.resets),
      ("vpnstat_interface_wraps", "", "32-bit counter wraps bridged.", \.wraps),
      ("vpnstat_interface_discarded", "", "Samples discarded as faster than plausible.", \.discarded),
    ]
    for (name, unit, help, value) in families {
      out += "# TYPE \(name) counter\n"
      if !unit.isEmpty { out += "# UNIT \(name) \(unit)\n" }
      out += "# HELP \(name) \(help)\n"
      for entry in entries {
        let labels = "{interface=\"\(label(entry.name))\",class=\"\(entry.interfaceClass.rawValue)\"}"
        out += "\(name)_total\(labels) \(value(entry.totals))\n"
        out += "\(name)_created\(labels) \(seconds(entry.totals.firstSeenAt))\n"
      }
    }
    var classes: [InterfaceClass: LedgerTotals] = [:]
    for entry in entries {
      var sum = classes[entry.interfaceClass] ?? LedgerTotals(firstSeenAt: entry.totals.firstSeenAt)
      sum.rxBytes &+= entry.totals.rxBytes
      sum.txBytes &+= entry.totals.txBytes
      sum.firstSeenAt = min(sum.firstSeenAt, entry.totals.firstSeenAt)
      classes[entry.interfaceClass] = sum
    }
    for (name, help, value) in [
      ("vpnstat_class_receive_bytes", "Bytes received by all interfaces of a class (estimate).", \LedgerTotals.rxBytes),
      ("vpnstat_class_transmit_bytes", "Bytes transmitted by all interfaces of a class (estimate).", \LedgerTotals.txBytes),
    ] {
      out += "# TYPE \(name) counter\n# UNIT \(name) bytes\n# HELP \(name) \(help)\n"
      for interfaceClass in InterfaceClass.allCases {
        guard let sum = classes[interfaceClass] else { continue }
        out += "\(name)_total{class=\"\(interfaceClass.rawValue)\"} \(sum[keyPath: value])\n"
      }
    }
    if let session { out += SessionMetrics.render(session) }
    out += "# TYPE vpnstat_scrape_timestamp_seconds gauge\n# UNIT vpnstat_scrape_timestamp_seconds seconds\n"
    out += "# HELP vpnstat_scrape_timestamp_seconds When vpnstat produced these figures.\n"
    out += "vpnstat_scrape_timestamp_seconds \(seconds(time))\n"
    out += "# EOF\n"
    return out
  }

  /// A label value: the name as UTF-8 text when it is clean, else vpnstat's escaped form; then
  /// OpenMetrics' own escapes for backslash, quote and newline.
  static func label(_ name: InterfaceName) -> String {
    let text: String
    if let utf8 = String(validating: name.bytes, as: UTF8.self),
      !utf8.unicodeScalars.contains(where: TerminalText.isUnsafe)
    {
      text = utf8
    } else {
      text = name.escaped
    }
    var out = ""
    for character in text.unicodeScalars {
      switch character {
      case "\\": out += "\\\\"
      case "\"": out += "\\\""
      case "\n": out += "\\n"
      default: out.unicodeScalars.append(character)
      }
    }
    return out
  }

  static func seconds(_ time: Timestamp) -> String {
    let whole = time.seconds
    let millis = (time.nanoseconds - whole * 1_000_000_000) / 1_000_000
    return "\(whole).\(millis < 10 ? "00" : millis < 100 ? "0" : "")\(millis)"
  }

  /// Writes `text` as `vpnstat.prom` in `directory` atomically (a temporary file renamed over
  /// it), as node_exporter's textfile collector requires.
  public static func writeTextfile(_ text: String, directory: String) throws {
    let final = directory + "/vpnstat.prom"
    let temporary = directory + "/.vpnstat.prom.\(getpid()).tmp"
    do {
      let fd = try FileDescriptor.open(temporary, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
      do {
        try fd.writeAll(text)
        fd.close()
      } catch {
        fd.close()
        throw error
      }
      guard rename(temporary, final) == 0 else { throw Errno.current }
    } catch let error as Errno {
      unlink(temporary)
      throw GeneralFailure(
        error.meansNotPermitted ? .noPermission : .ioError, "cannot write \(final): \(error)")
    }
  }
}

