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
    // Release builds link the Swift runtime statically: it halves start-up (the dynamic runtime
    // is most of a short command's time) and the binary runs without the toolchain installed.
    .executableTarget(
      name: "vpnstat", dependencies: ["VPNStatCore"],
      linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
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
