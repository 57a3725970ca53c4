// swift-tools-version:6.0
import PackageDescription

// The targets form a one-way graph, drawn in ARCHITECTURE.md; only VPNStatSystem calls libc.
// `packedCode`, release builds only (why, the figures and the commands: docs/performance.md):
// -function-sections: a section per function, for lld to order (Sources/vpnstat/recorder.order);
// -disable-concrete-type-metadata-mangled-name-accessors: generic metadata by accessor, no demangling.
// VPNStatModel, the library other packages may use, takes no unsafe flag.
let packedCode: [SwiftSetting] = [
  .unsafeFlags(
    [
      "-Xfrontend", "-function-sections", "-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors",
    ], .when(configuration: .release))
]

let package = Package(
  name: "vpnstat",
  products: [
    .executable(name: "vpnstat", targets: ["vpnstat"]),
    // The library's API: the counter, ledger and session rules as values (`public`). Every other
    // target shares its declarations inside this package only (`package`, SE-0386): the tests,
    // the benchmark and the executable see them; nothing outside is promised them.
    .library(name: "VPNStat", targets: ["VPNStatModel"]),
  ],
  targets: [
    // C shim: netlink, if_arp, tun and timerfd headers; function-like macros as static inline.
    .target(name: "CLinux"),
    .systemLibrary(
      name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    // zlib: gzip for `record --listen`'s responses.
    .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
    // OpenSSL (TLS for `record --listen`) and libxcrypt (crypt_r: the web configuration's
    // bcrypt hashes): Debian's, linked statically into release builds like SQLite and zlib.
    .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
    .systemLibrary(name: "CCrypt", pkgConfig: "libxcrypt", providers: [.apt(["libcrypt-dev"])]),
    // libpcap's headers only (no pkgConfig: that would link it; CPcapLoader loads it lazily).
    .systemLibrary(name: "CPcap", providers: [.apt(["libpcap-dev"])]),
    // libpcap's functions, loaded with dlopen when `flows` first uses them (see loader.c).
    .target(name: "CPcapLoader", dependencies: ["CPcap"], linkerSettings: [.linkedLibrary("dl")]),
    // What the static vpnstat changes in its libraries' start-up (OpenSSL's CPU probe, deferred
    // from `.init` to OpenSSL's own initialisation); empty in debug builds, linked by vpnstat alone.
    .target(
      name: "CStartUp", cSettings: [.define("VPNSTAT_STATIC_EXECUTABLE", .when(configuration: .release))]),

    // Pure values and rules: counters and their deltas, the ledger, traffic buckets, interface
    // names and classes, the session window, the trusted clock. No C, no I/O.
    .target(name: "VPNStatModel"),
    // The bottom layer: file descriptors, Errno, netlink framing, clocks and timers, signals,
    // child processes, terminal modes, locks and files, the session bus (vpnstat's own D-Bus
    // client), gzip (zlib). The only code that calls libc.
    .target(name: "VPNStatSystem", dependencies: ["VPNStatModel", "CLinux", "CZlib"], swiftSettings: packedCode),
    // What the kernel says: the counter readers (netlink, sysfs, getifaddrs), link
    // notifications, link control, the clocks and the local calendar as model values.
    .target(
      name: "VPNStatKernel", dependencies: ["VPNStatModel", "VPNStatSystem", "CLinux"], swiftSettings: packedCode),
    // The SQLite database: the only target that links SQLite.
    .target(
      name: "VPNStatStore", dependencies: ["VPNStatModel", "VPNStatSystem", "CSQLite"], swiftSettings: packedCode),
    // Pure functions from model values to text, JSON and OpenMetrics: no file or terminal I/O.
    .target(name: "VPNStatRender", dependencies: ["VPNStatModel"], swiftSettings: packedCode),
    // Packet capture and flow attribution (`vpnstat flows`): the only user of libpcap.
    .target(
      name: "VPNStatCapture",
      dependencies: [
        "VPNStatModel", "VPNStatSystem", "VPNStatKernel", "VPNStatRender", "CPcap", "CPcapLoader",
      ], swiftSettings: packedCode),
    // HTTP/1.1 at the edge: request heads, responses, and a server that never waits on a client
    // (`record --listen`); what it serves is the engine's.
    .target(
      name: "VPNStatHTTP", dependencies: ["VPNStatModel", "VPNStatSystem", "VPNStatTLS"], swiftSettings: packedCode),
    // TLS sessions and password hashes for the HTTP server: the only user of OpenSSL and crypt.
    .target(
      name: "VPNStatTLS", dependencies: ["VPNStatModel", "VPNStatSystem", "COpenSSL", "CCrypt"],
      swiftSettings: packedCode),
    // The desktop's notification server (org.freedesktop.Notifications over the user's D-Bus).
    .target(name: "VPNStatDesktop", dependencies: ["VPNStatModel", "VPNStatSystem"], swiftSettings: packedCode),
    // The use cases, one folder each (Status, Watch, Record, Serve, Enforce, Connect, Notify),
    // over the tunnel managers' controls (Managers) and the sampler (Sampling). They reach the
    // kernel, the store, HTTP, the desktop, the clock and the log through protocols.
    .target(
      name: "VPNStatEngine",
      dependencies: [
        "VPNStatModel", "VPNStatSystem", "VPNStatKernel", "VPNStatStore", "VPNStatRender", "VPNStatHTTP",
        "VPNStatDesktop",
      ],
      swiftSettings: packedCode + [.enableUpcomingFeature("MemberImportVisibility")]),
    // Arguments, the configuration file, the subcommands, and the one place that maps errors to
    // exit statuses. A library, so every command can run in-process in a test.
    .target(
      name: "VPNStatCommandLine",
      dependencies: [
        "VPNStatModel", "VPNStatSystem", "VPNStatKernel", "VPNStatStore", "VPNStatRender", "VPNStatEngine",
        "VPNStatCapture", "VPNStatHTTP", "VPNStatDesktop", "VPNStatTLS",
      ],
      swiftSettings: packedCode + [.enableUpcomingFeature("MemberImportVisibility")], plugins: ["BuildCommit"]),
    // Names the commit of every build for `vpnstat --version` (scripts/build-commit: git, or the
    // `.commit` file a `git archive` tarball carries).
    .plugin(name: "BuildCommit", capability: .buildTool()),
    // Release builds are fully static (docs/performance.md: start-up); libpcap alone is loaded at
    // run time, by `flows` (CPcapLoader), which needs the build machine's glibc.
    .executableTarget(
      name: "vpnstat", dependencies: ["VPNStatCommandLine", "VPNStatSystem", "CStartUp"],
      exclude: ["recorder.order", "read-only-data.ld"],
      swiftSettings: packedCode,
      linkerSettings: [
        .unsafeFlags(
          [
            "-static-executable", "-use-ld=lld",
            "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/vpnstat/recorder.order",
            "-Xlinker", "--no-warn-symbol-ordering", "-Xlinker", "--wrap=OPENSSL_cpuid_setup",
            "-Xlinker", "--undefined=OPENSSL_cpuid_setup",
            "-Xlinker", "--script=\(Context.packageDirectory)/Sources/vpnstat/read-only-data.ld",
          ], .when(configuration: .release))
      ]),

    // The benchmark's floors in plain C (the netlink dumps, the kept sysfs files) and its traffic
    // mover; `netlink-floor` is the whole-process floor for `status` (the same two dumps).
    .target(name: "CNetlinkFloor", path: "Benchmarks/CNetlinkFloor"),
    // libpcap's own read of a capture file: the floor of `flows --read`.
    .target(name: "CPcapFloor", dependencies: ["CPcap", "CPcapLoader"], path: "Benchmarks/CPcapFloor"),
    .executableTarget(
      name: "netlink-floor", dependencies: ["CNetlinkFloor"], path: "Benchmarks/netlink-floor",
      // Static, like vpnstat: SwiftPM links the Swift runtime into every executable, and a floor
      // must not pay the dynamic loader for a runtime it never calls.
      linkerSettings: [.unsafeFlags(["-static-executable"], .when(configuration: .release))]),
    // The same dump, then the reads `status --db` makes through SQLite when nothing is published:
    // the floor of that path, a plain C program over the same library, linked the same way.
    .executableTarget(
      name: "sqlite-floor", dependencies: ["CNetlinkFloor", "CSQLite"], path: "Benchmarks/sqlite-floor",
      // SQLite's math functions need libm, which nothing else here links a C program against.
      linkerSettings: [.linkedLibrary("m"), .unsafeFlags(["-static-executable"], .when(configuration: .release))]),
    .executableTarget(
      name: "vpnstat-bench",
      dependencies: [
        "VPNStatModel", "VPNStatSystem", "VPNStatKernel", "VPNStatStore", "VPNStatRender", "VPNStatEngine",
        "VPNStatCapture", "VPNStatCommandLine", "VPNStatSimulation", "CNetlinkFloor", "CPcapFloor", "vpnstat",
        "netlink-floor", "sqlite-floor",
      ],
      path: "Benchmarks/vpnstat-bench"),
    // Traffic history made through the store's own API with an injected clock: the benchmark's
    // simulated year and the simulated month the chart tests draw; and the seeded generator
    // (SplitMix) the tests' random cases and the benchmark's shuffled rounds share.
    .target(name: "VPNStatSimulation", dependencies: ["VPNStatModel", "VPNStatStore"], path: "Tests/Simulation"),
    // The processes the kernel tests run inside their namespaces (a tun owner, traffic peers).
    .executableTarget(name: "vpnstat-testpeer", path: "Tests/TestPeer"),
    // The suite-level guard: the host's links when the test process starts, compared when it
    // ends (a difference fails the run), in C so it runs before any test can.
    .target(name: "CHostGuard", path: "Tests/HostGuard"),
    // What the tests share: running the built binaries, network namespaces, fixture sysfs trees,
    // capture files, a manual clock.
    .target(
      name: "VPNStatTestSupport",
      dependencies: [
        "VPNStatModel", "VPNStatSystem", "VPNStatKernel", "VPNStatStore", "VPNStatCapture", "VPNStatSimulation",
        "CLinux", "CHostGuard",
      ],
      path: "Tests/Support"),
    // One test target per library target, testing it in-process (the engine against a fake
    // kernel, a manual clock and a database in a temporary file), and the end-to-end tests
    // that run the built binary against the real kernel, as root, in network namespaces.
    .testTarget(
      name: "VPNStatModelTests",
      dependencies: [
        "VPNStatModel", "VPNStatRender", "VPNStatStore", "VPNStatSystem", "VPNStatSimulation", "VPNStatTestSupport",
      ]),
    .testTarget(
      name: "VPNStatSystemTests",
      dependencies: ["VPNStatSystem", "VPNStatModel", "VPNStatSimulation", "VPNStatTestSupport"]),
    .testTarget(
      name: "VPNStatKernelTests",
      dependencies: [
        "VPNStatKernel", "VPNStatEngine", "VPNStatModel", "VPNStatStore", "VPNStatSystem", "VPNStatSimulation",
        "VPNStatTestSupport", "CLinux",
      ]),
    .testTarget(
      name: "VPNStatStoreTests",
      dependencies: ["VPNStatStore", "VPNStatModel", "VPNStatRender", "VPNStatSystem", "VPNStatTestSupport"]),
    .testTarget(
      name: "VPNStatRenderTests",
      dependencies: ["VPNStatRender", "VPNStatModel", "VPNStatStore", "VPNStatSimulation", "VPNStatTestSupport"]),
    .testTarget(
      name: "VPNStatCaptureTests",
      dependencies: [
        "VPNStatCapture", "VPNStatModel", "VPNStatRender", "VPNStatSystem", "VPNStatSimulation", "VPNStatTestSupport",
      ]),
    .testTarget(
      name: "VPNStatEngineTests",
      dependencies: [
        "VPNStatEngine", "VPNStatKernel", "VPNStatModel", "VPNStatRender", "VPNStatStore", "VPNStatSystem",
        "VPNStatHTTP", "VPNStatDesktop", "VPNStatTLS", "VPNStatTestSupport",
      ]),
    .testTarget(
      name: "VPNStatCommandLineTests",
      dependencies: [
        "VPNStatCommandLine", "VPNStatCapture", "VPNStatModel", "VPNStatStore", "VPNStatSystem", "VPNStatSimulation",
        "VPNStatTestSupport",
      ]),
    .testTarget(
      name: "EndToEndTests",
      dependencies: [
        "VPNStatCommandLine", "VPNStatEngine", "VPNStatModel", "VPNStatRender", "VPNStatStore", "VPNStatSystem",
        "VPNStatDesktop", "VPNStatSimulation", "VPNStatTestSupport",
      ]),
  ],
  swiftLanguageModes: [.v6]
)
