#ifndef VPNSTAT_CPCAPLOADER_H
#define VPNSTAT_CPCAPLOADER_H
/// Whether libpcap could be loaded; when not, `message` (if given) receives why.
int vpnstat_pcap_available(const char **message);
#endif
