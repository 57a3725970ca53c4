// The floor for `vpnstat flows --read`: libpcap reading the same file, nothing else. Built
// against CPcapLoader, which loads libpcap on first use as vpnstat does, so both pay the same
// library and differ only in what they do with each packet.

#include "CPcapFloor.h"

#include <pcap/pcap.h>

long pcap_floor_read(const char *path, uint64_t *wire_bytes, char *error) {
  pcap_t *handle = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, error);
  if (handle == NULL) return -1;
  struct pcap_pkthdr *header;
  const u_char *data;
  long count = 0;
  uint64_t total = 0;
  while (pcap_next_ex(handle, &header, &data) == 1) {
    count += 1;
    total += header->len;
  }
  pcap_close(handle);
  *wire_bytes = total;
  return count;
}
