// The suite-level guard of issue 20: no test may change the host's network links.
//
// Swift Testing has no hook that runs before the first test or after the last one, and its tests
// run in parallel, so a check inside a test can neither see the whole run nor tell who changed
// what. The guard therefore lives in the test process itself: a constructor records the host's
// links (name, index, administrative flags, addresses) when the test bundle is loaded — before
// any test can run — and an exit handler compares them when the process ends, after every test
// has finished. Any difference is printed and turns the process's exit status into 1, which fails
// `swift test` whatever the tests reported. `HostGuardTests` also compares mid-run, so the change
// shows up as a named test failure as well when it persists.
//
// Flags compared: only those a person or a program sets (IFF_UP, NOARP, PROMISC, ALLMULTI, …);
// RUNNING, LOWER_UP and DORMANT follow the carrier, which the host's own network may change.

#define _GNU_SOURCE
#include "host_guard.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <errno.h>
#include <sched.h>
#include <unistd.h>
#include <linux/if_packet.h>

static char *at_start;
static pid_t guard_pid;

static const unsigned int compared_flags = IFF_UP | IFF_BROADCAST | IFF_DEBUG | IFF_LOOPBACK | IFF_POINTOPOINT |
                                           IFF_NOARP | IFF_PROMISC | IFF_ALLMULTI | IFF_MULTICAST;

static int compare_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int prefix_length(const struct sockaddr *mask) {
  if (mask == NULL) return -1;
  const unsigned char *bytes;
  size_t count;
  if (mask->sa_family == AF_INET) {
    bytes = (const unsigned char *)&((const struct sockaddr_in *)mask)->sin_addr;
    count = 4;
  } else if (mask->sa_family == AF_INET6) {
    bytes = (const unsigned char *)&((const struct sockaddr_in6 *)mask)->sin6_addr;
    count = 16;
  } else {
    return -1;
  }
  int bits = 0;
  for (size_t i = 0; i < count; i++) bits += __builtin_popcount(bytes[i]);
  return bits;
}

char *vpnstat_host_links_now(void) {
  struct ifaddrs *list;
  if (getifaddrs(&list) != 0) return NULL;
  size_t capacity = 64, count = 0;
  char **lines = malloc(capacity * sizeof(char *));
  for (struct ifaddrs *entry = list; entry != NULL && lines != NULL; entry = entry->ifa_next) {
    char line[256];
    line[0] = 0;
    int family = entry->ifa_addr ? entry->ifa_addr->sa_family : AF_PACKET;
    if (family == AF_PACKET && entry->ifa_data != NULL) {
      // A link. glibc leaves ifa_addr NULL for links without a hardware address (a tun).
      unsigned int index = entry->ifa_addr ? (unsigned int)((struct sockaddr_ll *)entry->ifa_addr)->sll_ifindex
                                           : if_nametoindex(entry->ifa_name);
      snprintf(line, sizeof line, "link %u %s flags 0x%x", index, entry->ifa_name,
               entry->ifa_flags & compared_flags);
    } else if (family == AF_INET || family == AF_INET6) {
      char text[INET6_ADDRSTRLEN] = "?";
      const void *address = family == AF_INET ? (const void *)&((struct sockaddr_in *)entry->ifa_addr)->sin_addr
                                              : (const void *)&((struct sockaddr_in6 *)entry->ifa_addr)->sin6_addr;
      inet_ntop(family, address, text, sizeof text);
      snprintf(line, sizeof line, "addr %s %s %s/%d", entry->ifa_name, family == AF_INET ? "inet" : "inet6", text,
               prefix_length(entry->ifa_netmask));
    }
    if (line[0] == 0) continue;
    if (count == capacity) {
      capacity *= 2;
      char **grown = realloc(lines, capacity * sizeof(char *));
      if (grown == NULL) break;
      lines = grown;
    }
    lines[count++] = strdup(line);
  }
  freeifaddrs(list);
  if (lines == NULL) return NULL;
  qsort(lines, count, sizeof(char *), compare_lines);
  size_t length = 1;
  for (size_t i = 0; i < count; i++) length += strlen(lines[i]) + 1;
  char *text = malloc(length);
  if (text != NULL) {
    text[0] = 0;
    for (size_t i = 0; i < count; i++) {
      strcat(text, lines[i]);
      strcat(text, "\n");
    }
  }
  for (size_t i = 0; i < count; i++) free(lines[i]);
  free(lines);
  return text;
}

const char *vpnstat_host_links_at_start(void) { return at_start; }

int vpnstat_enter_new_network_namespace(void) { return unshare(CLONE_NEWNET) == 0 ? 0 : errno; }

// Prints the lines of `a` that `b` lacks, each after `mark`.
static void print_missing(const char *a, const char *b, const char *mark) {
  const char *line = a;
  while (*line) {
    const char *end = strchr(line, '\n');
    size_t length = end ? (size_t)(end - line + 1) : strlen(line);
    int found = 0;
    for (const char *other = b; *other;) {
      const char *other_end = strchr(other, '\n');
      size_t other_length = other_end ? (size_t)(other_end - other + 1) : strlen(other);
      if (other_length == length && memcmp(line, other, length) == 0) {
        found = 1;
        break;
      }
      other += other_length;
    }
    if (!found) fprintf(stderr, "  %s %.*s", mark, (int)length, line);
    line += length;
  }
}

static void check_at_exit(void) {
  if (at_start == NULL || getpid() != guard_pid) return;
  char *now = vpnstat_host_links_now();
  if (now == NULL || strcmp(now, at_start) == 0) {
    free(now);
    return;
  }
  fflush(stdout);
  fprintf(stderr,
          "\nHOST GUARD: the host's network links changed while the tests ran (pid %d); a test touched the "
          "host's network namespace (or something else on this machine did meanwhile):\n",
          (int)getpid());
  print_missing(at_start, now, "before:");
  print_missing(now, at_start, "after: ");
  fprintf(stderr, "HOST GUARD: failing the run (Tests/HostGuard/host_guard.c).\n");
  fflush(stderr);
  free(now);
  _exit(1);
}

__attribute__((constructor)) static void start_guard(void) {
  guard_pid = getpid();
  at_start = vpnstat_host_links_now();
  atexit(check_at_exit);
}
