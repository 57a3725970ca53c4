// The whole-process floor for `vpnstat status`: a plain C program that makes the same two
// dumps a cold `status` makes (RTM_GETLINK without statistics, then RTM_GETSTATS) and prints
// how many interfaces it saw and their bytes. vpnstat-bench times it beside `status --json`
// and `ip -s -j link`.

#include <CNetlinkFloor.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  int fd = netlink_floor_open();
  if (fd < 0) {
    fprintf(stderr, "netlink-floor: socket: %s\n", strerror(-fd));
    return 69;
  }
  long links = netlink_floor_links(fd);
  uint64_t bytes = 0;
  long counted = netlink_floor_sample(fd, &bytes);
  close(fd);
  if (links < 0 || counted < 0) {
    fprintf(stderr, "netlink-floor: dump failed\n");
    return 69;
  }
  printf("%ld interfaces, %" PRIu64 " bytes\n", counted, bytes);
  return 0;
}
