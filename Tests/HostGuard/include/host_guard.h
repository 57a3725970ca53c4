#ifndef VPNSTAT_HOST_GUARD_H
#define VPNSTAT_HOST_GUARD_H

// The host's links as the test process found them when it was loaded, one line per link
// ("link INDEX NAME flags …") and per address ("addr NAME FAMILY ADDRESS/PREFIX"), sorted;
// NULL when the guard could not read them.
const char *vpnstat_host_links_at_start(void);

// The same, now; the caller frees it.
char *vpnstat_host_links_now(void);

// Moves the calling thread into a new network namespace (unshare(CLONE_NEWNET)): 0, or an errno.
int vpnstat_enter_new_network_namespace(void);

// The test-process reaper (test_process_reaper.c): its pid, 0 when it could not be started. It
// kills every process carrying VPNSTAT_TEST_PROCESS=<this process's pid> in its environment, and
// removes the network namespaces named vpnst-<pid>-…, once this process has ended.
int vpnstat_test_process_reaper(void);

#endif
