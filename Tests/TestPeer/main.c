// vpnstat-testpeer: the processes the kernel tests need, in one small C program so a fresh
// machine needs nothing else. Run inside a test's namespace with `ip netns exec`.
//
//   tun NAME [--tap] [--echo]     create a tun (or tap) owned by this process; print "ready";
//                                 with --echo write every IPv4/IPv6 packet back with source and
//                                 destination swapped, so both rx and tx move. Ends on SIGTERM.
//   udp-send ADDR PORT COUNT SIZE [--gap-us N] [--hold]   send COUNT datagrams of SIZE bytes;
//                                 with --hold keep the socket open after "sent" until SIGTERM
//                                 (a capture can then always find its owner, however late)
//   udp-sink PORT                 receive until SIGTERM; print bytes and datagrams received
//   tcp-send ADDR PORT BYTES [--rate BYTES_PER_SECOND] [--hold]   send BYTES over one
//                                 connection; with --hold print "sent" once all is acknowledged
//                                 and keep the connection open until SIGTERM
//   tcp-sink PORT                 accept one connection, drain it; print bytes received
//   udp-close-early ADDR PORT COUNT SIZE   send, close the socket, then print "closed" and wait
//                                 for SIGTERM (traffic whose socket is gone before lookup)
//   tun-pass NAME SOCKET          create a tun NAME here (in whatever network namespace this runs,
//                                 e.g. one of `unshare -Urn`), send its descriptor over the unix
//                                 socket SOCKET (SCM_RIGHTS), print "sent", hold it until SIGTERM
//   tun-receive SOCKET            listen on the unix socket SOCKET, print "listening", take one tun
//                                 descriptor from it, print "ready", hold it until SIGTERM
//   tun-foreign NAME --netns PATH create a tun NAME in the network namespace PATH (setns there and
//                                 back; needs root), print "ready", hold it here until SIGTERM
//   hold-fds N                    raise the soft RLIMIT_NOFILE to the hard one, hold N open
//                                 descriptors (fewer if the limit says so), print "ready COUNT",
//                                 wait for SIGTERM
//
// Any mode also takes `--comm NAME`: the process names itself NAME (prctl PR_SET_NAME, what
// /proc/PID/comm shows), as any program may. Arguments a mode does not know are left in argv,
// so /proc/PID/cmdline carries whatever the test wants a process to claim (`--management PATH
// unix`).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stopping = 0;
static void on_signal(int sig) { (void)sig; stopping = 1; }

static void die(const char *what) { perror(what); exit(1); }

static int parse_addr(const char *text, int port, struct sockaddr_storage *out, socklen_t *len) {
  memset(out, 0, sizeof *out);
  struct sockaddr_in *v4 = (struct sockaddr_in *)out;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
  if (inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET; v4->sin_port = htons(port); *len = sizeof *v4; return AF_INET;
  }
  if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6; v6->sin6_port = htons(port); *len = sizeof *v6; return AF_INET6;
  }
  fprintf(stderr, "bad address %s\n", text); exit(2);
}

// Polled, not pause(): a signal between the check and pause() would be waited for forever.
static void wait_for_stop(void) { while (!stopping) usleep(20000); }

static void install_handlers(void) {
  struct sigaction sa; memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;  // no SA_RESTART: blocking calls return EINTR
  sigaction(SIGTERM, &sa, NULL); sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

static int run_tun(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "tun NAME [--tap] [--echo]\n"); return 2; }
  int tap = 0, echo = 0;
  for (int i = 3; i < argc; i++) {
    if (!strcmp(argv[i], "--tap")) tap = 1; else if (!strcmp(argv[i], "--echo")) echo = 1;
  }
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) die("open /dev/net/tun");
  struct ifreq req; memset(&req, 0, sizeof req);
  req.ifr_flags = (tap ? IFF_TAP : IFF_TUN) | IFF_NO_PI;
  strncpy(req.ifr_name, argv[2], IFNAMSIZ - 1);
  if (ioctl(fd, TUNSETIFF, &req) < 0) die("TUNSETIFF");
  printf("ready %s\n", req.ifr_name); fflush(stdout);
  unsigned char packet[65536];
  while (!stopping) {
    ssize_t n = read(fd, packet, sizeof packet);
    if (n < 0) { if (errno == EINTR) continue; die("read tun"); }
    if (!echo || tap || n < 20) continue;
    int version = packet[0] >> 4;
    if (version == 4) {
      unsigned char tmp[4];
      memcpy(tmp, packet + 12, 4); memcpy(packet + 12, packet + 16, 4); memcpy(packet + 16, tmp, 4);
    } else if (version == 6 && n >= 40) {
      unsigned char tmp[16];
      memcpy(tmp, packet + 8, 16); memcpy(packet + 8, packet + 24, 16); memcpy(packet + 24, tmp, 16);
    } else continue;
    // The kernel refuses a packet written into a tun that is down with EIO (tun_get_user), as
    // when the enforcer takes the link down while an echo is on its way: the packet is dropped,
    // as a real peer's would be, and the tun lives on. Exiting here deleted the tun under the
    // test that had just seen it taken down.
    if (write(fd, packet, n) < 0 && errno != EINTR && errno != EIO) die("write tun");
  }
  return 0;
}

static int run_udp_send(int argc, char **argv, int close_early) {
  if (argc < 6) { fprintf(stderr, "udp-send ADDR PORT COUNT SIZE [--gap-us N]\n"); return 2; }
  struct sockaddr_storage to; socklen_t len;
  int family = parse_addr(argv[2], atoi(argv[3]), &to, &len);
  long count = atol(argv[4]); long size = atol(argv[5]); long gap = 0; int hold = 0;
  for (int i = 6; i + 1 < argc; i++) if (!strcmp(argv[i], "--gap-us")) gap = atol(argv[i + 1]);
  for (int i = 6; i < argc; i++) if (!strcmp(argv[i], "--hold")) hold = 1;
  int s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  char *buffer = calloc(1, size > 0 ? size : 1);
  long long sent = 0;
  for (long i = 0; i < count && !stopping; i++) {
    ssize_t n = sendto(s, buffer, size, 0, (struct sockaddr *)&to, len);
    if (n < 0) { if (errno == EINTR) continue; die("sendto"); }
    sent += n;
    if (gap) usleep(gap);
  }
  if (hold) {
    printf("sent %lld\n", sent); fflush(stdout);
    wait_for_stop();
  }
  close(s);
  if (!hold) { printf("sent %lld\n", sent); fflush(stdout); }
  if (close_early) { printf("closed\n"); fflush(stdout); wait_for_stop(); }
  return 0;
}

static int bind_any(int family, int type, int port) {
  int s = socket(family, type | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  int one = 1; setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in6 a; memset(&a, 0, sizeof a);
  a.sin6_family = AF_INET6; a.sin6_port = htons(port); a.sin6_addr = in6addr_any;
  int zero = 0; setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  if (bind(s, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
  return s;
}

static int run_udp_sink(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "udp-sink PORT\n"); return 2; }
  int s = bind_any(AF_INET6, SOCK_DGRAM, atoi(argv[2]));
  printf("ready\n"); fflush(stdout);
  char buffer[65536]; long long bytes = 0, datagrams = 0;
  while (!stopping) {
    ssize_t n = recv(s, buffer, sizeof buffer, 0);
    if (n < 0) { if (errno == EINTR) continue; die("recv"); }
    bytes += n; datagrams++;
  }
  printf("received %lld %lld\n", bytes, datagrams); fflush(stdout);
  return 0;
}

static int run_tcp_send(int argc, char **argv) {
  if (argc < 5) { fprintf(stderr, "tcp-send ADDR PORT BYTES [--rate BPS]\n"); return 2; }
  struct sockaddr_storage to; socklen_t len;
  int family = parse_addr(argv[2], atoi(argv[3]), &to, &len);
  long long total = atoll(argv[4]); double rate = 0; int hold = 0;
  for (int i = 5; i + 1 < argc; i++) if (!strcmp(argv[i], "--rate")) rate = atof(argv[i + 1]);
  for (int i = 5; i < argc; i++) if (!strcmp(argv[i], "--hold")) hold = 1;
  int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  if (connect(s, (struct sockaddr *)&to, len) < 0) die("connect");
  static char buffer[1 << 20];
  long long sent = 0;
  struct timespec start; clock_gettime(CLOCK_MONOTONIC, &start);
  while (sent < total && !stopping) {
    long long chunk = total - sent < (long long)sizeof buffer ? total - sent : (long long)sizeof buffer;
    ssize_t n = send(s, buffer, chunk, 0);
    if (n < 0) { if (errno == EINTR) continue; die("send"); }
    sent += n;
    if (rate > 0) {
      struct timespec now; clock_gettime(CLOCK_MONOTONIC, &now);
      double elapsed = (now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
      double due = sent / rate;
      if (due > elapsed) usleep((useconds_t)((due - elapsed) * 1e6));
    }
  }
  if (hold) {
    // "sent" once the peer acknowledged every byte: nothing is left in flight for a capture.
    int queued = 0;
    while (!stopping && ioctl(s, SIOCOUTQ, &queued) == 0 && queued > 0) usleep(1000);
    printf("sent %lld\n", sent); fflush(stdout);
    wait_for_stop();
  }
  shutdown(s, SHUT_WR);
  char sink[4096]; while (!stopping && recv(s, sink, sizeof sink, 0) > 0) {}
  close(s);
  if (!hold) { printf("sent %lld\n", sent); fflush(stdout); }
  return 0;
}

static int run_tcp_sink(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "tcp-sink PORT\n"); return 2; }
  int s = bind_any(AF_INET6, SOCK_STREAM, atoi(argv[2]));
  if (listen(s, 4) < 0) die("listen");
  printf("ready\n"); fflush(stdout);
  int c = accept(s, NULL, NULL);
  if (c < 0) { if (errno == EINTR) return 0; die("accept"); }
  static char buffer[1 << 20]; long long bytes = 0;
  while (!stopping) {
    ssize_t n = recv(c, buffer, sizeof buffer, 0);
    if (n < 0) { if (errno == EINTR) continue; die("recv"); }
    if (n == 0) break;
    bytes += n;
  }
  close(c);
  printf("received %lld\n", bytes); fflush(stdout);
  return 0;
}

static void hold_until_signal(void) { while (!stopping) pause(); }

static int open_tun(const char *name) {
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) die("open /dev/net/tun");
  struct ifreq req; memset(&req, 0, sizeof req);
  req.ifr_flags = IFF_TUN | IFF_NO_PI;
  strncpy(req.ifr_name, name, IFNAMSIZ - 1);
  if (ioctl(fd, TUNSETIFF, &req) < 0) die("TUNSETIFF");
  return fd;
}

static void unix_address(const char *path, struct sockaddr_un *address) {
  memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  if (strlen(path) >= sizeof address->sun_path) { fprintf(stderr, "socket path too long\n"); exit(2); }
  strcpy(address->sun_path, path);
}

static int run_tun_pass(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "tun-pass NAME SOCKET\n"); return 2; }
  int tun = open_tun(argv[2]);
  struct sockaddr_un address; unix_address(argv[3], &address);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  if (connect(s, (struct sockaddr *)&address, sizeof address) < 0) die("connect");
  char byte = 'T';
  struct iovec io = {.iov_base = &byte, .iov_len = 1};
  union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
  memset(&control, 0, sizeof control);
  struct msghdr message = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = control.space,
                           .msg_controllen = sizeof control.space};
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&message);
  cmsg->cmsg_level = SOL_SOCKET; cmsg->cmsg_type = SCM_RIGHTS; cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cmsg), &tun, sizeof tun);
  if (sendmsg(s, &message, 0) != 1) die("sendmsg");
  printf("sent %s\n", argv[2]); fflush(stdout);
  hold_until_signal();
  return 0;
}

static int run_tun_receive(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "tun-receive SOCKET\n"); return 2; }
  struct sockaddr_un address; unix_address(argv[2], &address);
  unlink(argv[2]);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) die("socket");
  if (bind(s, (struct sockaddr *)&address, sizeof address) < 0) die("bind");
  if (listen(s, 1) < 0) die("listen");
  printf("listening\n"); fflush(stdout);
  int c = accept(s, NULL, NULL);
  if (c < 0) { if (errno == EINTR) return 0; die("accept"); }
  char byte;
  struct iovec io = {.iov_base = &byte, .iov_len = 1};
  union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
  struct msghdr message = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = control.space,
                           .msg_controllen = sizeof control.space};
  if (recvmsg(c, &message, MSG_CMSG_CLOEXEC) != 1) die("recvmsg");
  struct cmsghdr *cmsg = CMSG_FIRSTHDR(&message);
  if (!cmsg || cmsg->cmsg_type != SCM_RIGHTS) { fprintf(stderr, "no descriptor received\n"); return 1; }
  int tun; memcpy(&tun, CMSG_DATA(cmsg), sizeof tun);
  close(c); close(s); unlink(argv[2]);
  printf("ready %d\n", tun); fflush(stdout);
  hold_until_signal();
  return 0;
}

static int run_tun_foreign(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 3; i + 1 < argc; i++) if (!strcmp(argv[i], "--netns")) path = argv[i + 1];
  if (argc < 3 || !path) { fprintf(stderr, "tun-foreign NAME --netns PATH\n"); return 2; }
  int own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  int there = open(path, O_RDONLY | O_CLOEXEC);
  if (own < 0 || there < 0) die("open netns");
  if (setns(there, CLONE_NEWNET) < 0) die("setns there");
  int tun = open_tun(argv[2]);
  if (setns(own, CLONE_NEWNET) < 0) die("setns back");
  close(own); close(there);
  printf("ready %d\n", tun); fflush(stdout);
  hold_until_signal();
  return 0;
}

static int run_hold_fds(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "hold-fds N\n"); return 2; }
  long wanted = atol(argv[2]);
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  int first = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (first < 0) die("open /dev/null");
  long held = 1;
  while (held < wanted) {
    if (fcntl(first, F_DUPFD_CLOEXEC, 0) < 0) break;
    held++;
  }
  printf("ready %ld\n", held); fflush(stdout);
  hold_until_signal();
  return 0;
}

int main(int argc, char **argv) {
  install_handlers();
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int i = 2; i + 1 < argc; i++) {
    if (!strcmp(argv[i], "--comm") && prctl(PR_SET_NAME, argv[i + 1], 0, 0, 0) < 0) die("prctl");
  }
  if (argc < 2) { fprintf(stderr, "usage: vpnstat-testpeer tun|udp-send|udp-sink|tcp-send|tcp-sink|tun-pass|tun-receive|tun-foreign|hold-fds …\n"); return 2; }
  if (!strcmp(argv[1], "tun")) return run_tun(argc, argv);
  if (!strcmp(argv[1], "udp-send")) return run_udp_send(argc, argv, 0);
  if (!strcmp(argv[1], "udp-close-early")) return run_udp_send(argc, argv, 1);
  if (!strcmp(argv[1], "udp-sink")) return run_udp_sink(argc, argv);
  if (!strcmp(argv[1], "tcp-send")) return run_tcp_send(argc, argv);
  if (!strcmp(argv[1], "tcp-sink")) return run_tcp_sink(argc, argv);
  if (!strcmp(argv[1], "tun-pass")) return run_tun_pass(argc, argv);
  if (!strcmp(argv[1], "tun-receive")) return run_tun_receive(argc, argv);
  if (!strcmp(argv[1], "tun-foreign")) return run_tun_foreign(argc, argv);
  if (!strcmp(argv[1], "hold-fds")) return run_hold_fds(argc, argv);
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
