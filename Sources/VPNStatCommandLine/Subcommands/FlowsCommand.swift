import VPNStatCapture
import VPNStatEngine
import VPNStatModel
import VPNStatRender
import VPNStatSystem

/// `vpnstat flows`: traffic per flow, remote host and process by packet capture (libpcap), live
/// on an interface or from a capture file; a refreshing screen, plain blocks or NDJSON.
enum FlowsCommand: Subcommand {
  static let interval = Option.duration(
    "interval", help: "Report every DURATION (default 1s); with --read, slices of packet time.")
  static let count = Option.count(
    "count", short: "c", in: 1...1_000_000_000, help: "Stop after N reports (1 to 1000000000).")
  static let top = Option.count(
    "top", in: 1...1_000_000, help: "Show at most N flows, hosts and processes (the most active; 1 to 1000000).")
  static let filter = Option<String>(
    "filter", short: "f", valueName: "expression", help: "Capture only what this BPF filter matches (pcap-filter(7)).",
    expected: "a filter expression", parse: { $0 })
  static let read = Option<String>(
    "read", short: "r", valueName: "file", help: "Read packets from a pcap or pcapng file instead of capturing.",
    expected: "a file", values: .file, parse: { $0.isEmpty ? nil : $0 })
  static let write = Option<String>(
    "write", short: "w", valueName: "file", help: "Also save the captured packets to FILE (pcap).",
    expected: "a file", values: .file, parse: { $0.isEmpty ? nil : $0 })
  static let local = Option<IPAddress>(
    "local", valueName: "address", repeatable: true,
    help: "Treat ADDRESS as this host's (decides rx/tx; for --read the only local addresses).",
    expected: "an IPv4 or IPv6 address", parse: IPAddress.init(parsing:))
  static let snaplen = Option<Int32>(
    "snaplen", short: "s", valueName: "bytes",
    help: "Bytes kept per packet (default 256: headers; 0 = whole packets). Lengths come from IP headers.",
    expected: "0 or 64…262144", parse: snapshotLength)
  static let noProcesses = Flag("no-processes", help: "Do not look up processes in /proc (all traffic is 'unknown').")
  static let lookupInterval = Option.duration(
    "lookup-interval", help: "Walk /proc for owners of new flows at most once per DURATION (default 200ms).")
  static let idleTimeout = Option.duration(
    "idle-timeout", help: "Drop flows idle this long from the list (default 5m); their bytes stay in the totals.")

  static let spec = CommandSpec(
    name: "flows",
    abstract:
      "Show traffic per flow, host and process on an interface, by packet capture (an estimate).",
    usage: "vpnstat flows [<options>] <interface>\n       vpnstat flows [<options>] --read <file>",
    discussion: """
      Captures on INTERFACE (tun, wireguard, tap, veth, any …) and adds up IP bytes per flow, per
      remote host and per local process. Needs CAP_NET_RAW. Capture is its own estimate: it sees
      packets at one point of the stack and may drop under load (the drops are reported).
      """,
    options: [
      CommonOptions.json.spec, interval.spec, count.spec, top.spec, filter.spec, read.spec, write.spec, local.spec,
      snaplen.spec, noProcesses.spec, lookupInterval.spec, idleTimeout.spec, CommonOptions.bytes.spec,
      CommonOptions.noColor.spec,
    ] + CommonOptions.figures,
    positionals: [
      PositionalSpec("interface", help: "The interface to capture on (any = all).", optional: true, values: .interface)
    ])

  @Sendable static func snapshotLength(_ text: String) -> Int32? {
    guard let value = Int32(text.trimmingASCIIWhitespace), value == 0 || (64...262_144).contains(value) else {
      return nil
    }
    return value == 0 ? 262_144 : value
  }

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let path = parsed.commandPath
    var options = FlowCaptureOptions()
    options.filter = parsed[filter]
    options.interval = parsed[interval]
    options.count = parsed[count]
    options.localAddresses = parsed.all(local)
    if let length = parsed[snaplen] { options.snapshotLength = length }
    options.processes = !parsed.has(noProcesses)
    if let lookup = parsed[lookupInterval] { options.lookupInterval = lookup }
    if let idle = parsed[idleTimeout] { options.idleTimeout = idle }
    options.writePath = parsed[write]
    let shown = parsed[top]
    let json = parsed.has(CommonOptions.json)
    let view = FlowView.Options(display: CommandServices.display(parsed, context), top: shown)
    let terminal = !json && context.canDrawScreen

    switch (parsed.positionals.first, parsed[read]) {
    case (nil, nil):
      throw UsageError("missing argument <interface> (or --read <file>)", commandPath: path)
    case (.some, .some):
      throw UsageError("give an interface or --read <file>, not both", commandPath: path)
    case (nil, let file?):
      let capture = try FileFlowCapture(path: file, options: options, clock: context.clock)
      try capture.run { snapshot in
        if json {
          try context.write(FlowJSON.render(snapshot, top: shown) + [0x0A])
        } else {
          try context.write(FlowView.renderPlain(snapshot, options: view))
        }
      }
      return .success
    case (let name?, nil):
      let interface = InterfaceName(parsingEscaped: name)
      let capture = try LiveFlowCapture(interface: interface, options: options, clock: context.clock)
      context.warn(capture.listeningMessage)
      // The same hold on the terminal as watch: the alternate screen, no cursor, and the
      // terminal given back however the capture ends.
      let screen = terminal ? try? TerminalMode(input: context.standardInput, output: context.standardOutput) : nil
      defer { screen?.restore() }
      try capture.run { snapshot in
        if json {
          try context.write(FlowJSON.render(snapshot, top: shown) + [0x0A])
        } else if let screen {
          let size = TerminalSize.of(context.standardOutput) ?? TerminalSize(columns: 80, rows: 24)
          let text = FlowView.render(snapshot, width: size.columns, height: size.rows, options: view)
          let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
          try screen.draw(lines.last == "" ? Array(lines.dropLast()) : lines)
        } else if terminal {
          let size = TerminalSize.of(context.standardOutput) ?? TerminalSize(columns: 80, rows: 24)
          try context.write(
            "\u{1B}[H\u{1B}[2J"
              + FlowView.render(snapshot, width: size.columns, height: size.rows - 1, options: view)
          )
        } else {
          try context.write(FlowView.renderPlain(snapshot, options: view))
        }
      }
      return .success
    }
  }
}
