// CLinux is mostly header-only; what needs _GNU_SOURCE lives here.
#define _GNU_SOURCE
#include <sys/socket.h>

int clinux_peer_credentials(int fd, int *pid, unsigned int *uid) {
  struct ucred credentials;
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
  *pid = credentials.pid;
  *uid = credentials.uid;
  return 0;
}

#include <link.h>
#include <stdint.h>

#include "CLinux.h"

struct clinux_segments {
  struct clinux_segment *segments;
  int capacity;
  int count;
};

static int clinux_collect_segments(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct clinux_segments *found = data;
  for (int i = 0; i < info->dlpi_phnum && found->count < found->capacity; i++) {
    const ElfW(Phdr) *header = &info->dlpi_phdr[i];
    struct clinux_segment *segment = &found->segments[found->count++];
    segment->start = info->dlpi_addr + header->p_vaddr;
    segment->end = segment->start + header->p_memsz;
    segment->type = header->p_type;
    segment->flags = header->p_flags;
  }
  return 1;  // the first object is the program itself
}

int clinux_program_segments(struct clinux_segment *segments, int capacity) {
  struct clinux_segments found = {segments, capacity, 0};
  dl_iterate_phdr(clinux_collect_segments, &found);
  return found.count;
}
