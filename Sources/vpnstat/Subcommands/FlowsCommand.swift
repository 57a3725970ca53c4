import VPNStatCore

#if canImport(Glibc)
  import Glibc
#endif

/// `vpnstat flows`: traffic per flow, remote host and process by packet capture (libpcap), live
/// on an interface or from a capture file; a refreshing screen, plain blocks or NDJSON.
enum FlowsCommand: Subcommand {
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
      CommonOptions.json,
      OptionSpec.duration(
        "interval",
        help: "Report every DURATION (default 1s); with --read, slices of packet time."),
      OptionSpec(
        "count", short: "c", .value("n"), help: "Stop after N reports.",
        accepts: { parsePositiveInt($0) != nil }),
      OptionSpec(
        "top", .value("n"), help: "Show at most N flows, hosts and processes (the most active).",
        accepts: { parsePositiveInt($0) != nil }),
      OptionSpec(
        "filter", short: "f", .value("expression"),
        help: "Capture only what this BPF filter matches (pcap-filter(7))."),
      OptionSpec(
        "read", short: "r", .value("file"),
        help: "Read packets from a pcap or pcapng file instead of capturing."),
      OptionSpec(
        "write", short: "w", .value("file"), help: "Also save the captured packets to FILE (pcap)."),
      OptionSpec(
        "local", .value("address"), repeatable: true,
        help: "Treat ADDRESS as this host's (decides rx/tx; for --read the only local addresses).",
        accepts: { IPAddress(parsing: $0) != nil }),
      OptionSpec(
        "snaplen", short: "s", .value("bytes"),
        help:
          "Bytes kept per packet (default 256: headers; 0 = whole packets). Lengths come from IP headers.",
        accepts: { snapshotLength($0) != nil }),
      OptionSpec(
        "no-processes", help: "Do not look up processes in /proc (all traffic is 'unknown')."),
      OptionSpec.duration(
        "lookup-interval",
        help: "Walk /proc for owners of new flows at most once per DURATION (default 200ms)."),
      OptionSpec.duration(
        "idle-timeout",
        help:
          "Drop flows idle this long from the list (default 5m); their bytes stay in the totals."),
      CommonOptions.bytes, CommonOptions.noColor,
    ],
    positionals: [
      PositionalSpec("interface", help: "The interface to capture on (any = all).", optional: true)
    ])

  static func snapshotLength(_ text: String) -> Int32? {
    guard let value = Int32(text), value == 0 || (64...262_144).contains(value) else { return nil }
    return value == 0 ? 262_144 : value
  }

  static func run(_ parsed: ParsedCommand, _ context: CommandContext) throws -> ExitStatus {
    let path = parsed.commandPath
    var options = FlowCaptureOptions()
    options.filter = parsed.value("filter")
    options.interval = try parsed.value(
      "interval", expected: "a duration such as 500ms, 1s, 2m", parseDuration)
    options.count = try parsed.value("count", expected: "a positive number", parsePositiveInt)
    let top = try parsed.value("top", expected: "a positive number", parsePositiveInt)
    options.localAddresses = try parsed.all("local", expected: "an IPv4 or IPv6 address") {
      IPAddress(parsing: $0)
    }
    if let length = try parsed.value("snaplen", expected: "0 or 64…262144", snapshotLength) {
      options.snapshotLength = length
    }
    options.processes = !parsed.has("no-processes")
    if let lookup = try parsed.value(
      "lookup-interval", expected: "a duration such as 200ms", parseDuration)
    {
      options.lookupInterval = lookup
    }
    if let idle = try parsed.value("idle-timeout", expected: "a duration such as 5m", parseDuration) {
      options.idleTimeout = idle
    }
    options.writePath = parsed.value("write")
    let readPath = parsed.value("read")
    let interfaceArgument = parsed.positionals.first

    let json = parsed.has("json")
    let view = FlowView.Options(display: CommonOptions.display(parsed, context), top: top)
    let terminal = !json && context.standardOutput.isTerminal

    switch (interfaceArgument, readPath) {
    case (nil, nil):
      throw UsageError("missing argument <interface> (or --read <file>)", commandPath: path)
    case (.some, .some):
      throw UsageError("give an interface or --read <file>, not both", commandPath: path)
    case (nil, let file?):
      let capture = try FileFlowCapture(path: file, options: options)
      try capture.run { snapshot in
        if json {
          var bytes = FlowJSON.render(snapshot, top: top)
          bytes.append(0x0A)
          try context.write(bytes)
        } else {
          try context.write(FlowView.renderPlain(snapshot, options: view))
        }
      }
      return .success
    case (let name?, nil):
      let interface = InterfaceName(parsingEscaped: name)
      let capture = try LiveFlowCapture(interface: interface, options: options)
      context.warn(capture.listeningMessage)
      // The same hold on the terminal as watch: the alternate screen, no cursor, and the
      // terminal given back however the capture ends.
      let screen = terminal ? try? TerminalMode(input: .standardInput, output: context.standardOutput) : nil
      defer { screen?.restore() }
      try capture.run { snapshot in
        if json {
          var bytes = FlowJSON.render(snapshot, top: top)
          bytes.append(0x0A)
          try context.write(bytes)
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
