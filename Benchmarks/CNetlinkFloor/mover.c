// Traffic for the recorder benchmark: one small frame sent out of an interface through a packet
// socket. On an ifb device it is counted as received (and dropped), so every counter moves.

#include "CNetlinkFloor.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>

int traffic_mover_open(void) {
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  return fd < 0 ? -errno : fd;
}

int traffic_mover_send(int fd, int ifindex) {
  unsigned char frame[60];
  memset(frame, 0, sizeof frame);
  memset(frame, 0xff, 6);
  frame[6] = 0x02;
  frame[12] = 0x08;
  struct sockaddr_ll address;
  memset(&address, 0, sizeof address);
  address.sll_family = AF_PACKET;
  address.sll_ifindex = ifindex;
  address.sll_halen = 6;
  memset(address.sll_addr, 0xff, 6);
  return sendto(fd, frame, sizeof frame, 0, (struct sockaddr *)&address, sizeof address) < 0 ? -errno : 0;
}
