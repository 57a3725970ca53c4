// The RTM_GETLINK dump request both link dumps of the floors send (netlink_floor_links,
// netlink_floor_link_table): IFLA_EXT_MASK with RTEXT_FILTER_SKIP_STATS, as vpnstat's reader asks.
#ifndef CNETLINKFLOOR_LINK_REQUEST_H
#define CNETLINKFLOOR_LINK_REQUEST_H
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

struct floor_link_request {
  struct nlmsghdr header;
  struct ifinfomsg link;
  struct rtattr mask_header;
  uint32_t mask;
};

static inline void floor_link_request(struct floor_link_request *request, uint32_t sequence) {
  memset(request, 0, sizeof *request);
  request->header.nlmsg_len = sizeof *request;
  request->header.nlmsg_type = RTM_GETLINK;
  request->header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request->header.nlmsg_seq = sequence;
  request->link.ifi_family = AF_UNSPEC;
  request->mask_header.rta_len = RTA_LENGTH(sizeof(uint32_t));
  request->mask_header.rta_type = IFLA_EXT_MASK;
  request->mask = RTEXT_FILTER_SKIP_STATS;
}
#endif
