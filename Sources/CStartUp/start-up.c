// What the static vpnstat executable changes in its libraries' start-up. Linked by the `vpnstat`
// executable alone; compiled empty outside release builds (Package.swift), which link the
// libraries dynamically and keep their own start-up.
#ifdef VPNSTAT_STATIC_EXECUTABLE

#include <stddef.h>

// OpenSSL's CPU probe, deferred from before `main` to OpenSSL's own initialisation.
//
// libcrypto's x86_64 object puts a call to OPENSSL_cpuid_setup in the ELF `.init` section, so a
// static executable that links OpenSSL (for `record --listen`'s TLS) runs a dozen CPUID
// instructions before `main` in every process, whatever it does. Each CPUID traps to the
// hypervisor on a virtual machine: some 35 µs of a `status --json` here (perf). The release link
// passes `--wrap=OPENSSL_cpuid_setup`, so that call and OpenSSL's own one
// (OPENSSL_init_crypto, which every TLS context and every libcrypto entry vpnstat uses goes
// through first) come here. A call before the program's initialisers ran is the `.init` one and
// returns at once; any later one is OpenSSL's, and runs the real setup, once, as OpenSSL would
// (its OPENSSL_ia32cap environment variable included).
//
// The reference to the real setup is weak: other release executables that link this target (the
// benchmark, through its dependency on vpnstat) link OpenSSL dynamically, without the wrap, and
// never call this; vpnstat's link names the real one undefined (`-u`), so it is there.
__attribute__((weak)) void __real_OPENSSL_cpuid_setup(void);

static int startup_vpnstat_initialised;

// Set from the arguments glibc passes each initialiser: a constant store would let the compiler
// run this at build time and fold the flag to 1 (LLVM evaluates simple static constructors).
__attribute__((constructor(101), used)) static void startup_initialisers_run(int argc, char **argv, char **envp) {
  (void)argc;
  (void)envp;
  startup_vpnstat_initialised = argv != NULL;
}

void __wrap_OPENSSL_cpuid_setup(void) {
  if (!startup_vpnstat_initialised || !__real_OPENSSL_cpuid_setup) return;
  __real_OPENSSL_cpuid_setup();
}

#endif
