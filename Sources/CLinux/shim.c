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

static int clinux_first_text(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t *range = data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *header = &info->dlpi_phdr[i];
    if (header->p_type == PT_LOAD && (header->p_flags & PF_X) && !(header->p_flags & PF_W)) {
      range[0] = info->dlpi_addr + header->p_vaddr;
      range[1] = range[0] + header->p_filesz;
      break;
    }
  }
  return 1;  // the first object is the program itself
}

int clinux_program_text(uintptr_t *start, uintptr_t *end) {
  uintptr_t range[2] = {0, 0};
  dl_iterate_phdr(clinux_first_text, range);
  if (range[1] <= range[0]) return -1;
  *start = range[0];
  *end = range[1];
  return 0;
}
