#ifndef CNETLINKFLOOR_H
#define CNETLINKFLOOR_H
#include <stdint.h>
/// One RTM_GETSTATS dump with IFLA_STATS_LINK_64 in plain C, summing rx+tx bytes over every
/// interface: the floor the Swift reader is compared with. Returns the interface count or -errno.
long netlink_floor_sample(int fd, uint64_t *total_bytes);
/// Opens the NETLINK_ROUTE socket the floor uses. Returns the fd or -errno.
int netlink_floor_open(void);
#endif
