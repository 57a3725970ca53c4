import VPNStatModel

/// A WireGuard tunnel's own figures as text: the lines `status` prints under the tunnel, the one
/// line `watch` gives it, and the fields of `watch`'s plain lines. Peer transfer is WireGuard's
/// count of the encrypted side (with its overhead), so every such figure says "encrypted".
package enum WireGuardText {
  /// How many peers `status` lists under a tunnel; the JSON has them all.
  package static let listedPeers = 5

  /// Whole seconds from `instant` to `now`, never negative (a handshake stamped a moment after
  /// the sample, or a wall clock set back, reads as 0).
  package static func ageSeconds(_ instant: Timestamp, at now: Timestamp) -> Int64 {
    max(0, (now - instant).nanoseconds / 1_000_000_000)
  }

  /// `12 s ago`, `3 min 04 s ago` — or `never`.
  package static func age(_ instant: Timestamp?, at now: Timestamp) -> String {
    guard let instant else { return "never" }
    return Units.duration(seconds: ageSeconds(instant, at: now)) + " ago"
  }

  /// The lines under a tunnel in `status`: the device, then its peers, newest handshake first.
  package static func lines(_ status: WireGuardStatus, at now: Timestamp, options: DisplayOptions) -> [String] {
    var heading = "WireGuard (\(status.evidence.rawValue)"
    guard let reading = try? status.reading.get() else {
      return [heading + "): unavailable: \(TerminalText.sanitize(status.unavailable?.description ?? ""))"]
    }
    let device = reading.device
    heading += ", \(reading.source.rawValue)): latest handshake \(age(device.latestHandshake, at: now))"
    if let port = device.listenPort { heading += " · listen port \(port)" }
    heading += " · \(device.peers.count) \(device.peers.count == 1 ? "peer" : "peers")"
    var lines = [heading]
    let ordered = device.peers.sorted {
      ($0.latestHandshake ?? Timestamp(nanoseconds: .min)) > ($1.latestHandshake ?? Timestamp(nanoseconds: .min))
    }
    for peer in ordered.prefix(listedPeers) {
      var line = "  peer \(peer.publicKey.base64)"
      if let endpoint = peer.endpoint { line += " at \(TerminalText.sanitize(endpoint))" }
      line += ": handshake \(age(peer.latestHandshake, at: now))"
      line += " · encrypted \(options.estimate(peer.rxBytes)) in, \(options.estimate(peer.txBytes)) out"
      lines.append(line)
    }
    if ordered.count > listedPeers {
      lines.append("  … \(ordered.count - listedPeers) more peers (status --json lists them all)")
    }
    return lines
  }

  /// The one line `watch` gives a tunnel: latest handshake and the peers' encrypted transfer.
  package static func summary(_ status: WireGuardStatus, at now: Timestamp, options: DisplayOptions) -> String {
    guard let device = status.device else {
      return "wg: unavailable: \(TerminalText.sanitize(status.unavailable?.description ?? ""))"
    }
    let traffic = device.peerTraffic
    let peers = device.peers.count == 1 ? "1 peer" : "\(device.peers.count) peers"
    return
      "wg: handshake \(age(device.latestHandshake, at: now)) · \(peers) · encrypted \(options.estimate(traffic.rxBytes)) in, \(options.estimate(traffic.txBytes)) out"
  }

  /// The fields `watch` adds to a tunnel's plain line: `wg_handshake=` (RFC 3339, `never` or
  /// `unavailable`), `wg_rx=≈N wg_tx=≈N` (the peers' encrypted bytes, summed).
  package static func plainFields(_ status: WireGuardStatus) -> String {
    guard let device = status.device else { return " wg_handshake=unavailable" }
    let traffic = device.peerTraffic
    return " wg_handshake=\(device.latestHandshake?.rfc3339(fractionDigits: 3) ?? "never")"
      + " wg_rx=≈\(traffic.rxBytes) wg_tx=≈\(traffic.txBytes)"
  }

  /// The footnote under a table that shows WireGuard figures.
  package static let note =
    "WireGuard's peer figures are the encrypted side (with its overhead); the interface's are the plaintext."
}

/// A WireGuard tunnel's own figures in the status JSON: the `wireguard` object of an interface
/// (`null` for one that is not a WireGuard tunnel).
package enum WireGuardJSON {
  package static func write(_ status: WireGuardStatus?, at now: Timestamp, into json: inout JSONWriter) {
    guard let status else {
      json.null()
      return
    }
    let device = status.device
    json.beginObject()
    json.field("found_by", status.evidence.rawValue)
    json.field("source", status.source?.rawValue)
    json.field("unavailable", status.unavailable?.description)
    json.field("listen_port", device?.listenPort.map { UInt64($0) })
    writeHandshake(device?.latestHandshake, at: now, into: &json)
    json.key("peers")
    json.beginArray()
    for peer in device?.peers ?? [] {
      json.beginObject()
      json.field("public_key", peer.publicKey.base64)
      json.field("endpoint", peer.endpoint)
      writeHandshake(peer.latestHandshake, at: now, into: &json)
      json.field("rx_bytes", peer.rxBytes)
      json.field("tx_bytes", peer.txBytes)
      json.field(
        "persistent_keepalive_seconds",
        peer.persistentKeepaliveSeconds == 0 ? nil : UInt64(peer.persistentKeepaliveSeconds))
      json.field("allowed_ips_count", peer.allowedIPs)
      json.endObject()
    }
    json.endArray()
    json.endObject()
  }

  static func writeHandshake(_ instant: Timestamp?, at now: Timestamp, into json: inout JSONWriter) {
    json.field("latest_handshake", instant?.rfc3339(fractionDigits: 3))
    json.field("latest_handshake_age_seconds", instant.map { UInt64(WireGuardText.ageSeconds($0, at: now)) })
  }
}
