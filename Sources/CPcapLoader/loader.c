// libpcap, loaded when first used instead of at start-up.
//
// Linking libpcap made every vpnstat command load it and its dependencies (libdbus, libsystemd,
// libgcrypt, libcap …) — about 1.3 ms of a 3 ms start, for the one command that captures. This
// file defines the libpcap functions vpnstat calls, each forwarding to the real one found with
// dlopen/dlsym on first use. Without libpcap installed, the functions fail the way libpcap's own
// failures look (NULL or PCAP_ERROR, and a message in errbuf), so `vpnstat flows` can say what
// is missing while every other command runs without it.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <pcap/pcap.h>
#include "CPcapLoader.h"

static void *library;
static char load_error[256];

// The one caller of dlopen. In a static binary the linker warns at every function that calls it
// ("Using 'dlopen' in statically linked applications requires at runtime the shared libraries
// from the glibc version used for linking"): inlined into each forwarder below, that was 30
// warnings for one fact. Kept out of line, it is one.
__attribute__((noinline)) static void open_library(void) {
  const char *names[] = {"libpcap.so.0.8", "libpcap.so.1", "libpcap.so"};
  for (unsigned i = 0; i < sizeof names / sizeof names[0] && !library; i++) {
    library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  }
  if (!library) {
    const char *why = dlerror();
    snprintf(load_error, sizeof load_error, "libpcap is not installed (%s); install libpcap0.8",
             why ? why : "dlopen failed");
  }
}

static void *lookup(const char *name) {
  if (!library) open_library();
  return library ? dlsym(library, name) : NULL;
}

int vpnstat_pcap_available(const char **message) {
  if (lookup("pcap_create")) return 1;
  if (message) *message = load_error;
  return 0;
}

static void fail_into(char *errbuf) {
  if (errbuf) snprintf(errbuf, PCAP_ERRBUF_SIZE, "%s", load_error[0] ? load_error : "libpcap symbol missing");
}

#define FORWARD(ret, name, params, args, failure)                    \
  ret name params {                                                  \
    static ret(*real) params;                                        \
    if (!real) real = (ret(*) params)lookup(#name);                  \
    if (!real) return failure;                                       \
    return real args;                                                \
  }

#define FORWARD_VOID(name, params, args)                             \
  void name params {                                                 \
    static void(*real) params;                                       \
    if (!real) real = (void(*) params)lookup(#name);                 \
    if (real) real args;                                             \
  }

#define FORWARD_ERRBUF(ret, name, params, args, errbuf)              \
  ret name params {                                                  \
    static ret(*real) params;                                        \
    if (!real) real = (ret(*) params)lookup(#name);                  \
    if (!real) { fail_into(errbuf); return NULL; }                   \
    return real args;                                                \
  }

FORWARD_ERRBUF(pcap_t *, pcap_create, (const char *source, char *errbuf), (source, errbuf), errbuf)
FORWARD_ERRBUF(pcap_t *, pcap_open_offline_with_tstamp_precision,
               (const char *file, u_int precision, char *errbuf), (file, precision, errbuf), errbuf)
FORWARD(pcap_t *, pcap_open_dead, (int linktype, int snaplen), (linktype, snaplen), NULL)
FORWARD(pcap_t *, pcap_open_dead_with_tstamp_precision, (int linktype, int snaplen, u_int precision),
        (linktype, snaplen, precision), NULL)
FORWARD(int, pcap_activate, (pcap_t *p), (p), PCAP_ERROR)
FORWARD(int, pcap_set_snaplen, (pcap_t *p, int v), (p, v), PCAP_ERROR)
FORWARD(int, pcap_set_promisc, (pcap_t *p, int v), (p, v), PCAP_ERROR)
FORWARD(int, pcap_set_timeout, (pcap_t *p, int v), (p, v), PCAP_ERROR)
FORWARD(int, pcap_set_immediate_mode, (pcap_t *p, int v), (p, v), PCAP_ERROR)
FORWARD(int, pcap_set_buffer_size, (pcap_t *p, int v), (p, v), PCAP_ERROR)
FORWARD(int, pcap_set_tstamp_precision, (pcap_t *p, int v), (p, v), PCAP_ERROR)
FORWARD(int, pcap_setnonblock, (pcap_t *p, int v, char *errbuf), (p, v, errbuf), PCAP_ERROR)
FORWARD(int, pcap_get_selectable_fd, (pcap_t *p), (p), -1)
FORWARD(int, pcap_next_ex, (pcap_t *p, struct pcap_pkthdr **h, const u_char **d), (p, h, d), PCAP_ERROR)
FORWARD(int, pcap_datalink, (pcap_t *p), (p), PCAP_ERROR)
FORWARD(int, pcap_snapshot, (pcap_t *p), (p), PCAP_ERROR)
FORWARD(int, pcap_stats, (pcap_t *p, struct pcap_stat *s), (p, s), PCAP_ERROR)
FORWARD(int, pcap_compile, (pcap_t *p, struct bpf_program *f, const char *e, int o, bpf_u_int32 m),
        (p, f, e, o, m), PCAP_ERROR)
FORWARD(int, pcap_offline_filter, (const struct bpf_program *f, const struct pcap_pkthdr *h, const u_char *d),
        (f, h, d), 0)
FORWARD(int, pcap_setfilter, (pcap_t *p, struct bpf_program *f), (p, f), PCAP_ERROR)
FORWARD(char *, pcap_geterr, (pcap_t *p), (p), load_error)
FORWARD(const char *, pcap_statustostr, (int e), (e), load_error)
FORWARD(const char *, pcap_datalink_val_to_name, (int v), (v), NULL)
FORWARD(const char *, pcap_datalink_val_to_description, (int v), (v), NULL)
FORWARD(pcap_dumper_t *, pcap_dump_open, (pcap_t *p, const char *f), (p, f), NULL)
FORWARD(int, pcap_dump_flush, (pcap_dumper_t *d), (d), PCAP_ERROR)
FORWARD_VOID(pcap_close, (pcap_t *p), (p))
FORWARD_VOID(pcap_freecode, (struct bpf_program *f), (f))
FORWARD_VOID(pcap_dump_close, (pcap_dumper_t *d), (d))
FORWARD_VOID(pcap_dump, (u_char *u, const struct pcap_pkthdr *h, const u_char *d), (u, h, d))
