// The whole-process floor for `vpnstat status`: a plain C program that makes the one dump a
// cold `status` makes (RTM_GETLINK without IPv6's statistics, the counters read from each
// link's IFLA_STATS64) and prints how many interfaces it saw and their bytes. vpnstat-bench
// times it beside `status --json` and `ip -s -j link`.
//
// With `--react IFINDEX` it is instead the plainest enforcer: it undoes every up of that link
// until killed, the floor vpnstat-bench compares the enforcer's undo with. With `--every-second`
// it is the plainest recorder: the RTM_GETSTATS dump `record --interval 1s` makes, once a second
// until killed, and nothing else (no ledger, no database), the floor of the recorder's CPU.

#include <CNetlinkFloor.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--react") == 0) {
    int error = netlink_floor_react(atoi(argv[2]));
    fprintf(stderr, "netlink-floor: react: %s\n", strerror(-error));
    return 69;
  }
  int fd = netlink_floor_open();
  if (fd < 0) {
    fprintf(stderr, "netlink-floor: socket: %s\n", strerror(-fd));
    return 69;
  }
  if (argc == 2 && strcmp(argv[1], "--every-second") == 0) {
    for (;;) {
      uint64_t total = 0;
      long counted = netlink_floor_sample(fd, &total);
      if (counted < 0) {
        fprintf(stderr, "netlink-floor: sample: %s\n", strerror((int)-counted));
        return 69;
      }
      sleep(1);
    }
  }
  uint64_t bytes = 0;
  long counted = netlink_floor_links(fd, &bytes);
  close(fd);
  if (counted < 0) {
    fprintf(stderr, "netlink-floor: dump failed\n");
    return 69;
  }
  printf("%ld interfaces, %" PRIu64 " bytes\n", counted, bytes);
  return 0;
}
