#ifndef CNETLINKFLOOR_H
#define CNETLINKFLOOR_H
#include <stdint.h>
/// One RTM_GETSTATS dump with IFLA_STATS_LINK_64 in plain C, summing rx+tx bytes over every
/// interface: the floor the Swift reader is compared with. Returns the interface count or -errno.
long netlink_floor_sample(int fd, uint64_t *total_bytes);
/// Opens the NETLINK_ROUTE socket the floor uses. Returns the fd or -errno.
int netlink_floor_open(void);
/// The RTM_GETLINK dump a new netlink reader's first sample is (IPv6's statistics skipped),
/// reading each name and summing each link's IFLA_STATS64 rx+tx bytes. Returns the link count
/// or -errno.
long netlink_floor_links(int fd, uint64_t *total_bytes);
/// One link as a recorder keeps it: its ifindex, its name and its last counters (rx_packets,
/// tx_packets, rx_bytes, tx_bytes: the first four fields of struct rtnl_link_stats64).
struct floor_link {
  int index;
  int name_length;
  char name[16];
  uint64_t counters[4];
};
/// The link table: one RTM_GETLINK dump, each link's ifindex and name (counters zero), in
/// ifindex order. Returns how many links it filled (at most `capacity`) or -errno.
long netlink_floor_link_table(int fd, struct floor_link *links, long capacity);
/// One RTM_GETSTATS dump into `links`: each link's counters, found by ifindex. Returns how many
/// links it updated or -errno.
long netlink_floor_sample_into(int fd, struct floor_link *links, long count);
/// Opens the sysfs reader's files (four counters, operstate, carrier) of every interface under
/// `root` and keeps them. Returns the interface count or -errno.
long sysfs_floor_open(const char *root);
/// Reads every kept file again with pread, summing rx+tx bytes. Returns the interface count.
long sysfs_floor_sample(uint64_t *total_bytes);
/// Closes what sysfs_floor_open opened.
void sysfs_floor_close(void);
/// A packet socket for sending frames out of interfaces. Returns the fd or -errno.
int traffic_mover_open(void);
/// Sends one 60-byte broadcast frame out of the interface `ifindex`. Returns 0 or -errno.
int traffic_mover_send(int fd, int ifindex);
/// Sends `rate` UDP datagrams a second of `payload` bytes to `destination` (dotted IPv4) and
/// `port` for `seconds`, paced by CLOCK_MONOTONIC in batches of up to 32 (sendmmsg). Returns how
/// many were sent, or -errno.
long udp_flood(const char *destination, int port, long rate, double seconds, int payload);
/// Undoes every up of the link `ifindex` as soon as the kernel tells of it, until killed: the
/// floor an enforcer's undo is compared with. Returns -errno when it cannot go on.
int netlink_floor_react(int ifindex);
/// Waits at most `nanoseconds` for `fd` to become readable (ppoll: poll's timeout is whole
/// milliseconds). Returns 1 when readable, 0 when not, -errno on error.
int bench_wait_readable(int fd, int64_t nanoseconds);
#endif
