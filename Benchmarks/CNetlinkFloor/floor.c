// The floor for the netlink reader: the same RTM_GETSTATS dump (IFLA_STATS_LINK_64 only) in the
// plainest C, with the same receive buffer size as vpnstat's NetlinkSocket (256 KiB), so the ratio
// reader / floor shows only what vpnstat's Swift adds on top of the kernel's own work.

#include "CNetlinkFloor.h"
#include "link_request.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

// One buffer for the life of the process, like NetlinkSocket's: allocation is not part of a sample.
static unsigned char floor_buffer[1 << 18] __attribute__((aligned(8)));
static uint32_t floor_sequence;

int netlink_floor_open(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return -errno;
  struct sockaddr_nl local = {.nl_family = AF_NETLINK};
  if (bind(fd, (struct sockaddr *)&local, sizeof local) < 0) {
    int error = errno;
    close(fd);
    return -error;
  }
  return fd;
}

long netlink_floor_sample(int fd, uint64_t *total_bytes) {
  struct {
    struct nlmsghdr header;
    struct if_stats_msg stats;
  } request;
  memset(&request, 0, sizeof request);
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof request.stats);
  request.header.nlmsg_type = RTM_GETSTATS;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = ++floor_sequence;
  request.stats.family = AF_UNSPEC;
  request.stats.filter_mask = IFLA_STATS_FILTER_BIT(IFLA_STATS_LINK_64);

  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  while (sendto(fd, &request, request.header.nlmsg_len, 0, (struct sockaddr *)&kernel,
                sizeof kernel) < 0) {
    if (errno != EINTR) return -errno;
  }

  long interfaces = 0;
  uint64_t total = 0;
  for (;;) {
    ssize_t length = recv(fd, floor_buffer, sizeof floor_buffer, 0);
    if (length < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (length == 0) return -EPROTO;
    int remaining = (int)length;
    for (struct nlmsghdr *message = (struct nlmsghdr *)floor_buffer; NLMSG_OK(message, remaining);
         message = NLMSG_NEXT(message, remaining)) {
      if (message->nlmsg_seq != request.header.nlmsg_seq) continue;
      if (message->nlmsg_type == NLMSG_DONE) {
        *total_bytes = total;
        return interfaces;
      }
      if (message->nlmsg_type == NLMSG_ERROR) {
        const struct nlmsgerr *error = NLMSG_DATA(message);
        if (error->error != 0) return error->error;
        *total_bytes = total;
        return interfaces;
      }
      if (message->nlmsg_type != RTM_NEWSTATS) continue;
      struct rtattr *attribute =
          (struct rtattr *)((unsigned char *)NLMSG_DATA(message) +
                            NLMSG_ALIGN(sizeof(struct if_stats_msg)));
      int attributes_length = (int)message->nlmsg_len - NLMSG_LENGTH(sizeof(struct if_stats_msg));
      for (; RTA_OK(attribute, attributes_length);
           attribute = RTA_NEXT(attribute, attributes_length)) {
        // The kernel's struct may be longer or shorter than this header's: read only the two
        // leading byte counters, as vpnstat does, when they are there.
        if (attribute->rta_type != IFLA_STATS_LINK_64 ||
            RTA_PAYLOAD(attribute) < offsetof(struct rtnl_link_stats64, rx_errors))
          continue;
        uint64_t bytes[2];
        memcpy(bytes, (unsigned char *)RTA_DATA(attribute) +
                          offsetof(struct rtnl_link_stats64, rx_bytes),
               sizeof bytes);
        total += bytes[0] + bytes[1];
        interfaces += 1;
      }
    }
  }
}

// The link-table dump vpnstat's netlink reader makes on its first sample (RTM_GETLINK with
// IFLA_EXT_MASK RTEXT_FILTER_SKIP_STATS, which leaves out IPv6's statistics but not the link's
// IFLA_STATS64), counting the links, reading each one's name and summing its rx+tx bytes, as the
// reader must: that one dump is a new reader's whole first sample.
long netlink_floor_links(int fd, uint64_t *total_bytes) {
  struct floor_link_request request;
  floor_link_request(&request, ++floor_sequence);
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  while (sendto(fd, &request, request.header.nlmsg_len, 0, (struct sockaddr *)&kernel,
                sizeof kernel) < 0) {
    if (errno != EINTR) return -errno;
  }
  long links = 0;
  size_t names = 0;
  uint64_t total = 0;
  for (;;) {
    ssize_t length = recv(fd, floor_buffer, sizeof floor_buffer, 0);
    if (length < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (length == 0) return -EPROTO;
    int remaining = (int)length;
    for (struct nlmsghdr *message = (struct nlmsghdr *)floor_buffer; NLMSG_OK(message, remaining);
         message = NLMSG_NEXT(message, remaining)) {
      if (message->nlmsg_seq != request.header.nlmsg_seq) continue;
      if (message->nlmsg_type == NLMSG_DONE) {
        *total_bytes = total;
        return names > 0 ? links : 0;
      }
      if (message->nlmsg_type == NLMSG_ERROR) {
        const struct nlmsgerr *error = NLMSG_DATA(message);
        *total_bytes = total;
        return error->error != 0 ? error->error : links;
      }
      if (message->nlmsg_type != RTM_NEWLINK) continue;
      struct rtattr *attribute = IFLA_RTA(NLMSG_DATA(message));
      int attributes_length = (int)IFLA_PAYLOAD(message);
      for (; RTA_OK(attribute, attributes_length);
           attribute = RTA_NEXT(attribute, attributes_length)) {
        if (attribute->rta_type == IFLA_IFNAME) names += strnlen(RTA_DATA(attribute), RTA_PAYLOAD(attribute));
        if (attribute->rta_type == IFLA_STATS64 &&
            RTA_PAYLOAD(attribute) >= offsetof(struct rtnl_link_stats64, rx_errors)) {
          uint64_t bytes[2];
          memcpy(bytes, (unsigned char *)RTA_DATA(attribute) +
                            offsetof(struct rtnl_link_stats64, rx_bytes),
                 sizeof bytes);
          total += bytes[0] + bytes[1];
        }
      }
      links += 1;
    }
  }
}
