// The benchmark's own wait for a notification, with a timeout finer than poll's milliseconds:
// around an expected event it sleeps tens of microseconds at a time (StoreBenchmark.LinkWatch).

#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <time.h>

#include "CNetlinkFloor.h"

int bench_wait_readable(int fd, int64_t nanoseconds) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (nanoseconds < 0) nanoseconds = 0;
  struct timespec limit = {.tv_sec = nanoseconds / 1000000000, .tv_nsec = nanoseconds % 1000000000};
  int count = ppoll(&p, 1, &limit, NULL);
  if (count < 0) return errno == EINTR ? 0 : -errno;
  return count > 0 ? 1 : 0;
}
