// The floor for the sysfs reader: the same attribute files (the four counters, operstate, and
// carrier) of every interface, opened once and read again with pread, in plain C.

#include "CNetlinkFloor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { floor_max_interfaces = 8192, floor_attributes = 6 };
static int floor_files[floor_max_interfaces][floor_attributes];
static long floor_interfaces;

long sysfs_floor_open(const char *root) {
  static const char *attributes[floor_attributes] = {
      "statistics/rx_bytes", "statistics/tx_bytes", "statistics/rx_packets",
      "statistics/tx_packets", "operstate", "carrier"};
  sysfs_floor_close();
  DIR *directory = opendir(root);
  if (!directory) return -errno;
  struct dirent *entry;
  char path[4096];
  while ((entry = readdir(directory)) && floor_interfaces < floor_max_interfaces) {
    if (entry->d_name[0] == '.') continue;
    for (int a = 0; a < floor_attributes; a++) {
      snprintf(path, sizeof path, "%s/%s/%s", root, entry->d_name, attributes[a]);
      floor_files[floor_interfaces][a] = open(path, O_RDONLY | O_CLOEXEC);
    }
    floor_interfaces += 1;
  }
  closedir(directory);
  return floor_interfaces;
}

long sysfs_floor_sample(uint64_t *total_bytes) {
  char value[64];
  uint64_t total = 0;
  for (long i = 0; i < floor_interfaces; i++) {
    for (int a = 0; a < floor_attributes; a++) {
      if (floor_files[i][a] < 0) continue;
      ssize_t length = pread(floor_files[i][a], value, sizeof value - 1, 0);
      if (length > 0 && a < 2) {
        value[length] = 0;
        total += strtoull(value, NULL, 10);
      }
    }
  }
  *total_bytes = total;
  return floor_interfaces;
}

void sysfs_floor_close(void) {
  for (long i = 0; i < floor_interfaces; i++)
    for (int a = 0; a < floor_attributes; a++)
      if (floor_files[i][a] >= 0) close(floor_files[i][a]);
  floor_interfaces = 0;
}
