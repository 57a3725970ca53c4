#ifndef CPCAPFLOOR_H
#define CPCAPFLOOR_H
#include <stdint.h>
/// Reads the capture file at `path` with libpcap alone: pcap_next_ex in a loop, summing each
/// packet's length on the wire. The floor `flows --read`'s parser and aggregator are compared
/// with. Returns the packet count, or -1 when the file cannot be opened (libpcap's message in
/// `error`, PCAP_ERRBUF_SIZE bytes).
long pcap_floor_read(const char *path, uint64_t *wire_bytes, char *error);
#endif
