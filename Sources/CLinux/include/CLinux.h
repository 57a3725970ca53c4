#ifndef VPNSTAT_CLINUX_H
#define VPNSTAT_CLINUX_H

// The kernel interfaces Glibc's Swift overlay does not import: netlink/rtnetlink, generic
// netlink and WireGuard's family, ARPHRD_*, tun ioctls, timerfd, signalfd, extended attributes
// (where POSIX ACLs are). Function-like macros
// and variadic calls are wrapped as static inline functions so Swift can call them.

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/if_link.h>
#include <linux/if_arp.h>
#include <linux/if_tun.h>
#include <linux/genetlink.h>
#include <linux/wireguard.h>
#include <sys/pidfd.h>
#include <sys/eventfd.h>
#include <sys/xattr.h>

static inline uint32_t clinux_nlmsg_align(uint32_t len) { return NLMSG_ALIGN(len); }
static inline uint32_t clinux_rta_align(uint32_t len) { return RTA_ALIGN(len); }
static inline uint32_t clinux_nlmsg_hdrlen(void) { return NLMSG_HDRLEN; }
static inline uint32_t clinux_stats_filter_bit(uint32_t attr) { return IFLA_STATS_FILTER_BIT(attr); }

/// ioctl is variadic in C; these take the one argument form Swift needs.
static inline int clinux_ioctl_ptr(int fd, unsigned long request, void *arg) {
  return ioctl(fd, request, arg);
}
static inline int clinux_ioctl_int(int fd, unsigned long request, int arg) {
  return ioctl(fd, request, arg);
}

/// pipe2 is declared by <unistd.h> only under _GNU_SOURCE.
extern int pipe2(int pipefd[2], int flags);
static inline int clinux_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }

/// Declared by <spawn.h> only under _GNU_SOURCE/__USE_MISC (glibc 2.34+): closes every
/// descriptor from `from` up in the child, after the dup2s.
#include <spawn.h>
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *, int);
static inline int clinux_spawn_closefrom(posix_spawn_file_actions_t *actions, int from) {
  return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

/// A descriptor that becomes readable when the process exits (Linux 5.3+): waiting for a child
/// with a timeout is then one poll, not a loop.
static inline int clinux_pidfd_open(int pid) { return pidfd_open(pid, 0); }

/// O_TMPFILE is defined by <fcntl.h> only under _GNU_SOURCE (020000000 | O_DIRECTORY).
static inline int clinux_o_tmpfile(void) { return 020000000 | 0200000; }

/// O_PATH is defined by <fcntl.h> only under _GNU_SOURCE: a descriptor that locates a file
/// without opening it (no device's open runs, no FIFO waits).
static inline int clinux_o_path(void) { return 010000000; }

/// accept4 is declared by <sys/socket.h> only under _GNU_SOURCE.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
static inline int clinux_accept4(int fd, int flags) { return accept4(fd, NULL, NULL, flags); }

static inline unsigned long clinux_tunsetiff(void) { return TUNSETIFF; }
static inline unsigned long clinux_tungetiff(void) { return TUNGETIFF; }
/// A descriptor of the network namespace the tun's device lives in (Linux 5.2+; needs
/// CAP_NET_ADMIN over that namespace).
static inline unsigned long clinux_tungetdevnetns(void) { return TUNGETDEVNETNS; }

/// A copy of another process's descriptor (Linux 5.6+; needs ptrace rights over it: root).
static inline int clinux_pidfd_getfd(int pidfd, int fd) { return pidfd_getfd(pidfd, fd, 0); }
/// A signal to exactly the process the pidfd names, never to a later one that reused its pid.
static inline int clinux_pidfd_send_signal(int pidfd, int sig) { return pidfd_send_signal(pidfd, sig, NULL, 0); }

/// The pid and user of the process at the other end of a connected AF_UNIX socket, as the
/// kernel recorded them when that end called connect or listen (SO_PEERCRED); -1 with errno on
/// failure. In shim.c: struct ucred is declared only under _GNU_SOURCE.
int clinux_peer_credentials(int fd, int *pid, unsigned int *uid);
static inline unsigned long clinux_tunsetpersist(void) { return TUNSETPERSIST; }

#include <elf.h>
/// One segment of the executable's program headers, where it lies in memory.
struct clinux_segment {
  uintptr_t start;
  uintptr_t end;
  uint32_t type;   // PT_LOAD, PT_GNU_RELRO, …
  uint32_t flags;  // PF_R, PF_W, PF_X
};
/// The executable's own segments (dl_iterate_phdr, which needs _GNU_SOURCE: see shim.c), at
/// most `capacity`: how many were filled in.
int clinux_program_segments(struct clinux_segment *segments, int capacity);
#include <malloc.h>

#endif
