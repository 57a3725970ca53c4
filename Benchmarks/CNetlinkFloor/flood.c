// The traffic of the live-capture row of `vpnstat-bench --only flows`: UDP datagrams at a steady
// rate from one namespace to a peer address across a veth, so that what a capture on the peer
// saw can be compared with what was sent.
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "CNetlinkFloor.h"

static long long monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

long udp_flood(const char *destination, int port, long rate, double seconds, int payload) {
  enum { BATCH = 32, LARGEST = 1400 };
  if (rate <= 0 || seconds <= 0 || payload < 0 || payload > LARGEST) return -EINVAL;
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  if (inet_pton(AF_INET, destination, &to.sin_addr) != 1) return -EINVAL;
  // Not connected: the peer's "port unreachable" answers (rate-limited) are then no errors here.
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  static char data[LARGEST];
  struct iovec vectors[BATCH];
  struct mmsghdr messages[BATCH];
  memset(messages, 0, sizeof messages);
  for (int i = 0; i < BATCH; i++) {
    vectors[i] = (struct iovec){.iov_base = data, .iov_len = (size_t)payload};
    messages[i].msg_hdr.msg_name = &to;
    messages[i].msg_hdr.msg_namelen = sizeof to;
    messages[i].msg_hdr.msg_iov = &vectors[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  const long long start = monotonic_ns();
  const long long total = (long long)(rate * seconds);
  long long sent = 0;
  while (sent < total) {
    // Paced by the clock: the packets due by now go out, in batches; ahead of time, a sleep.
    long long due = (long long)((double)(monotonic_ns() - start) * (double)rate / 1e9);
    if (due > total) due = total;
    if (due <= sent) {
      struct timespec pause = {0, 50000};
      nanosleep(&pause, NULL);
      continue;
    }
    long long want = due - sent;
    int count = want < BATCH ? (int)want : BATCH;
    int done = sendmmsg(fd, messages, (unsigned)count, 0);
    if (done < 0) {
      if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN) continue;
      int error = errno;
      close(fd);
      return -error;
    }
    sent += done;
  }
  close(fd);
  return (long)sent;
}
