import VPNStatModel

@testable import VPNStatRender

/// The OpenMetrics renderer as it was before it wrote bytes in one pass (commit 9c96f2a, with the
/// data cap families main added since, as of 5cfcad2), kept verbatim as the reference the
/// current one must equal byte for byte.
enum PreviousOpenMetrics {
  typealias Format = OpenMetrics.Format

  /// One metric family and its samples.
  struct Family {
    enum Kind: String {
      case counter, gauge, stateset
    }
    var name: String
    var kind: Kind
    var unit: String?
    var help: String
    /// Label set (rendered, without braces), value, and for counters the creation time.
    var samples: [(labels: String, value: String, created: String?)] = []
  }

  /// The exposition of `ledger` (and `session` and the database's `health`, when known) at `time`.
  static func render(
    ledger: Ledger, session: SessionReport?, health: StoreHealth? = nil, at time: Timestamp,
    format: Format = .openmetrics
  ) -> String {
    var families = ledgerFamilies(ledger)
    if let session { families += sessionFamilies(session) }
    if let health {
      families.append(
        Family(
          name: "vpnstat_notification_overflows", kind: .counter,
          help:
            "Times the kernel dropped link notifications because a recorder fell behind: traffic of links deleted meanwhile is missing.",
          samples: [("", String(health.notificationOverflows), nil)]))
    }
    families.append(
      Family(
        name: "vpnstat_scrape_timestamp_seconds", kind: .gauge, unit: "seconds",
        help: "When vpnstat produced these figures.", samples: [("", seconds(time), nil)]))
    return render(families, format: format)
  }

  static func ledgerFamilies(_ ledger: Ledger) -> [Family] {
    let entries = ledger.entries.values.sorted { $0.name < $1.name }
    let perInterface: [(String, String?, String, KeyPath<LedgerTotals, UInt64>)] = [
      (
        "vpnstat_interface_receive_bytes", "bytes",
        "Bytes received, bridged across counter resets and wraps (estimate).", \.traffic.rxBytes
      ),
      (
        "vpnstat_interface_transmit_bytes", "bytes",
        "Bytes transmitted, bridged across counter resets and wraps (estimate).", \.traffic.txBytes
      ),
      ("vpnstat_interface_receive_packets", nil, "Packets received (estimate).", \.traffic.rxPackets),
      ("vpnstat_interface_transmit_packets", nil, "Packets transmitted (estimate).", \.traffic.txPackets),
      ("vpnstat_interface_resets", nil, "Counter resets bridged (interface recreated or rebooted).", \.resets),
      ("vpnstat_interface_wraps", nil, "32-bit counter wraps bridged.", \.wraps),
      ("vpnstat_interface_discarded", nil, "Samples discarded as faster than plausible.", \.discarded),
    ]
    var families = perInterface.map { name, unit, help, value in
      Family(
        name: name, kind: .counter, unit: unit, help: help,
        samples: entries.map { entry in
          (
            "interface=\"\(label(entry.name))\",class=\"\(entry.interfaceClass.rawValue)\"",
            String(entry.totals[keyPath: value]), seconds(entry.totals.firstSeenAt)
          )
        })
    }
    var classes: [InterfaceClass: LedgerTotals] = [:]
    for entry in entries {
      classes[entry.interfaceClass] = classes[entry.interfaceClass].map { $0 + entry.totals } ?? entry.totals
    }
    for (name, help, value) in [
      (
        "vpnstat_class_receive_bytes", "Bytes received by all interfaces of a class (estimate).",
        \LedgerTotals.traffic.rxBytes
      ),
      (
        "vpnstat_class_transmit_bytes", "Bytes transmitted by all interfaces of a class (estimate).",
        \LedgerTotals.traffic.txBytes
      ),
    ] {
      families.append(
        Family(
          name: name, kind: .counter, unit: "bytes", help: help,
          samples: InterfaceClass.allCases.compactMap { interfaceClass in
            classes[interfaceClass].map {
              ("class=\"\(interfaceClass.rawValue)\"", String($0[keyPath: value]), seconds($0.firstSeenAt))
            }
          }))
    }
    return families
  }

  static func sessionFamilies(_ report: SessionReport) -> [Family] {
    var families = [
      Family(
        name: "vpnstat_session_state", kind: .stateset, help: "The free plan's session state.",
        samples: SessionState.allCases.map {
          ("vpnstat_session_state=\"\($0.rawValue)\"", report.state == $0 ? "1" : "0", nil)
        }),
      Family(
        name: "vpnstat_session_can_connect", kind: .gauge, help: "1 when connecting is allowed now.",
        samples: [("", report.canConnect ? "1" : "0", nil)]),
      Family(
        name: "vpnstat_session_enforcer_running", kind: .gauge,
        help: "1 when an enforcer runs for the free plan (without one nothing disconnects).",
        samples: [("", report.enforcer != nil ? "1" : "0", nil)]),
      Family(
        name: "vpnstat_session_remaining_seconds", kind: .gauge, unit: "seconds",
        help: "Session time left (0 when not active).",
        samples: [("", String(report.remaining.map(SessionText.seconds) ?? 0), nil)]),
      Family(
        name: "vpnstat_session_pause_remaining_seconds", kind: .gauge, unit: "seconds",
        help: "Time until reconnecting is allowed (0 when it is).",
        samples: [("", String(report.pauseRemaining.map(SessionText.seconds) ?? 0), nil)]),
    ]
    if let usage = report.usage {
      families.append(
        Family(
          name: "vpnstat_session_usage_bytes", kind: .gauge, unit: "bytes",
          help: "Tunnel-class traffic in the current window (estimate).",
          samples: [
            ("direction=\"receive\"", String(usage.rxBytes), nil),
            ("direction=\"transmit\"", String(usage.txBytes), nil),
          ]))
    }
    if let cap = report.dataCap {
      families += [
        Family(
          name: "vpnstat_data_cap_limit_bytes", kind: .gauge, unit: "bytes",
          help: "The data cap: tunnel-class bytes allowed per period, both directions.",
          samples: [("period=\"\(cap.cap.period.length.rawValue)\"", String(cap.cap.limitBytes), nil)]),
        Family(
          name: "vpnstat_data_cap_used_bytes", kind: .gauge, unit: "bytes",
          help: "Tunnel-class bytes in the cap's current period, both directions (estimate).",
          samples: [("period=\"\(cap.cap.period.length.rawValue)\"", String(cap.usedBytes), nil)]),
        Family(
          name: "vpnstat_data_cap_reached", kind: .gauge,
          help: "1 when the data cap is reached: connecting is refused.",
          samples: [("", cap.reached ? "1" : "0", nil)]),
      ]
    }
    return families
  }

  static func render(_ families: [Family], format: Format) -> String {
    var out = ""
    out.reserveCapacity(families.reduce(0) { $0 + 200 + $1.samples.count * 120 })
    for family in families {
      switch format {
      case .openmetrics:
        out += "# TYPE \(family.name) \(family.kind.rawValue)\n"
        if let unit = family.unit { out += "# UNIT \(family.name) \(unit)\n" }
        out += "# HELP \(family.name) \(family.help)\n"
        for sample in family.samples {
          let labels = sample.labels.isEmpty ? "" : "{\(sample.labels)}"
          out += "\(family.name)\(family.kind == .counter ? "_total" : "")\(labels) \(sample.value)\n"
          if family.kind == .counter, let created = sample.created {
            out += "\(family.name)_created\(labels) \(created)\n"
          }
        }
      case .prometheus:
        // The 0.0.4 format names the family by its sample; a stateset is a gauge per state.
        let name = family.kind == .counter ? family.name + "_total" : family.name
        out += "# HELP \(name) \(family.help)\n"
        out += "# TYPE \(name) \(family.kind == .counter ? "counter" : "gauge")\n"
        for sample in family.samples {
          let labels = sample.labels.isEmpty ? "" : "{\(sample.labels)}"
          out += "\(name)\(labels) \(sample.value)\n"
        }
      }
    }
    if format == .openmetrics { out += "# EOF\n" }
    return out
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

  static func seconds(_ time: Timestamp) -> String {
    let whole = time.seconds
    let millis = (time.nanoseconds - whole * 1_000_000_000) / 1_000_000
    return "\(whole).\(millis < 10 ? "00" : millis < 100 ? "0" : "")\(millis)"
  }
}
