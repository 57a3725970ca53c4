// swift-tools-version:6.0
import PackageDescription

let package = Package(
  name: "vpnstat",
  products: [
    .executable(name: "vpnstat", targets: ["vpnstat"]),
    .library(name: "VPNStatCore", targets: ["VPNStatCore"]),
  ],
  targets: [
    // C shim: netlink, if_arp, tun and timerfd headers; function-like macros as static inline.
    .target(name: "CLinux"),
    .systemLibrary(
      name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    // libpcap's headers only (no pkgConfig: that would link it; CPcapLoader loads it lazily).
    .systemLibrary(name: "CPcap", providers: [.apt(["libpcap-dev"])]),
    // libpcap's functions, loaded with dlopen when `flows` first uses them (see loader.c).
    .target(name: "CPcapLoader", dependencies: ["CPcap"], linkerSettings: [.linkedLibrary("dl")]),
    .target(name: "VPNStatCore", dependencies: ["CLinux", "CSQLite", "CPcap", "CPcapLoader"]),
    // Release builds are fully static (Swift runtime, Foundation, SQLite, libstdc++, glibc): a
    // short command's time was mostly the dynamic loader resolving libstdc++'s and SQLite's
    // symbols (2.3 ms → 1.0 ms to start), and the binary runs without the toolchain. libpcap is
    // still loaded at run time by `flows` (CPcapLoader), which needs the build machine's glibc.
    .executableTarget(
      name: "vpnstat", dependencies: ["VPNStatCore"],
      linkerSettings: [.unsafeFlags(["-static-executable"], .when(configuration: .release))]),
    // The benchmark's floor: the same RTM_GETSTATS dump written in plain C.
    .target(name: "CNetlinkFloor", path: "Benchmarks/CNetlinkFloor"),
    .executableTarget(
      name: "vpnstat-bench", dependencies: ["VPNStatCore", "CNetlinkFloor", "vpnstat"],
      path: "Benchmarks/vpnstat-bench"),
    // The processes the kernel tests run inside their namespaces (a tun owner, traffic peers).
    .executableTarget(name: "vpnstat-testpeer", path: "Tests/TestPeer"),
    .testTarget(
      name: "VPNStatCoreTests", dependencies: ["VPNStatCore", "CLinux"]),
  ],
  swiftLanguageModes: [.v6]
)
