// The floor for the enforcer's undo: the plainest process that can undo an up — one netlink
// socket in RTNLGRP_LINK, and for every notification saying the link is administratively up,
// one RTM_NEWLINK clearing IFF_UP. What an undo measured against it costs beyond this is what
// vpnstat adds; what this costs beyond the in-process floor is two processes waking each other.

#include "CNetlinkFloor.h"

#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

static unsigned char reactor_buffer[1 << 16] __attribute__((aligned(8)));

static int reactor_down(int fd, int ifindex, uint32_t sequence) {
  struct {
    struct nlmsghdr header;
    struct ifinfomsg link;
  } request;
  memset(&request, 0, sizeof request);
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = RTM_NEWLINK;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = sequence;
  request.link.ifi_family = AF_UNSPEC;
  request.link.ifi_index = ifindex;
  request.link.ifi_change = IFF_UP;
  request.link.ifi_flags = 0;
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  while (sendto(fd, &request, sizeof request, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
    if (errno != EINTR) return -errno;
  }
  return 0;
}

int netlink_floor_react(int ifindex) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return -errno;
  struct sockaddr_nl local = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
  if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) {
    int error = errno;
    close(fd);
    return -error;
  }
  uint32_t sequence = 0;
  for (;;) {
    ssize_t length = recv(fd, reactor_buffer, sizeof reactor_buffer, 0);
    if (length < 0) {
      // ENOBUFS: notifications were lost; the next one still says the link's state.
      if (errno == EINTR || errno == ENOBUFS) continue;
      int error = errno;
      close(fd);
      return -error;
    }
    int remaining = (int)length;
    for (struct nlmsghdr *message = (struct nlmsghdr *)reactor_buffer; NLMSG_OK(message, remaining);
         message = NLMSG_NEXT(message, remaining)) {
      if (message->nlmsg_type != RTM_NEWLINK) continue;
      const struct ifinfomsg *link = NLMSG_DATA(message);
      if (link->ifi_index != ifindex || !(link->ifi_flags & IFF_UP)) continue;
      int error = reactor_down(fd, ifindex, ++sequence);
      if (error < 0) {
        close(fd);
        return error;
      }
    }
  }
}
