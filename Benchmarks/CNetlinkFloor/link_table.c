// The link table and the per-link counters a recorder keeps, in the plainest C: what
// `sqlite-floor --record` samples every second and saves every minute.

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

static unsigned char table_buffer[1 << 18] __attribute__((aligned(8)));
static uint32_t table_sequence = 1u << 30;

/// Sends the dump request `request` (its header first) and calls `each` with every message of
/// its answer until the dump ends. Returns what the last call returned in all, or -errno.
static long dump(int fd, struct nlmsghdr *request, long (*each)(struct nlmsghdr *, void *), void *context) {
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  while (sendto(fd, request, request->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
    if (errno != EINTR) return -errno;
  }
  long counted = 0;
  for (;;) {
    ssize_t length = recv(fd, table_buffer, sizeof table_buffer, 0);
    if (length < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (length == 0) return -EPROTO;
    int remaining = (int)length;
    for (struct nlmsghdr *message = (struct nlmsghdr *)table_buffer; NLMSG_OK(message, remaining);
         message = NLMSG_NEXT(message, remaining)) {
      if (message->nlmsg_seq != request->nlmsg_seq) continue;
      if (message->nlmsg_type == NLMSG_DONE) return counted;
      if (message->nlmsg_type == NLMSG_ERROR) {
        const struct nlmsgerr *error = NLMSG_DATA(message);
        return error->error != 0 ? error->error : counted;
      }
      counted += each(message, context);
    }
  }
}

struct table { struct floor_link *links; long count; long capacity; long next; };

static long add_link(struct nlmsghdr *message, void *context) {
  struct table *table = context;
  if (message->nlmsg_type != RTM_NEWLINK || table->count == table->capacity) return 0;
  struct floor_link *link = &table->links[table->count];
  memset(link, 0, sizeof *link);
  link->index = ((struct ifinfomsg *)NLMSG_DATA(message))->ifi_index;
  struct rtattr *attribute = IFLA_RTA(NLMSG_DATA(message));
  int attributes_length = (int)IFLA_PAYLOAD(message);
  for (; RTA_OK(attribute, attributes_length); attribute = RTA_NEXT(attribute, attributes_length)) {
    if (attribute->rta_type == IFLA_IFNAME) {
      size_t n = strnlen(RTA_DATA(attribute), RTA_PAYLOAD(attribute));
      link->name_length = (int)(n < sizeof link->name ? n : sizeof link->name);
      memcpy(link->name, RTA_DATA(attribute), (size_t)link->name_length);
    }
  }
  table->count += 1;
  return 1;
}

long netlink_floor_link_table(int fd, struct floor_link *links, long capacity) {
  struct floor_link_request request;
  floor_link_request(&request, ++table_sequence);
  struct table table = {.links = links, .capacity = capacity};
  return dump(fd, &request.header, add_link, &table);
}

static long take_counters(struct nlmsghdr *message, void *context) {
  struct table *table = context;
  if (message->nlmsg_type != RTM_NEWSTATS) return 0;
  const struct if_stats_msg *header = NLMSG_DATA(message);
  // Links come in ifindex order, as the table holds them: the next one, or a search.
  long at = table->next < table->count && table->links[table->next].index == (int)header->ifindex ? table->next : -1;
  for (long i = 0; at < 0 && i < table->count; i++) {
    if (table->links[i].index == (int)header->ifindex) at = i;
  }
  if (at < 0) return 0;
  table->next = at + 1;
  struct rtattr *attribute =
      (struct rtattr *)((unsigned char *)NLMSG_DATA(message) + NLMSG_ALIGN(sizeof(struct if_stats_msg)));
  int attributes_length = (int)message->nlmsg_len - NLMSG_LENGTH(sizeof(struct if_stats_msg));
  for (; RTA_OK(attribute, attributes_length); attribute = RTA_NEXT(attribute, attributes_length)) {
    if (attribute->rta_type != IFLA_STATS_LINK_64 ||
        RTA_PAYLOAD(attribute) < offsetof(struct rtnl_link_stats64, rx_errors))
      continue;
    // rx_packets, tx_packets, rx_bytes, tx_bytes: the struct's first four fields.
    memcpy(table->links[at].counters, RTA_DATA(attribute), sizeof table->links[at].counters);
    return 1;
  }
  return 0;
}

long netlink_floor_sample_into(int fd, struct floor_link *links, long count) {
  struct {
    struct nlmsghdr header;
    struct if_stats_msg stats;
  } request;
  memset(&request, 0, sizeof request);
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof request.stats);
  request.header.nlmsg_type = RTM_GETSTATS;
  request.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  request.header.nlmsg_seq = ++table_sequence;
  request.stats.family = AF_UNSPEC;
  request.stats.filter_mask = IFLA_STATS_FILTER_BIT(IFLA_STATS_LINK_64);
  struct table table = {.links = links, .count = count};
  return dump(fd, &request.header, take_counters, &table);
}
