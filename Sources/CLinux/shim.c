// CLinux is mostly header-only; what needs _GNU_SOURCE lives here.
#define _GNU_SOURCE
#include <sys/socket.h>

int clinux_peer_credentials(int fd, int *pid, unsigned int *uid) {
  struct ucred credentials;
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
  *pid = credentials.pid;
  *uid = credentials.uid;
  return 0;
}
