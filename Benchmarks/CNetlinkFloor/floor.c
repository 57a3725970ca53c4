int vpnstat_placeholder(void) { return 0; }
